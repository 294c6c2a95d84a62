#include <cfloat>
#include <climits>
#include <cmath>

#include "kernels/internal/device_utils.cuh"
#include "kernels/sampling.cuh"

namespace orca::kernels {
namespace {

using internal::kFullMask;

// Threads per row. 512 streamed a row fastest on an H200 (2026-11-29: against 256,
// 1.2-1.9x per case; 1024 was faster still for greedy and small cases at a few rows but
// slower for top-p, and for most cases at 256 rows).
constexpr int kThreads = 512;

// Token i's logit as the host's sampler sees it: NaN is never chosen (-inf), +inf is
// the largest float (SanitizeLogits), and a token the row's mask does not allow is -inf.
__device__ __forceinline__ float Logit(const float* __restrict__ x,
                                       const uint32_t* __restrict__ mask, int32_t i) {
  if (mask != nullptr && ((mask[i >> 5] >> (i & 31)) & 1u) == 0) return -INFINITY;
  const float v = x[i];
  if (v != v) return -INFINITY;  // NaN
  return v == INFINITY ? FLT_MAX : v;
}

// Calls f(i, Logit(x, mask, i)) for this thread's share of the tokens i in [begin, end)
// (begin + threadIdx.x, then every blockDim.x), loading kUnroll logits before using any.
// One block streams a whole row, so a loop that waits for each load in turn is bound by
// memory latency (H200: 0.135 ms for a greedy row of 128,256 logits, 3.8 GB/s); with
// eight loads in flight per thread (and 512 threads) the same pass takes 0.044 ms.
constexpr int kUnroll = 8;
template <typename F>
__device__ __forceinline__ void ForEachLogit(const float* __restrict__ x,
                                             const uint32_t* __restrict__ mask, int32_t begin,
                                             int32_t end, F&& f) {
  const int32_t step = static_cast<int32_t>(blockDim.x);
  int32_t i = begin + static_cast<int32_t>(threadIdx.x);
  for (; i + (kUnroll - 1) * step < end; i += kUnroll * step) {
    float v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = Logit(x, mask, i + u * step);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) f(i + u * step, v[u]);
  }
  for (; i < end; i += step) f(i, Logit(x, mask, i));
}

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

// The row's best token (first maximal logit, as the host's Argmax) and its logit, to
// every thread; bi is INT_MAX only for an empty row.
__device__ void RowBest(const float* __restrict__ x, const uint32_t* __restrict__ mask, int32_t n,
                        float* sv, int32_t* si, float& bv, int32_t& bi) {
  bv = -INFINITY;
  bi = INT_MAX;
  ForEachLogit(x, mask, 0, n, [&](int32_t i, float v) {
    if (Before(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  });
  BlockBest(bv, bi, sv, si);
}

// The row's best logit and token to every thread (RowBest); false, with the host's
// choice written to *token, when no token can be drawn (every one banned or NaN: its
// argmax).
__device__ bool DrawableTop(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                            int32_t n, float* sv, int32_t* si, float& bv, int32_t& bi,
                            int32_t* token) {
  RowBest(x, mask, n, sv, si, bv, bi);
  if (bi != INT_MAX && bv != -INFINITY) return true;
  if (threadIdx.x == 0) *token = bi == INT_MAX ? 0 : bi;
  return false;
}

// No truncation: the host's draw over the whole vocabulary in id order. Weights
// exp((x - top) / T) in double; each thread sums a contiguous slice, a scan of the
// slice sums finds the slice where the cumulative weight passes u x total, and that
// slice's thread walks it: the first token whose cumulative weight exceeds the draw
// (past the end by rounding: the last token of positive weight). Sums run in another
// order than the host's single pass, so the two can differ only for a draw within
// rounding (~1e-16 of the total) of a boundary.
__device__ void DrawInIdOrder(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                              int32_t n, const DeviceSamplingParams& p, float* sv, int32_t* si,
                              int32_t* token) {
  __shared__ double slice_sum[kThreads];
  __shared__ int32_t last_positive[kThreads];
  float bv;
  int32_t bi;
  if (!DrawableTop(x, mask, n, sv, si, bv, bi, token)) return;
  const double top = bv;
  const int32_t per = (n + kThreads - 1) / kThreads;
  const int32_t begin = min(n, static_cast<int32_t>(threadIdx.x) * per);
  const int32_t end = min(n, begin + per);
  double sum = 0.0;
  int32_t last = -1;
  for (int32_t i = begin; i < end; ++i) {
    const double w = exp((static_cast<double>(Logit(x, mask, i)) - top) / p.temperature);
    if (w > 0.0) last = i;
    sum += w;
  }
  slice_sum[threadIdx.x] = sum;
  last_positive[threadIdx.x] = last;
  __syncthreads();
  __shared__ int32_t chosen_slice;
  __shared__ double slice_start;
  __shared__ double draw_target;
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int t = 0; t < kThreads; ++t) total += slice_sum[t];
    const double target = p.uniform * total;
    // The last slice of positive weight that starts at or below the target.
    double start = 0.0, chosen_start = 0.0;
    int32_t chosen = -1;
    for (int t = 0; t < kThreads; ++t) {
      if (slice_sum[t] > 0.0 && start <= target) {
        chosen = t;
        chosen_start = start;
      }
      start += slice_sum[t];
    }
    chosen_slice = chosen;
    slice_start = chosen_start;
    draw_target = target;
  }
  __syncthreads();
  if (static_cast<int32_t>(threadIdx.x) != chosen_slice) return;
  const double target = draw_target;
  double cum = slice_start;
  for (int32_t i = begin; i < end; ++i) {
    const double w = exp((static_cast<double>(Logit(x, mask, i)) - top) / p.temperature);
    if (w <= 0.0) continue;
    cum += w;
    if (target < cum) {
      *token = i;
      return;
    }
  }
  *token = last_positive[threadIdx.x];
}

// --- truncation by threshold: top-p / min-p without a small top-k, any top-k --------
//
// The host keeps a prefix of the candidate order (larger logit first, then smaller id)
// and draws from it by inverse CDF in that order. Sorting the vocabulary is what a
// block cannot afford, so prefixes are found digit by digit instead (radix selection):
// a pass over the row counts, or weighs, the tokens under each value of the next 8 bits
// of the logits' order-preserving 32-bit keys (256 bins in shared memory), and the bin
// where the measure reaches the target fixes that digit; four passes find the last key
// in the prefix, and among the tokens tied at it the ids are selected the same way
// (counts only). Only a search's first pass weighs every token it looks at (a double
// exp each, as the host computes them); the later ones weigh one bin's tokens. A target
// that is a share of the whole (top-p's, the draw's) comes from that first pass's bins,
// which hold every token of the set searched. A row costs about a dozen passes over the
// vocabulary (bisection took over a hundred, each with exps; H200, 2026-11-29: 13 ms for
// one top-p row of 128,256 tokens, 1.9 ms now).
//
// Weights are summed in fixed point: each token's weight (at most 1: the top token
// weighs exactly 1) times 2^(62 - bits of the vocabulary size n), truncated to an
// integer, so that the bins' sums do not depend on the order their atomics land in and
// the same logits and draw give the same token every time. Against the host's double
// sums a draw may differ only within the truncation (below n x 2^(bits - 62) of the top
// token's weight: 4e-9 at 128,256 tokens) of a boundary between two tokens.

// The order-preserving key of a logit (never NaN here): a larger logit, a larger key.
__device__ __forceinline__ uint32_t Key(float v) {
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// The logit of a key (keys below Key(-inf) decode to NaN).
__device__ __forceinline__ float FromKey(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// A prefix of the candidate order: the tokens whose key is above `key`, and those at
// `key` with an id up to `last`.
struct Prefix {
  uint32_t key;
  int32_t last;
};
// The whole order: every key is above 0 (NaN is sanitised).
__device__ __forceinline__ Prefix Everything() { return Prefix{0u, INT_MAX}; }

__device__ __forceinline__ bool In(const Prefix& p, uint32_t k, int32_t i) {
  return k > p.key || (k == p.key && i <= p.last);
}

// Whether `a` is a shorter prefix than `b` (of the same order, so a subset).
__device__ __forceinline__ bool Shorter(const Prefix& a, const Prefix& b) {
  return a.key > b.key || (a.key == b.key && a.last < b.last);
}

// The sum of `v` over the block, to every thread, in a fixed order (deterministic for
// doubles too). `scratch`: 32 entries of shared memory.
template <typename T>
__device__ T BlockSumOf(T v, T* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // an earlier call may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total += scratch[w];
  return total;
}

// The bits ids below n need (at least 1, at most 31).
__device__ __forceinline__ int BitsFor(int32_t n) {
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < n) ++bits;
  return bits;
}

// One radix pass's bins (shared memory), and the scan's answer for every thread.
struct RadixBins {
  unsigned int count[256];
  unsigned long long weight[256];
  int digit;                 // the bin chosen (-1: none)
  unsigned long long below;  // the measure before it in the scan's order
  unsigned long long total;  // the measure in every bin (Row::BinsTotal)
};

// What a search's measure must reach: `amount`, or with `fraction` >= 0 that fraction of
// the measure of the whole set searched, rounded up or truncated. The first radix pass
// puts every token of the set in a bin, so their total is that measure, to the last unit
// (fixed point): no pass of its own.
struct Target {
  unsigned long long amount = 0;
  double fraction = -1.0;
  bool round_up = false;

  __device__ unsigned long long Of(unsigned long long total) const {
    const double t = fraction * static_cast<double>(total);
    return static_cast<unsigned long long>(round_up ? ceil(t) : t);
  }
};
__device__ __forceinline__ Target Amount(unsigned long long amount) {
  Target t;
  t.amount = amount;
  return t;
}
__device__ __forceinline__ Target FractionOfTotal(double fraction, bool round_up) {
  Target t;
  t.fraction = fraction;
  t.round_up = round_up;
  return t;
}

// The shortest prefix a search found: `found` false when no prefix reaches the target
// (rounding), `last` an id bound, or the prefix's last token itself when asked for.
struct Found {
  Prefix prefix;
  bool found;
};

// One row's logits with what weighs them: exp((x - top) / T) in double, in fixed point
// (the header above), or 1 per token (counting, for top-k).
struct Row {
  const float* x;
  const uint32_t* mask;
  int32_t n;
  double top;
  double temperature;
  double scale;  // 2^(62 - bits of n)
  RadixBins* bins;

  __device__ double Weight(float v) const {
    return exp((static_cast<double>(v) - top) / temperature);
  }
  __device__ unsigned long long Fixed(float v) const {
    return static_cast<unsigned long long>(Weight(v) * scale);
  }

  // Thread 0 scans the bins (from digit 255 down when `descending`, else from 0 up) for
  // the first non-empty one where `below` plus its measure `reaches`; every thread gets
  // the answer. Every thread must call it.
  template <typename Reaches>
  __device__ void Scan(bool count, bool descending, unsigned long long below,
                       Reaches reaches) const {
    __syncthreads();  // the bins are complete
    if (threadIdx.x == 0) {
      int digit = -1;
      for (int j = 0; j < 256; ++j) {
        const int d = descending ? 255 - j : j;
        if (bins->count[d] == 0) continue;
        const unsigned long long m = count ? bins->count[d] : bins->weight[d];
        if (reaches(below + m)) {
          digit = d;
          break;
        }
        below += m;
      }
      bins->digit = digit;
      bins->below = below;
    }
    __syncthreads();
  }

  // The measure (count, or fixed-point weight) in all the bins, to every thread.
  __device__ unsigned long long BinsTotal(bool count) const {
    __syncthreads();  // the bins are complete
    if (threadIdx.x == 0) {
      unsigned long long total = 0;
      for (int d = 0; d < 256; ++d) total += count ? bins->count[d] : bins->weight[d];
      bins->total = total;
    }
    __syncthreads();
    return bins->total;
  }

  __device__ void ClearBins() const {
    __syncthreads();  // every thread has read the last scan's answer
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
      bins->count[b] = 0;
      bins->weight[b] = 0;
    }
    __syncthreads();
  }

  // The id of the nth (1-based) smallest-id token of `within` at `key`, to every thread
  // (the row must have that many).
  __device__ int32_t NthIdAt(const Prefix& within, uint32_t key, unsigned long long nth) const {
    uint32_t id = 0;
    for (int shift = (BitsFor(n) - 1) / 8 * 8; shift >= 0; shift -= 8) {
      ClearBins();
      // The ids whose bits above this digit are those chosen so far: [id, id + 2^(shift+8)).
      const int64_t span = int64_t{1} << (shift + 8);
      const int32_t end = static_cast<int32_t>(min(static_cast<int64_t>(n), id + span));
      ForEachLogit(x, mask, static_cast<int32_t>(id), end, [&](int32_t i, float v) {
        const uint32_t k = Key(v);
        if (k != key || !In(within, k, i)) return;
        atomicAdd(&bins->count[(static_cast<uint32_t>(i) >> shift) & 255u], 1u);
      });
      Scan(true, false, 0, [&](unsigned long long m) { return m >= nth; });
      if (bins->digit < 0) return min(within.last, n - 1);  // (not that many: unreachable)
      nth -= bins->below;
      id |= static_cast<uint32_t>(bins->digit) << shift;
    }
    return static_cast<int32_t>(id);
  }

  // The shortest prefix of `within` whose measure (count, or fixed-point weight) reaches
  // `goal` (exceeds it when `strict`). With `exact_last` its last id is its last
  // token's; otherwise, when the prefix takes every token tied at its key, an id bound.
  __device__ Found ShortestPrefix(const Prefix& within, bool count, const Target& goal, bool strict,
                                  bool exact_last) const {
    unsigned long long target = goal.amount;
    auto reaches = [&](unsigned long long m) { return strict ? m > target : m >= target; };
    uint32_t key = 0;              // the digits chosen so far
    unsigned long long above = 0;  // the measure of within's tokens above every key with them
    unsigned int tied = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
      ClearBins();
      const uint32_t high = shift == 24 ? 0u : ~0u << (shift + 8);
      ForEachLogit(x, mask, 0, n, [&](int32_t i, float v) {
        const uint32_t k = Key(v);
        if ((k & high) != key || !In(within, k, i)) return;
        const uint32_t d = (k >> shift) & 255u;
        atomicAdd(&bins->count[d], 1u);
        if (!count) atomicAdd(&bins->weight[d], Fixed(v));
      });
      if (shift == 24 && goal.fraction >= 0.0) target = goal.Of(BinsTotal(count));
      Scan(count, true, above, reaches);
      if (bins->digit < 0) return Found{within, false};
      above = bins->below;
      tied = bins->count[bins->digit];
      key |= static_cast<uint32_t>(bins->digit) << shift;
    }
    // The fewest of the tokens tied at `key` (each weighing the same) that reach it.
    const unsigned long long unit = count ? 1ull : Fixed(FromKey(key));
    const unsigned long long gap = target - above;  // above does not reach the target
    unsigned long long need = strict ? gap / unit + 1 : (gap + unit - 1) / unit;
    need = need < 1 ? 1 : (need > tied ? tied : need);
    if (need == tied && !exact_last) {
      return Found{Prefix{key, key == within.key ? min(within.last, n - 1) : n - 1}, true};
    }
    return Found{Prefix{key, NthIdAt(within, key, need)}, true};
  }

