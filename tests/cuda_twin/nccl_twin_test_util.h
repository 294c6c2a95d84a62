// Helpers of the NCCL twin tests: one rank's stream and communicator, device buffers,
// a watchdog that ends a hung test, and rank processes spawned from this binary.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace orca::cuda_twin::testing {

// Ends the process (exit 3) if not destroyed within `limit`: a hang becomes a failure
// with a message instead of a ctest timeout.
class Watchdog {
 public:
  Watchdog(const char* what, std::chrono::seconds limit)
      : thread_([this, what, limit] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: %s hung for %lds\n", what,
                         static_cast<long>(limit.count()));
            std::_Exit(3);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// A device buffer of `count` T on the current device.
template <typename T>
T* DeviceAlloc(size_t count) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, count * sizeof(T)), cudaSuccess);
  return static_cast<T*>(p);
}

// Copies `host` to a new device buffer through `stream` and waits.
template <typename T>
T* Upload(const std::vector<T>& host, cudaStream_t stream) {
  T* d = DeviceAlloc<T>(host.size());
  EXPECT_EQ(
      cudaMemcpyAsync(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream),
      cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return d;
}

template <typename T>
std::vector<T> Download(const T* d, size_t count, cudaStream_t stream) {
  std::vector<T> host(count);
  EXPECT_EQ(cudaMemcpyAsync(host.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
            cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return host;
}

// One rank: its device (current on the calling thread), stream and communicator.
struct RankSession {
  int rank = 0;
  int nranks = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  ncclResult_t init = ncclInternalError;  // ncclCommInitRank's result

  // Joins the group of `id`; check `init` for the outcome.
  RankSession(const ncclUniqueId& id, int rank_, int nranks_, int device_)
      : rank(rank_), nranks(nranks_), device(device_) {
    EXPECT_EQ(cudaSetDevice(device), cudaSuccess);
    EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    init = ncclCommInitRank(&comm, nranks, id, rank);
  }
  ~RankSession() { (void)cudaStreamDestroy(stream); }
};

// ---- Rank processes: this test binary re-executed with a scenario to run. ----

inline constexpr char kChildScenarioEnv[] = "ORCA_NCCL_TWIN_TEST_SCENARIO";

inline std::string IdToHex(const ncclUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (char c : id.internal) {
    hex.push_back(digits[(static_cast<unsigned char>(c) >> 4) & 0xf]);
    hex.push_back(digits[static_cast<unsigned char>(c) & 0xf]);
  }
  return hex;
}

inline bool HexToId(const std::string& hex, ncclUniqueId* id) {
  if (hex.size() != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    id->internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return true;
}

// Starts this binary as rank `rank` of `nranks` running `scenario` (see
// NcclTwinRankProcess.Main); returns its pid, or -1.
inline pid_t SpawnRank(const std::string& scenario, const ncclUniqueId& id, int rank, int nranks) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return -1;
  exe[len] = '\0';
  std::vector<std::string> env_strings = {
      std::string(kChildScenarioEnv) + "=" + scenario,
      "ORCA_NCCL_TWIN_TEST_ID=" + IdToHex(id),
      "ORCA_NCCL_TWIN_TEST_RANK=" + std::to_string(rank),
      "ORCA_NCCL_TWIN_TEST_NRANKS=" + std::to_string(nranks),
  };
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=NcclTwinRankProcess.Main";
  std::string brief = "--gtest_brief=1";  // only failures
  char* argv[] = {exe, filter.data(), brief.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv, envp.data()) != 0) return -1;
  return pid;
}

// Waits for `pid` to exit; returns its exit status, or -1 (after killing it) when it
// is still running after `limit`, or -2 when it died of a signal.
inline int WaitForExit(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    if (r < 0) return -2;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Polls the communicator's async error until it is `want` or `limit` passes; returns
// the last value seen.
inline ncclResult_t AwaitAsyncError(ncclComm_t comm, ncclResult_t want,
                                    std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  ncclResult_t seen = ncclSuccess;
  while (std::chrono::steady_clock::now() < deadline) {
    EXPECT_EQ(ncclCommGetAsyncError(comm, &seen), ncclSuccess);
    if (seen == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return seen;
}

}  // namespace orca::cuda_twin::testing
