// WorkerSupervisor: the local worker processes of `orca serve --tensor-parallel T
// --pipeline-parallel P` (DESIGN.md section 4: the scheduler spawns and supervises its
// workers). Each worker is this same binary re-executed with `worker` arguments; one
// that exits while the supervisor runs is started again after a second (the group
// re-forms when it rejoins). A worker that is alive but no longer answers (stopped,
// hung: it never exits by itself) is killed on request (Kill), and so restarted.
// Workers die with the parent (PR_SET_PDEATHSIG). Kill and exits() are thread-safe.
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

  // Kills worker `index` (its position in Start's list) with SIGKILL, which ends a
  // stopped process too, so that the monitor restarts it; `reason` is logged. Does
  // nothing for an index out of range or a worker between exit and restart.
  void Kill(size_t index, const std::string& reason);

 private:
  WorkerSupervisor() = default;
  absl::StatusOr<pid_t> Spawn(const Worker& w);
  void Monitor();

  std::vector<Worker> workers_;
  absl::Mutex mu_;
  // The running process of each worker; -1 while it is being restarted. Written by
  // Start and the monitor; read under mu_ by Kill (so an exited pid is never signalled).
  std::vector<pid_t> pids_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> exits_{0};
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread monitor_;
};

}  // namespace orca