  // The last token of `p` (in candidate order) with a positive weight, to every thread;
  // -1 when it has none. `sv`, `si`: 32 entries of shared memory.
  __device__ int32_t LastPositive(const Prefix& p, float* sv, int32_t* si) const {
    // The candidate order reversed: the smaller logit, then the larger id, is "better".
    float bv = INFINITY;
    int32_t bi = -1;
    ForEachLogit(x, mask, 0, n, [&](int32_t i, float v) {
      if (!In(p, Key(v), i) || !(Weight(v) > 0.0)) return;
      if (v < bv || (v == bv && i > bi)) {
        bv = v;
        bi = i;
      }
    });
    // BlockBest keeps the larger value, then the smaller id: negate both.
    float nv = -bv;
    int32_t ni = bi < 0 ? INT_MAX : -bi;
    BlockBest(nv, ni, sv, si);
    return ni == INT_MAX ? -1 : -ni;
  }
};

// 2^(62 - BitsFor(n)): n weights of at most 1 in fixed point sum below 2^62.
__device__ __forceinline__ double FixedScale(int32_t n) {
  return static_cast<double>(1ull << (62 - BitsFor(n)));
}

// A row for counting only (no weights): top-k and logprobs' top N.
__device__ Row CountingRow(const float* x, const uint32_t* mask, int32_t n, RadixBins* bins) {
  return Row{x, mask, n, 0.0, 1.0, 1.0, bins};
}

