// WorkerSupervisor: the local worker processes of `orca serve --tensor-parallel T
// --pipeline-parallel P` (DESIGN.md section 4: the scheduler spawns and supervises its
// workers). Each worker is this same binary re-executed with `worker` arguments; one
// that exits while the supervisor runs is started again after a second (the group
// re-forms when it rejoins). Workers die with the parent (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace orca {

class WorkerSupervisor {
 public:
  struct Worker {
    std::string name;               // for logs
    std::vector<std::string> args;  // after the binary: {"worker", "--scheduler", ...}
  };

  static absl::StatusOr<std::unique_ptr<WorkerSupervisor>> Start(std::vector<Worker> workers);
  // Stops every worker: SIGTERM, then SIGKILL after a grace period.
  ~WorkerSupervisor();

  // How many times a worker exited (and was restarted) so far.
  int exits() const { return exits_.load(); }

 private:
  WorkerSupervisor() = default;
  absl::StatusOr<pid_t> Spawn(const Worker& w);
  void Monitor();

  std::vector<Worker> workers_;
  std::vector<pid_t> pids_;
  std::atomic<int> exits_{0};
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread monitor_;
};

}  // namespace orca
