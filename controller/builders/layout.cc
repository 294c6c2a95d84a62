#include "controller/builders/layout.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace orca::controller {

int PodsPerStage(const ParallelismSpec& p) { return p.tensor / p.gpus_per_pod; }
int WorldSize(const ParallelismSpec& p) { return p.tensor * p.pipeline; }
int WorkerPodsPerGroup(const ParallelismSpec& p) { return p.pipeline * PodsPerStage(p); }

std::string SchedulerName(const std::string& name, int group) {
  return absl::StrCat(name, "-g", group, "-scheduler");
}
std::string StageName(const std::string& name, int group, int stage) {
  return absl::StrCat(name, "-g", group, "-s", stage);
}
std::string HeadlessServiceName(const std::string& name, int group) {
  return absl::StrCat(name, "-g", group, "-workers");
}
std::string ConfigMapName(const std::string& name, const std::string& revision) {
  return absl::StrCat(name, "-engine-", revision);
}
std::string SchedulerControlAddress(const std::string& name, const std::string& ns, int group) {
  return absl::StrCat(SchedulerName(name, group), ".", ns, ".svc:", kControlPort);
}
std::string RevisionHash(const InferenceDeploymentSpec& spec) {
  // nlohmann::json objects are std::map-backed, so dump() is canonical.
  std::string canonical = PodTemplateInputs(spec).dump();
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : canonical) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%010x", h & 0xffffffffffull);
}

std::string SchedulerSelector(const std::string& name) {
  return absl::StrCat(kLabelDeployment, "=", name, ",", kLabelRole, "=scheduler");
}

int RestartBackoffSeconds(int base_seconds, int restarts) {
  int64_t s = base_seconds;
  for (int i = 0; i < restarts && s < 3600; ++i) s *= 2;
  return static_cast<int>(std::min<int64_t>(s, 3600));
}

}  // namespace orca::controller
