// The CUDA twin's kernel executor (see kernel_launch.h): each block's threads are
// Boost.Context fibers on the stream's device thread, scheduled round-robin; a fiber
// runs until it reaches a barrier or exits, and a barrier opens once every thread it
// waits for has reached it.
#include "cuda_twin/kernel_launch.h"

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuda_twin/runtime_internal.h"
#include "cuda_twin/streams.h"
#include "cuda_twin/twin_config.h"

#if defined(__SANITIZE_ADDRESS__)
#define ORCA_TWIN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ORCA_TWIN_ASAN 1
#endif
#endif
#ifdef ORCA_TWIN_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace orca::cuda_twin {

namespace {

thread_local uint3 tls_thread_idx;
thread_local uint3 tls_block_idx;
thread_local dim3 tls_block_dim;
thread_local dim3 tls_grid_dim;

namespace ctx = boost::context;

constexpr size_t kSharedLimit = 48 * 1024;
#ifdef ORCA_TWIN_ASAN
constexpr size_t kStackBytes = 512 * 1024;
#else
constexpr size_t kStackBytes = 128 * 1024;
#endif

// Fiber stacks, reused across blocks and launches by one device thread.
class StackPool {
 public:
  ~StackPool() {
    for (void* s : free_) std::free(s);
  }
  void* Take() {
    if (free_.empty()) return std::aligned_alloc(64, kStackBytes);
    void* s = free_.back();
    free_.pop_back();
    return s;
  }
  void Give(void* s) { free_.push_back(s); }

 private:
  std::vector<void*> free_;
};

thread_local StackPool tls_stacks;
thread_local void* tls_last_stack = nullptr;  // base of the stack allocate() handed out last

// A Boost.Context StackAllocator over the pool.
struct PooledStack {
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    sc.size = kStackBytes;
    tls_last_stack = tls_stacks.Take();
    sc.sp = static_cast<char*>(tls_last_stack) + kStackBytes;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    tls_stacks.Give(static_cast<char*>(sc.sp) - sc.size);
  }
};

enum class State { kRunnable, kAtSync, kAtWarp, kDone };

struct Thread {
  ctx::fiber fiber;  // the fiber, while suspended
  ctx::fiber sink;   // the scheduler, while the fiber runs
  State state = State::kRunnable;
  uint3 idx{0, 0, 0};
  unsigned warp_mask = 0;  // the mask of the exchange it waits at
  uint64_t deposit = 0;    // its value for that exchange
  const uint64_t* result = nullptr;
  void* stack = nullptr;  // base of its stack (for AddressSanitizer's fiber annotations)
#ifdef ORCA_TWIN_ASAN
  void* fake_stack = nullptr;
#endif
};

struct Launch {
  std::string name;
  dim3 grid, block;
  size_t dynamic_smem = 0;
  std::function<void()> body;
  uint64_t order_seed = 0;
};

// The block being run on this device thread.
class Block {
 public:
  Block(const Launch& launch, std::vector<char>& static_smem, std::vector<char>& dynamic_smem)
      : launch_(launch), static_smem_(static_smem), dynamic_smem_(dynamic_smem) {}

  // Runs block `idx` to completion; returns false (with fault() set) on a fault.
  bool Run(uint3 idx);
  const std::string& fault() const { return fault_; }

  void* Dynamic() { return dynamic_smem_.data(); }
  void* StaticAt(const void* site, size_t bytes, size_t align);
  void Sync();
  void SyncWarp(unsigned mask) { (void)Exchange(mask, 0); }
  const uint64_t* Exchange(unsigned mask, uint64_t value);
  int Lane() const { return current_ % 32; }

 private:
  void Yield(State state);
  void Resume(int i);
  void Fault(std::string what);
  // Opens the barriers every waiting thread has reached; false when none can open.
  bool Release();
  std::string Where(int t) const;