// A row that weighs its tokens against its top logit `top` at `temperature`.
__device__ Row WeighingRow(const float* x, const uint32_t* mask, int32_t n, float top,
                           float temperature, RadixBins* bins) {
  Row row = CountingRow(x, mask, n, bins);
  row.top = top;
  row.temperature = temperature;
  row.scale = FixedScale(n);
  return row;
}

// Gathers the tokens of `p` (at most `cap`, a power of two up to 1024; more are
// dropped) into val/idx sorted in candidate order, and returns how many to every thread.
// `counter`: one int of shared memory.
__device__ int32_t GatherSorted(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                                int32_t n, const Prefix& p, int32_t cap, float* val, int32_t* idx,
                                int32_t* counter) {
  __syncthreads();  // earlier readers of val / idx / counter are done
  if (threadIdx.x == 0) *counter = 0;
  for (int32_t j = threadIdx.x; j < cap; j += blockDim.x) {
    val[j] = -INFINITY;  // after every real token (their ids are below INT_MAX)
    idx[j] = INT_MAX;
  }
  __syncthreads();
  ForEachLogit(x, mask, 0, n, [&](int32_t i, float v) {
    if (!In(p, Key(v), i)) return;
    const int32_t slot = atomicAdd(counter, 1);
    if (slot < cap) {
      val[slot] = v;
      idx[slot] = i;
    }
  });
  __syncthreads();
  const int32_t found = min(*counter, cap);
  int32_t size = 1;
  while (size < found) size <<= 1;
  // Bitonic sort of the first `size` entries: "before" in candidate order goes first.
  for (int32_t block = 2; block <= size; block <<= 1) {
    for (int32_t stride = block >> 1; stride > 0; stride >>= 1) {
      for (int32_t t = threadIdx.x; t < size / 2; t += blockDim.x) {
        const int32_t i = 2 * t - (t & (stride - 1)), j = i + stride;
        const bool first_is_before = Before(val[i], idx[i], val[j], idx[j]);
        if (((i & block) == 0) != first_is_before) {
          const float tv = val[i];
          val[i] = val[j];
          val[j] = tv;
          const int32_t ti = idx[i];
          idx[i] = idx[j];
          idx[j] = ti;
        }
      }
      __syncthreads();
    }
  }
  return found;
}

