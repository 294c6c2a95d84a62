// A fixed-size pool of worker threads for data-parallel loops on the CPU.
// ParallelFor may be called from one thread at a time per pool (the engine's
// iteration thread); the pool itself is internally synchronised.
#pragma once

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

  // Runs fn(i) for every i in [0, n), spread over the pool; returns when all are done.
  void ParallelFor(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void WorkerLoop();
  void RunChunks();

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t)>* fn_ = nullptr;  // guarded by mu_
  int64_t n_ = 0;
  int64_t next_ = 0;      // guarded by mu_
  int64_t finished_ = 0;  // guarded by mu_
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace orca