  const Launch& launch_;
  std::vector<char>& static_smem_;
  std::vector<char>& dynamic_smem_;
  uint3 block_idx_{0, 0, 0};
  std::vector<Thread> threads_;
  int current_ = -1;
  std::vector<std::pair<const void*, size_t>> sites_;  // static __shared__ offsets
  size_t static_used_ = 0;
  std::vector<std::array<uint64_t, 32>> exchanged_;  // per warp, the last opened exchange
  std::string fault_;
  // The device thread's own stack, where fibers return to (AddressSanitizer annotations).
  const void* scheduler_stack_ = nullptr;
  size_t scheduler_stack_size_ = 0;
};

thread_local Block* tls_block = nullptr;
// The most static shared memory any block on this device thread has used: what is
// poisoned before each block.
thread_local size_t tls_static_high = 0;

Block& Current() {
  if (tls_block == nullptr) {
    std::fprintf(stderr, "orca CUDA twin: a device intrinsic was called outside a kernel\n");
    std::abort();
  }
  return *tls_block;
}

struct FaultUnwind {};  // thrown into a fiber to abandon its block

std::string Dim(dim3 d) { return absl::StrCat("(", d.x, ",", d.y, ",", d.z, ")"); }
std::string Dim(uint3 d) { return absl::StrCat("(", d.x, ",", d.y, ",", d.z, ")"); }

std::string Block::Where(int t) const {
  return absl::StrCat("kernel ", launch_.name, " block ", Dim(block_idx_), " thread ",
                      Dim(threads_[t].idx));
}

void Block::Fault(std::string what) {
  if (fault_.empty()) fault_ = std::move(what);
}

void Block::Yield(State state) {
  Thread& t = threads_[current_];
  t.state = state;
#ifdef ORCA_TWIN_ASAN
  __sanitizer_start_switch_fiber(&t.fake_stack, scheduler_stack_, scheduler_stack_size_);
#endif
  t.sink = std::move(t.sink).resume();
#ifdef ORCA_TWIN_ASAN
  __sanitizer_finish_switch_fiber(t.fake_stack, &scheduler_stack_, &scheduler_stack_size_);
#endif
  if (!fault_.empty()) throw FaultUnwind{};
}

void* Block::StaticAt(const void* site, size_t bytes, size_t align) {
  for (const auto& [s, offset] : sites_) {
    if (s == site) return static_smem_.data() + offset;
  }
  const size_t offset = (static_used_ + align - 1) / align * align;
  if (offset + bytes + launch_.dynamic_smem > kSharedLimit) {
    Fault(absl::StrCat(Where(current_), ": ", offset + bytes, " bytes of static and ",
                       launch_.dynamic_smem,
                       " of dynamic shared memory exceed the 48 KiB a block may use"));
    Yield(State::kDone);
  }
  static_used_ = offset + bytes;
  tls_static_high = std::max(tls_static_high, static_used_);
  sites_.emplace_back(site, offset);
  return static_smem_.data() + offset;
}

void Block::Sync() { Yield(State::kAtSync); }

const uint64_t* Block::Exchange(unsigned mask, uint64_t value) {
  Thread& t = threads_[current_];
  if (((mask >> (current_ % 32)) & 1u) == 0) {
    Fault(absl::StrCat(Where(current_), ": a warp shuffle or vote whose mask 0x", absl::Hex(mask),
                       " leaves out the calling lane"));
    Yield(State::kDone);
  }
  t.warp_mask = mask;
  t.deposit = value;
  Yield(State::kAtWarp);
  return threads_[current_].result;
}

