// A fixed-size pool of worker threads for data-parallel loops on the CPU.
// ParallelFor may be called from one thread at a time per pool (the engine's
// iteration thread); the pool itself is internally synchronised.
//
// A decode iteration hands the pool a hundred short loops in a row (each GEMM, norm and
// attention of each layer). Waking a sleeping worker and being woken at the end costs
// tens of microseconds each through the kernel, so a worker that finishes a loop, and a
// caller that waits for one, first spin for up to kSpinMicros on atomics mirroring the
// state, and sleep on the condition variables only after that. Indices are handed out
// without the lock (a compare-and-swap on the loop's generation and next index): with
// tasks of a few microseconds two threads contending for a mutex for every index spent
// a quarter of a GEMM in it (bfloat16 GEMMs of 1-16 rows with their weights in L3
// 1.04-1.3x faster without; docs/benchmarks.md section 23).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace orca {

class ThreadPool {
 public:
  // Creates `num_threads` workers (0 = hardware concurrency). The calling thread also
  // takes part in ParallelFor, so num_threads - 1 helpers are started.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  static constexpr int kSpinMicros = 50;

  // Runs fn(i) for every i in [0, n), spread over the pool; returns when all are done.
  void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void WorkerLoop();
  // Runs the indices of loop `generation` (fn, n) that no other thread has claimed.
  void RunChunks(uint64_t generation, const std::function<void(int64_t)>* fn, int64_t n);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t)>* fn_ = nullptr;  // guarded by mu_
  int64_t n_ = 0;                                     // guarded by mu_
  uint64_t generation_ = 0;                           // guarded by mu_
  bool stop_ = false;
  // The current loop's generation (its low 32 bits, high half) and next unclaimed index
  // (low half): a thread claims index i of the loop it read under mu_ only while both
  // still match, so a late worker never runs an index of a newer loop with an older fn.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> finished_{0};  // indices of the current loop done
  // A mirror of generation_ for the workers' spin (written under mu_).
  std::atomic<uint64_t> spin_generation_{0};
};

}  // namespace orca
