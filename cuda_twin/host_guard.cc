#include "cuda_twin/host_guard.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cuda_twin/twin_config.h"

namespace orca::cuda_twin {
namespace {

size_t PageRounded(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes == 0 ? page : (bytes + page - 1) / page * page);
}

void OnFault(int, siginfo_t* info, void*) {
  char line[200];
  const int n = std::snprintf(line, sizeof(line),
                              "orca CUDA twin: the host touched memory at %p outside device work "
                              "(a device pointer dereferenced on the host? copy it with "
                              "cudaMemcpy); stack:\n",
                              info->si_addr);
  if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(n));
  void* frames[32];
  backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
  signal(SIGSEGV, SIG_DFL);  // the access repeats and ends the process as a crash
}

class Guard {
 public:
  void* Allocate(size_t bytes, bool poison) {
    const size_t size = PageRounded(bytes);
    absl::MutexLock lock(&mu_);
    InstallHandler();
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (poison) std::memset(p, 0xff, size);
    if (active_ == 0) mprotect(p, size, PROT_NONE);
    regions_[p] = size;
    return p;
  }

  void Free(void* p, size_t bytes) {
    absl::MutexLock lock(&mu_);
    regions_.erase(p);
    munmap(p, PageRounded(bytes));
  }

  void Enter() {
    absl::MutexLock lock(&mu_);
    if (active_++ == 0) ProtectAll(PROT_READ | PROT_WRITE);
  }

  void Leave() {
    absl::MutexLock lock(&mu_);
    if (--active_ == 0) ProtectAll(PROT_NONE);
  }

 private:
  void ProtectAll(int prot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [p, size] : regions_) mprotect(p, size, prot);
  }
  void InstallHandler() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (installed_) return;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnFault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
    installed_ = true;
  }

  absl::Mutex mu_;
  std::map<void*, size_t> regions_ ABSL_GUARDED_BY(mu_);
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  bool installed_ ABSL_GUARDED_BY(mu_) = false;
};

Guard& TheGuard() {
  static Guard* guard = new Guard();  // never destroyed: device threads outlive main
  return *guard;
}

}  // namespace

bool HostGuardEnabled() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  return Config().host_guard;
#endif
}

void* GuardedAllocate(size_t bytes, bool poison) { return TheGuard().Allocate(bytes, poison); }
void GuardedFree(void* ptr, size_t bytes) { TheGuard().Free(ptr, bytes); }

void EnterDeviceWork() {
  if (HostGuardEnabled()) TheGuard().Enter();
}
void LeaveDeviceWork() {
  if (HostGuardEnabled()) TheGuard().Leave();
}

}  // namespace orca::cuda_twin