// Top-k (count), min-p and top-p as the host applies them, then the inverse-CDF draw,
// all on prefixes found by radix selection.
__device__ void DrawByThreshold(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                                int32_t n, const DeviceSamplingParams& p, float* sv, int32_t* si,
                                int32_t* token) {
  __shared__ RadixBins bins;
  float bv;
  int32_t bi;
  if (!DrawableTop(x, mask, n, sv, si, bv, bi, token)) return;
  const Row row = WeighingRow(x, mask, n, bv, p.temperature, &bins);
  Prefix candidates = Everything();
  if (p.top_k > 0 && p.top_k < n) {
    candidates = row.ShortestPrefix(Everything(), true,
                                    Amount(static_cast<unsigned long long>(p.top_k)), false, false)
                     .prefix;
  }
  Prefix kept = candidates;
  if (p.min_p > 0.0f) {
    // The tokens weighing at least min_p (the top one weighs 1): the keys from the
    // smallest whose logit weighs that much.
    const double threshold = fmin(1.0, static_cast<double>(p.min_p));
    uint64_t lo = 0, hi = Key(bv);  // hi weighs enough; lo does not (or decodes to NaN)
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (row.Weight(FromKey(static_cast<uint32_t>(mid))) >= threshold) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    const Prefix min_p{static_cast<uint32_t>(hi), INT_MAX};
    if (Shorter(min_p, kept)) kept = min_p;
  }
  if (p.top_p < 1.0f) {
    // The fewest candidates weighing top_p of them all (rounded up).
    const Found nucleus = row.ShortestPrefix(
        candidates, false, FractionOfTotal(static_cast<double>(p.top_p), true), false, false);
    if (nucleus.found && Shorter(nucleus.prefix, kept)) kept = nucleus.prefix;
  }
  // The first token whose cumulative weight exceeds the draw (u x the kept weight): the
  // last of the shortest prefix that weighs more (none, by rounding: the last positive
  // one).
  const Found drawn =
      row.ShortestPrefix(kept, false, FractionOfTotal(p.uniform, false), true, true);
  const int32_t t = drawn.found ? drawn.prefix.last : row.LastPositive(kept, sv, si);
  if (threadIdx.x == 0) *token = t >= 0 ? t : bi;
}

