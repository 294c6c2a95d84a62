// The number of CPUs this process may use: the smaller of its affinity mask and its
// cgroup CPU quota (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us / cpu.cfs_period_us,
// rounded up), so a container limited to 4 CPUs on a 64-core node gets 4 threads,
// not 64. Thread-safe.
#pragma once

#include <optional>
#include <string>

namespace orca {

// Returns the CPUs this process may use, at least 1.
int AvailableCpus();

// Returns the CPUs a cgroup quota allows, from the contents of cgroup v2's cpu.max
// ("max 100000" or "150000 100000") or nullopt when unlimited or unreadable. For tests.
std::optional<int> CpusFromCgroupV2(const std::string& cpu_max);
// The same from cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us.
std::optional<int> CpusFromCgroupV1(const std::string& quota_us, const std::string& period_us);

}  // namespace orca
