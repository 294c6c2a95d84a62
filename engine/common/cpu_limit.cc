#include "engine/common/cpu_limit.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace orca {
namespace {

std::string ReadSmallFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<int> Quota(double quota, double period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  return std::max(1, static_cast<int>((quota + period - 1) / period));
}

}  // namespace

std::optional<int> CpusFromCgroupV2(const std::string& cpu_max) {
  std::vector<std::string> parts =
      absl::StrSplit(absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipEmpty());
  double quota = 0, period = 0;
  if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &quota) ||
      !absl::SimpleAtod(parts[1], &period)) {
    return std::nullopt;  // "max 100000" (unlimited) or unreadable
  }
  return Quota(quota, period);
}

std::optional<int> CpusFromCgroupV1(const std::string& quota_us, const std::string& period_us) {
  double quota = 0, period = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(quota_us), &quota) ||
      !absl::SimpleAtod(absl::StripAsciiWhitespace(period_us), &period)) {
    return std::nullopt;
  }
  return Quota(quota, period);  // quota -1: unlimited
}

int AvailableCpus() {
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  std::optional<int> quota = CpusFromCgroupV2(ReadSmallFile("/sys/fs/cgroup/cpu.max"));
  if (!quota) {
    quota = CpusFromCgroupV1(ReadSmallFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                             ReadSmallFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
  }
  if (quota) cpus = std::min(cpus, *quota);
  return std::max(1, cpus);
}

}  // namespace orca