// The row's logprobs (see the header): log-softmax of the processed logits, as the
// host's LogSoftmaxAt computes it (max, then the sum of exp in double), for the drawn
// token `chosen` and the top `top_n` (found by radix selection, then sorted).
__device__ void WriteLogprobs(const float* __restrict__ x, const uint32_t* __restrict__ mask,
                              int32_t n, int32_t chosen, int32_t top_n, float* sv, int32_t* si,
                              DeviceRowLogprobs* out) {
  __shared__ double scratch[32];
  __shared__ RadixBins bins;
  __shared__ float top_val[32];
  __shared__ int32_t top_idx[32];
  __shared__ int32_t counter;
  static_assert(kMaxDeviceLogprobs <= 32, "top logprobs are gathered into 32 entries");
  float m;
  int32_t mi;
  RowBest(x, mask, n, sv, si, m, mi);
  double z = 0.0;
  ForEachLogit(x, mask, 0, n, [&](int32_t, float v) { z += exp(static_cast<double>(v) - m); });
  const double log_z = log(BlockSumOf(z, scratch));
  auto logprob = [&](float v) { return static_cast<float>(static_cast<double>(v) - m - log_z); };
  if (threadIdx.x == 0) out->logprob = logprob(Logit(x, mask, chosen));
  top_n = min(min(top_n, kMaxDeviceLogprobs), n);
  if (top_n <= 0) return;
  const Row counting = CountingRow(x, mask, n, &bins);
  const Prefix best =
      top_n < n ? counting
                      .ShortestPrefix(Everything(), true,
                                      Amount(static_cast<unsigned long long>(top_n)), false, false)
                      .prefix
                : Everything();
  GatherSorted(x, mask, n, best, 32, top_val, top_idx, &counter);
  if (threadIdx.x != 0) return;
  for (int32_t k = 0; k < top_n; ++k) {
    out->top_ids[k] = top_idx[k];
    out->top_logprobs[k] = logprob(top_val[k]);
  }
}

