// The device side of the CUDA twin: force-included (-include) into every kernel source
// that cu_to_cc.py translated, so CUDA C++ compiles as host C++. Defines the CUDA
// keywords, the built-in variables (threadIdx, blockIdx, blockDim, gridDim) as the
// running fiber's, and the device intrinsics orca's kernels use (barriers, warp
// shuffles and votes, float bit casts, CUDA's min/max overloads). 16-bit types and
// their conversions come from the toolkit's own cuda_fp16.h / cuda_bf16.h, which have
// host implementations. A kernel that needs an intrinsic missing here fails to compile
// on the twin: add it here, with CUDA's documented semantics.
#pragma once

// Before the toolkit's host_defines.h, which keeps definitions it finds.
#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
// cu_to_cc.py rewrites every __shared__ declaration; one it missed fails here.
#define __shared__ orca_cuda_twin_untranslated_shared_declaration

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda_twin/kernel_launch.h"

#define threadIdx (::orca::cuda_twin::ThreadIdx())
#define blockIdx (::orca::cuda_twin::BlockIdx())
#define blockDim (::orca::cuda_twin::BlockDim())
#define gridDim (::orca::cuda_twin::GridDim())
#define warpSize 32

inline void __syncthreads() { ::orca::cuda_twin::SyncThreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::orca::cuda_twin::SyncWarp(mask); }

namespace orca::cuda_twin::device {
template <typename T>
uint64_t Bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffle of a type > 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
T FromBits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
// CUDA's shuffle: lanes are grouped in segments of `width`; a source outside the
// segment wraps within it; a lane reads its own value when the source is out of range
// (down/up).
template <typename T>
T Shuffle(unsigned mask, T v, int src_in_segment, int width) {
  const int lane = LaneId();
  const int base = lane & ~(width - 1);
  const uint64_t* all = WarpExchange(mask, Bits(v));
  return FromBits<T>(all[base + (src_in_segment & (width - 1))]);
}
}  // namespace orca::cuda_twin::device

template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return ::orca::cuda_twin::device::Shuffle(mask, v, src, width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const int lane = ::orca::cuda_twin::LaneId() & (width - 1);
  return ::orca::cuda_twin::device::Shuffle(mask, v, lane ^ lane_mask, width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = ::orca::cuda_twin::LaneId() & (width - 1);
  const int src = lane + static_cast<int>(delta);
  return ::orca::cuda_twin::device::Shuffle(mask, v, src < width ? src : lane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = ::orca::cuda_twin::LaneId() & (width - 1);
  const int src = lane - static_cast<int>(delta);
  return ::orca::cuda_twin::device::Shuffle(mask, v, src >= 0 ? src : lane, width);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  const uint64_t* all = ::orca::cuda_twin::WarpExchange(mask, predicate != 0);
  unsigned out = 0;
  for (int i = 0; i < 32; ++i) {
    if (((mask >> i) & 1u) && all[i]) out |= 1u << i;
  }
  return out;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) == mask;
}

inline float __int_as_float(int i) {
  return ::orca::cuda_twin::device::FromBits<float>(static_cast<uint32_t>(i));
}
inline int __float_as_int(float f) { return static_cast<int>(::orca::cuda_twin::device::Bits(f)); }
inline float __uint_as_float(unsigned int u) {
  return ::orca::cuda_twin::device::FromBits<float>(static_cast<uint32_t>(u));
}
inline unsigned int __float_as_uint(float f) {
  return static_cast<unsigned int>(::orca::cuda_twin::device::Bits(f));
}
inline float __expf(float x) { return std::exp(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline void sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}

// CUDA's min/max: overloaded for mixed arithmetic types (the usual conversions).
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}

// Atomics: the fibers of a block interleave only at barriers, but blocks of kernels on
// other streams run on other host threads.
template <typename T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}
