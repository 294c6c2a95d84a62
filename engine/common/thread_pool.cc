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

namespace {
constexpr uint64_t kIndexMask = 0xffffffffu;
uint64_t ClaimWord(uint64_t generation) { return (generation & kIndexMask) << 32; }
}  // namespace

void ThreadPool::RunChunks(uint64_t generation, const std::function<void(int64_t)>* fn, int64_t n) {
  const uint64_t mine = ClaimWord(generation);
  while (true) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    do {
      if ((c & ~kIndexMask) != mine || static_cast<int64_t>(c & kIndexMask) >= n) return;
    } while (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel));
    (*fn)(static_cast<int64_t>(c & kIndexMask));
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_all();
    }
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  while (true) {
    SpinUntil([&] { return spin_generation_.load(std::memory_order_acquire) != seen; });
    const std::function<void(int64_t)>* fn;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || (generation_ != seen && fn_ != nullptr); });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      n = n_;
    }
    RunChunks(seen, fn, n);
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (n == 1 || workers_.empty() || n > static_cast<int64_t>(kIndexMask)) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    generation = ++generation_;
    finished_.store(0, std::memory_order_relaxed);
    claim_.store(ClaimWord(generation), std::memory_order_release);
    spin_generation_.store(generation, std::memory_order_release);
  }
  work_cv_.notify_all();
  RunChunks(generation, &fn, n);
  SpinUntil([&] { return finished_.load(std::memory_order_acquire) == n; });
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return finished_.load(std::memory_order_acquire) == n; });
  fn_ = nullptr;
}

}  // namespace orca