// Draws one row's token into *token (thread 0 writes it).
__device__ void DrawRow(const float* __restrict__ x, const uint32_t* __restrict__ mask, int32_t n,
                        const DeviceSamplingParams& p, float* sv, int32_t* si, int32_t* token) {
  __shared__ float cand_val[kMaxSampleCandidates];
  __shared__ int32_t cand_idx[kMaxSampleCandidates];
  __shared__ double prob[kMaxSampleCandidates];

  if (p.temperature < 1e-5f) {
    float bv;
    int32_t bi;
    RowBest(x, mask, n, sv, si, bv, bi);
    if (threadIdx.x == 0) *token = bi == INT_MAX ? 0 : bi;
    return;
  }
  if ((p.top_k <= 0 || p.top_k >= n) && p.top_p >= 1.0f && p.min_p <= 0.0f) {
    DrawInIdOrder(x, mask, n, p, sv, si, token);
    return;
  }

  // A large top-k, or top-p / min-p alone: prefixes by radix selection.
  if (p.top_k <= 0 || p.top_k > kMaxSampleCandidates) {
    DrawByThreshold(x, mask, n, p, sv, si, token);
    return;
  }

  // The k best candidates, found by radix selection and sorted in candidate order (the
  // host's arithmetic in the same order follows, so the same draw to the last bit).
  __shared__ RadixBins bins;
  __shared__ int32_t counter;
  const int32_t k = min(p.top_k, n);
  const Row counting = CountingRow(x, mask, n, &bins);
  const Prefix best =
      k < n ? counting
                  .ShortestPrefix(Everything(), true, Amount(static_cast<unsigned long long>(k)),
                                  false, false)
                  .prefix
            : Everything();
  const int32_t found =
      GatherSorted(x, mask, n, best, kMaxSampleCandidates, cand_val, cand_idx, &counter);
  if (threadIdx.x != 0) return;
  if (found == 0) {
    *token = 0;
    return;
  }
  if (cand_val[0] == -INFINITY) {  // every token masked or NaN: the host's argmax
    *token = cand_idx[0];
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
  *token = cand_idx[chosen];
}

// Applies each row's edits to its logits in place (distinct tokens: no two threads
// touch one logit).
__global__ void __launch_bounds__(kThreads)
    EditKernel(float* __restrict__ logits, int64_t ld, int64_t vocab,
               const DeviceSamplingParams* __restrict__ params,
               const DeviceLogitEdit* __restrict__ edits) {
  const int64_t row = blockIdx.x;
  const DeviceSamplingParams p = params[row];
  float* x = logits + row * ld;
  for (int32_t e = p.edits_begin + static_cast<int32_t>(threadIdx.x); e < p.edits_end;
       e += blockDim.x) {
    const DeviceLogitEdit d = edits[e];
    if (d.token < 0 || d.token >= vocab) continue;
    float v = x[d.token];
    if (v != v) v = -INFINITY;  // the host sanitises before it edits
    if (v == INFINITY) v = FLT_MAX;
    if (d.ops & kEditBias) v += d.bias;
    if (d.ops & kEditSubtract) v -= d.subtract;
    if (d.ops & kEditRepeat) v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
    x[d.token] = v;
  }
}

__global__ void __launch_bounds__(kThreads)
    SampleKernel(const float* __restrict__ logits, int64_t ld, int64_t vocab,
                 const DeviceSamplingParams* __restrict__ params,
                 const uint32_t* __restrict__ masks, int32_t* __restrict__ tokens,
                 DeviceRowLogprobs* __restrict__ logprobs) {
  __shared__ float sv[32];
  __shared__ int32_t si[32];
  const int64_t row = blockIdx.x;
  const float* x = logits + row * ld;
  const DeviceSamplingParams p = params[row];
  const int32_t n = static_cast<int32_t>(vocab);
  const uint32_t* mask =
      p.mask_row >= 0 && masks != nullptr ? masks + p.mask_row * ((vocab + 31) / 32) : nullptr;
  DrawRow(x, mask, n, p, sv, si, tokens + row);
  if (logprobs == nullptr || p.logprobs < 0) return;  // the same for the whole block
  __syncthreads();                                    // thread 0's token is visible to the block
  WriteLogprobs(x, mask, n, tokens[row], p.logprobs, sv, si, logprobs + row);
}

}  // namespace

cudaError_t LaunchSample(float* logits, int64_t ld, int64_t rows, int64_t vocab,
                         const DeviceSamplingParams* params, const uint32_t* masks,
                         const DeviceLogitEdit* edits, int32_t* tokens, DeviceRowLogprobs* logprobs,
                         cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (rows < 0 || rows > INT32_MAX || vocab <= 0 || vocab > INT32_MAX) return cudaErrorInvalidValue;
  if (edits != nullptr) {
    EditKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, ld, vocab, params,
                                                                     edits);
  }
  SampleKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, ld, vocab, params,
                                                                     masks, tokens, logprobs);
  return cudaGetLastError();
}

}  // namespace orca::kernels
