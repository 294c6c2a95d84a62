#include <climits>
#include <cmath>

#include "kernels/internal/device_utils.cuh"
#include "kernels/sampling.cuh"

namespace orca::kernels {
namespace {

using internal::kFullMask;

constexpr int kThreads = 256;

// Candidate order: larger logit first, then smaller index (the host's comparator).
__device__ __forceinline__ bool Before(float v, int32_t i, float bv, int32_t bi) {
  return v > bv || (v == bv && i < bi);
}

// Returns the block-wide best (value, index) to every thread. `sv`, `si`: 32 entries.
__device__ void BlockBest(float& v, int32_t& i, float* sv, int32_t* si) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float ov = __shfl_xor_sync(kFullMask, v, offset);
    const int32_t oi = __shfl_xor_sync(kFullMask, i, offset);
    if (Before(ov, oi, v, i)) {
      v = ov;
      i = oi;
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // the previous call's readers are done
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = i;
  }
  __syncthreads();
  v = sv[0];
  i = si[0];
  for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) {
    if (Before(sv[w], si[w], v, i)) {
      v = sv[w];
      i = si[w];
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    SampleKernel(const float* __restrict__ logits, int64_t ld, int64_t vocab,
                 const DeviceSamplingParams* __restrict__ params, int32_t* __restrict__ tokens) {
  __shared__ float sv[32];
  __shared__ int32_t si[32];
  __shared__ float cand_val[kMaxSampleCandidates];
  __shared__ int32_t cand_idx[kMaxSampleCandidates];
  __shared__ double prob[kMaxSampleCandidates];

  const int64_t row = blockIdx.x;
  const float* x = logits + row * ld;
  const DeviceSamplingParams p = params[row];
  const int32_t n = static_cast<int32_t>(vocab);

  if (p.temperature < 1e-5f) {
    float bv = -INFINITY;
    int32_t bi = INT_MAX;
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
      if (Before(x[i], i, bv, bi)) {
        bv = x[i];
        bi = i;
      }
    }
    BlockBest(bv, bi, sv, si);
    if (threadIdx.x == 0) tokens[row] = bi == INT_MAX ? 0 : bi;
    return;
  }

  // The k best candidates in order, by repeated selection below the previous one.
  int32_t k = (p.top_k > 0 && p.top_k < kMaxSampleCandidates) ? p.top_k : kMaxSampleCandidates;
  if (k > n) k = n;
  float prev_v = INFINITY;
  int32_t prev_i = -1;
  int32_t found = 0;
  for (; found < k; ++found) {
    float bv = -INFINITY;
    int32_t bi = INT_MAX;
    for (int32_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = x[i];
      const bool below_prev = v < prev_v || (v == prev_v && i > prev_i);
      if (below_prev && Before(v, i, bv, bi)) {
        bv = v;
        bi = i;
      }
    }
    BlockBest(bv, bi, sv, si);
    if (bi == INT_MAX) break;  // the rest are NaN
    if (threadIdx.x == 0) {
      cand_val[found] = bv;
      cand_idx[found] = bi;
    }
    prev_v = bv;
    prev_i = bi;
  }
  if (threadIdx.x != 0) return;
  if (found == 0) {
    tokens[row] = 0;
    return;
  }

  // The host sampler's arithmetic, in the same order, in double.
  const double top = cand_val[0];
  double sum = 0.0;
  for (int32_t i = 0; i < found; ++i) {
    prob[i] = exp((static_cast<double>(cand_val[i]) - top) / p.temperature);
    sum += prob[i];
  }
  int32_t keep = found;
  if (p.top_p < 1.0f) {
    double cum = 0.0;
    for (int32_t i = 0; i < found; ++i) {
      cum += prob[i] / sum;
      if (cum >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const double threshold = p.min_p * prob[0];
    int32_t m = 0;
    while (m < keep && prob[m] >= threshold) ++m;
    keep = m > 1 ? m : 1;
  }
  double kept_sum = 0.0;
  for (int32_t i = 0; i < keep; ++i) kept_sum += prob[i];
  const double u = p.uniform * kept_sum;
  int32_t chosen = keep - 1;
  double cum = 0.0;
  for (int32_t i = 0; i < keep; ++i) {
    cum += prob[i];
    if (u < cum) {
      chosen = i;
      break;
    }
  }
  tokens[row] = cand_idx[chosen];
}

}  // namespace

cudaError_t LaunchSample(const float* logits, int64_t ld, int64_t rows, int64_t vocab,
                         const DeviceSamplingParams* params, int32_t* tokens, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (rows < 0 || rows > INT32_MAX || vocab <= 0 || vocab > INT32_MAX) return cudaErrorInvalidValue;
  SampleKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, ld, vocab, params,
                                                                     tokens);
  return cudaGetLastError();
}

}  // namespace orca::kernels