bool Block::Release() {
  const int n = static_cast<int>(threads_.size());
  bool any_waiting = false, all_at_sync = true;
  for (const Thread& t : threads_) {
    if (t.state == State::kDone) continue;
    any_waiting = true;
    if (t.state != State::kAtSync) all_at_sync = false;
  }
  if (!any_waiting) return true;
  if (all_at_sync) {
    for (Thread& t : threads_) {
      if (t.state == State::kAtSync) t.state = State::kRunnable;
    }
    return true;
  }
  bool opened = false;
  for (int w = 0; w * 32 < n; ++w) {
    // The first waiting lane's mask names the lanes of this exchange.
    int first = -1;
    for (int l = w * 32; l < std::min(n, w * 32 + 32); ++l) {
      if (threads_[l].state == State::kAtWarp) {
        first = l;
        break;
      }
    }
    if (first < 0) continue;
    const unsigned mask = threads_[first].warp_mask;
    bool ready = true;
    for (int lane = 0; lane < 32 && ready; ++lane) {
      if (((mask >> lane) & 1u) == 0) continue;
      const int l = w * 32 + lane;
      if (l >= n) {
        Fault(absl::StrCat(Where(first), ": warp shuffle mask 0x", absl::Hex(mask), " names lane ",
                           lane, ", which the block does not have"));
        return false;
      }
      const Thread& t = threads_[l];
      if (t.state == State::kDone) {
        Fault(absl::StrCat(Where(first), ": warp shuffle mask 0x", absl::Hex(mask), " names lane ",
                           lane, ", which has exited"));
        return false;
      }
      if (t.state == State::kAtWarp && t.warp_mask != mask) {
        Fault(absl::StrCat(Where(first), ": lanes of one warp shuffle with different masks (0x",
                           absl::Hex(mask), ", 0x", absl::Hex(t.warp_mask), ")"));
        return false;
      }
      ready = t.state == State::kAtWarp;
    }
    if (!ready) continue;
    auto& values = exchanged_[w];
    for (int lane = 0; lane < 32; ++lane) {
      const int l = w * 32 + lane;
      if (((mask >> lane) & 1u) && l < n) values[lane] = threads_[l].deposit;
    }
    for (int lane = 0; lane < 32; ++lane) {
      const int l = w * 32 + lane;
      if (((mask >> lane) & 1u) == 0 || l >= n) continue;
      threads_[l].state = State::kRunnable;
      threads_[l].result = values.data();
    }
    opened = true;
  }
  if (!opened) {
    int at_sync = 0, at_warp = 0, done = 0;
    for (const Thread& t : threads_) {
      at_sync += t.state == State::kAtSync;
      at_warp += t.state == State::kAtWarp;
      done += t.state == State::kDone;
    }
    Fault(absl::StrCat("kernel ", launch_.name, " block ", Dim(block_idx_), ": deadlock: ", at_sync,
                       " threads wait at __syncthreads, ", at_warp,
                       " at a warp shuffle or __syncwarp, ", done,
                       " have exited (a barrier in divergent code)"));
  }
  return opened;
}

