// A minimal host emulation of the CUDA programming model, enough for orca's kernels:
// thread/block indices as thread-locals, one host thread per CUDA thread, barriers for
// __syncthreads and for warp shuffles, static storage for __shared__ (blocks run one at
// a time). For tests/kernels/emulation only.
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

typedef int cudaError_t;
constexpr cudaError_t cudaSuccess = 0;
constexpr cudaError_t cudaErrorInvalidValue = 1;
typedef struct CUstream_st* cudaStream_t;
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct uint3e {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local uint3e threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(x)
#define __shared__ static

struct float4 {
  float x, y, z, w;
};

namespace emu {
struct Warp {
  std::unique_ptr<std::barrier<>> bar;
  uint64_t slot[32];
};
struct Block {
  std::unique_ptr<std::barrier<>> bar;
  std::vector<Warp> warps;
};
inline Block* g_block = nullptr;
alignas(16) inline char g_dyn_smem[1 << 20];

inline void Launch(dim3 grid, dim3 block, const std::function<void()>& body) {
  gridDim = grid;
  blockDim = block;
  const unsigned n = block.x * block.y * block.z;
  for (unsigned by = 0; by < grid.y; ++by) {
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      Block b;
      b.bar = std::make_unique<std::barrier<>>(n);
      b.warps.resize((n + 31) / 32);
      for (unsigned w = 0; w < b.warps.size(); ++w)
        b.warps[w].bar = std::make_unique<std::barrier<>>(std::min(32u, n - 32 * w));
      g_block = &b;
      std::memset(g_dyn_smem, 0xff, 65536);  // poison shared memory
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < n; ++t) {
        threads.emplace_back([&, t] {
          threadIdx.x = t;
          threadIdx.y = 0;
          threadIdx.z = 0;
          blockIdx.x = bx;
          blockIdx.y = by;
          blockIdx.z = 0;
          body();
          b.bar->arrive_and_drop();
          b.warps[t / 32].bar->arrive_and_drop();
        });
      }
      for (auto& th : threads) th.join();
    }
  }
}
template <typename T>
T Shfl(T v, int src) {
  static_assert(sizeof(T) <= 8);
  Warp& w = g_block->warps[threadIdx.x / 32];
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  w.slot[threadIdx.x % 32] = bits;
  w.bar->arrive_and_wait();
  uint64_t got = w.slot[src & 31];
  w.bar->arrive_and_wait();
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}
}  // namespace emu

inline void __syncthreads() { emu::g_block->bar->arrive_and_wait(); }
template <typename T>
T __shfl_sync(unsigned, T v, int src) {
  return emu::Shfl(v, src);
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int m) {
  return emu::Shfl(v, (int)(threadIdx.x % 32) ^ m);
}
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
using std::max;
using std::min;
inline void sincos(double x, double* s, double* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
#include <math.h>
