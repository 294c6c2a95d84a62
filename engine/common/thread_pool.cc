#include "engine/common/thread_pool.h"

#include <chrono>

namespace orca {
namespace {

// Spins until done() or kSpinMicros have passed; returns done().
template <typename Done>
bool SpinUntil(const Done& done) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  while (!done()) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() > deadline) return done();
  }
  return true;
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::thread::hardware_concurrency());
  if (num_threads <= 0) num_threads = 1;
  num_threads_ = num_threads;
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunChunks() {
  std::unique_lock<std::mutex> lock(mu_);
  while (fn_ != nullptr && next_ < n_) {
    int64_t i = next_++;
    const auto* fn = fn_;
    lock.unlock();
    (*fn)(i);
    lock.lock();
    spin_finished_.store(++finished_, std::memory_order_release);
    if (finished_ == n_) done_cv_.notify_all();
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    SpinUntil([&] { return spin_generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && fn_ != nullptr); });
      if (stop_) return;
      seen = generation_;
    }
    RunChunks();
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (n == 1 || workers_.empty()) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    finished_ = 0;
    spin_finished_.store(0, std::memory_order_relaxed);
    spin_generation_.store(++generation_, std::memory_order_release);
  }
  work_cv_.notify_all();
  RunChunks();
  SpinUntil([&] { return spin_finished_.load(std::memory_order_acquire) == n; });
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return finished_ == n_; });
  fn_ = nullptr;
}

}  // namespace orca
