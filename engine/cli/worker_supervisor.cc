#include "engine/cli/worker_supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/common/log.h"

namespace orca {

absl::StatusOr<pid_t> WorkerSupervisor::Spawn(const Worker& w) {
  std::vector<std::string> args = w.args;
  args.insert(args.begin(), "orca");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  ORCA_LOG(INFO) << "started " << w.name << " (pid " << pid << ")";
  return pid;
}

absl::StatusOr<std::unique_ptr<WorkerSupervisor>> WorkerSupervisor::Start(
    std::vector<Worker> workers) {
  auto s = std::unique_ptr<WorkerSupervisor>(new WorkerSupervisor());
  s->workers_ = std::move(workers);
  for (const Worker& w : s->workers_) {
    absl::StatusOr<pid_t> pid = s->Spawn(w);
    if (!pid.ok()) return pid.status();  // the destructor stops those already started
    absl::MutexLock lock(&s->mu_);
    s->pids_.push_back(*pid);
  }
  s->monitor_ = std::thread([p = s.get()] { p->Monitor(); });
  return s;
}

void WorkerSupervisor::Monitor() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopped), absl::Milliseconds(200))) return;
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      int status = 0;
      {
        // Reaped and marked under the lock, so Kill never signals a pid that is gone.
        absl::MutexLock lock(&mu_);
        if (pids_[i] <= 0 || waitpid(pids_[i], &status, WNOHANG) != pids_[i]) continue;
        ++exits_;
        ORCA_LOG(WARNING) << workers_[i].name << " (pid " << pids_[i] << ") "
                          << (WIFSIGNALED(status)
                                  ? absl::StrCat("was killed by signal ", WTERMSIG(status))
                                  : absl::StrCat("exited with status ", WEXITSTATUS(status)))
                          << "; restarting it";
        pids_[i] = -1;
      }
      absl::SleepFor(absl::Seconds(1));
      absl::StatusOr<pid_t> pid = Spawn(workers_[i]);
      {
        absl::MutexLock lock(&mu_);
        pids_[i] = pid.ok() ? *pid : -1;
      }
      if (!pid.ok()) {
        ORCA_LOG(ERROR) << "cannot restart " << workers_[i].name << ": " << pid.status();
      }
    }
  }
}

void WorkerSupervisor::Kill(size_t index, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (index >= pids_.size() || pids_[index] <= 0) return;
  ORCA_LOG(WARNING) << "killing " << workers_[index].name << " (pid " << pids_[index]
                    << ") to restart it: " << reason;
  kill(pids_[index], SIGKILL);
}

WorkerSupervisor::~WorkerSupervisor() {
  std::vector<pid_t> pids;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (monitor_.joinable()) monitor_.join();
  {
    absl::MutexLock lock(&mu_);
    pids = pids_;
  }
  for (pid_t pid : pids) {
    if (pid > 0) kill(pid, SIGTERM);
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (pid_t pid : pids) {
    if (pid <= 0) continue;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (absl::Now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
}

}  // namespace orca