void Block::Resume(int i) {
  Thread& t = threads_[i];
  current_ = i;
  tls_thread_idx = t.idx;
#ifdef ORCA_TWIN_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, t.stack, kStackBytes);
#endif
  t.fiber = std::move(t.fiber).resume();
#ifdef ORCA_TWIN_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

bool Block::Run(uint3 idx) {
  block_idx_ = idx;
  const dim3 b = launch_.block;
  const int n = static_cast<int>(b.x * b.y * b.z);
  threads_.clear();
  threads_.resize(n);
  sites_.clear();
  exchanged_.assign((n + 31) / 32, {});
  fault_.clear();
  if (Config().poison) {
    std::memset(static_smem_.data(), 0xff, tls_static_high);
    if (!dynamic_smem_.empty()) std::memset(dynamic_smem_.data(), 0xff, dynamic_smem_.size());
  }
  static_used_ = 0;
  for (int i = 0; i < n; ++i) {
    Thread& t = threads_[i];
    t.idx = uint3{static_cast<unsigned>(i) % b.x, (static_cast<unsigned>(i) / b.x) % b.y,
                  static_cast<unsigned>(i) / (b.x * b.y)};
    t.fiber = ctx::fiber(std::allocator_arg, PooledStack(), [this, i](ctx::fiber&& sink) {
#ifdef ORCA_TWIN_ASAN
      __sanitizer_finish_switch_fiber(nullptr, &scheduler_stack_, &scheduler_stack_size_);
#endif
      threads_[i].sink = std::move(sink);
      try {
        launch_.body();
      } catch (const FaultUnwind&) {
      }
      threads_[i].state = State::kDone;
#ifdef ORCA_TWIN_ASAN
      __sanitizer_start_switch_fiber(nullptr, scheduler_stack_, scheduler_stack_size_);
#endif
      return std::move(threads_[i].sink);
    });
    t.stack = tls_last_stack;
  }
  tls_block_idx = idx;
  for (;;) {
    for (int i = 0; i < n && fault_.empty(); ++i) {
      if (threads_[i].state == State::kRunnable) Resume(i);
    }
    if (!fault_.empty()) break;
    bool all_done = true;
    for (const Thread& t : threads_) all_done = all_done && t.state == State::kDone;
    if (all_done || !Release()) break;
  }
  if (!fault_.empty()) {
    // Unwind every suspended fiber: each resumes, sees the fault and throws FaultUnwind.
    for (int i = 0; i < n; ++i) {
      if (threads_[i].fiber) Resume(i);
    }
  }
  current_ = -1;
  threads_.clear();
  return fault_.empty();
}

// Runs every block of a launch in a shuffled order.
cudaError_t RunGrid(const Launch& launch) {
  thread_local std::vector<char> static_smem(kSharedLimit, Config().poison ? '\xff' : '\0');
  thread_local std::vector<char> dynamic_smem;
  dynamic_smem.assign(launch.dynamic_smem, 0);
  const uint64_t blocks = uint64_t{launch.grid.x} * launch.grid.y * launch.grid.z;
  std::vector<uint64_t> order(blocks);
  std::iota(order.begin(), order.end(), uint64_t{0});
  std::mt19937_64 rng(launch.order_seed);
  std::shuffle(order.begin(), order.end(), rng);
  tls_grid_dim = launch.grid;
  tls_block_dim = launch.block;
  Block block(launch, static_smem, dynamic_smem);
  tls_block = &block;
  bool ok = true;
  for (uint64_t linear : order) {
    const uint3 idx{static_cast<unsigned>(linear % launch.grid.x),
                    static_cast<unsigned>((linear / launch.grid.x) % launch.grid.y),
                    static_cast<unsigned>(linear / (uint64_t{launch.grid.x} * launch.grid.y))};
    if (!block.Run(idx)) {
      std::fprintf(stderr, "orca CUDA twin: %s\n", block.fault().c_str());
      ok = false;
      break;
    }
  }
  tls_block = nullptr;
  return ok ? cudaSuccess : cudaErrorLaunchFailure;
}

std::atomic<uint64_t> g_launches{0};

}  // namespace

void LaunchKernel(const char* name, dim3 grid, dim3 block, size_t dynamic_smem, cudaStream_t stream,
                  std::function<void()> body) {
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
      grid.z > 65535) {
    std::fprintf(stderr,
                 "orca CUDA twin: launch of %s with grid %s, block %s: invalid configuration\n",
                 name, Dim(grid).c_str(), Dim(block).c_str());
    (void)Fail(cudaErrorInvalidConfiguration);
    return;
  }
  if (dynamic_smem > kSharedLimit) {
    std::fprintf(
        stderr,
        "orca CUDA twin: launch of %s asks for %zu bytes of dynamic shared memory (limit 48 KiB)\n",
        name, dynamic_smem);
    (void)Fail(cudaErrorInvalidValue);
    return;
  }
  auto launch = std::make_shared<Launch>();
  launch->name = name;
  launch->grid = grid;
  launch->block = block;
  launch->dynamic_smem = dynamic_smem;
  launch->body = std::move(body);
  launch->order_seed = Config().seed * 0x9e3779b97f4a7c15ull + g_launches.fetch_add(1);
  const cudaError_t err = Enqueue(stream, [launch] { return RunGrid(*launch); });
  if (err != cudaSuccess) (void)Fail(err);
}

const uint3& ThreadIdx() { return tls_thread_idx; }
const uint3& BlockIdx() { return tls_block_idx; }
const dim3& BlockDim() { return tls_block_dim; }
const dim3& GridDim() { return tls_grid_dim; }

void* DynamicShared() { return Current().Dynamic(); }
void* StaticSharedAt(const void* site, size_t bytes, size_t align) {
  return Current().StaticAt(site, bytes, align);
}
void SyncThreads() { Current().Sync(); }
void SyncWarp(unsigned mask) { Current().SyncWarp(mask); }
const uint64_t* WarpExchange(unsigned mask, uint64_t value) {
  return Current().Exchange(mask, value);
}
int LaneId() { return Current().Lane(); }

}  // namespace orca::cuda_twin
