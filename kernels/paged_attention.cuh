// Paged causal attention over a flat mixed batch (ORCA selective batching): prefill
// chunks and decode tokens of many sequences in one launch, grouped-query attention,
// per-sequence block tables, online softmax in float32.
//
// Work decomposition: a thread block (8 warps) covers a tile of consecutive query rows
// of one sequence and the query heads that share one KV head, up to 8 x P (row, head)
// pairs with P = 8/4/1 pairs per warp for head_dim <= 64/128/256 (P = 1 when the
// max_query_len hint says no tile needs more, e.g. decode with G <= 8): a decode-only
// batch gets one block per (sequence, KV-head group), a prefill chunk one block per
// 8P/G rows (8 rows at G = 8, head_dim 64), a group wider than 8P several blocks. The
// block walks the tile's causal key range in chunks: all its threads copy the chunk's
// K and V rows of the KV head from the paged cache into shared memory once (float4
// loads when head_dim is a multiple of 4, scalar otherwise; zeros past the range), and
// every pair computes from there. Each warp owns up to P pairs with one key per lane
// for Q.K and one output column per lane for P.V, keeping a running max, sum and
// accumulator per pair (online softmax in float32). When a tile has fewer pairs than
// warps (decode with little or no GQA), `split` warps share a pair, the chunk grows to
// split x 32 keys (one slice per warp), and their partial softmax states are merged in
// shared memory. Shared memory stays within 48 KiB: wide heads with many pairs load V
// into K's buffer once the scores are taken.
//
// Split-KV (flash-decoding): when that grid is too small to fill the device (fewer
// than 2 blocks per SM: decode at small batch, short chunks), each tile's key range is
// also split into chunks of a few hundred keys handled by separate blocks, which write
// their partial (max, sum, unnormalised accumulator) per (row, head) to the workspace;
// a second kernel merges the partials (log-sum-exp) into `out`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

struct PagedAttentionParams {
  // Queries and output: [num_tokens, num_heads * head_dim] of q_type / out_type
  // (float32 or 16-bit; read as float, written rounded to nearest even), rows q_ld /
  // out_ld elements apart.
  const void* q = nullptr;
  int64_t q_ld = 0;
  ScalarType q_type = ScalarType::kF32;
  int64_t num_tokens = 0;
  // Caches: num_blocks blocks of [num_kv_heads, block_size, head_dim] elements of
  // `kv_type`, contiguous (KvCacheShape's layout, engine/backend/backend.h); 16-bit
  // elements are widened to float as they are copied into shared memory.
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  ScalarType kv_type = ScalarType::kF32;
  const int32_t* query_start = nullptr;   // [num_seqs + 1]
  const int32_t* kv_len = nullptr;        // [num_seqs]
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int32_t num_seqs = 0;
  int32_t max_blocks_per_seq = 0;
  int32_t block_size = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;  // at most 256
  float scale = 1.0f;
  void* out = nullptr;
  int64_t out_ld = 0;
  ScalarType out_type = ScalarType::kF32;
  // Host-side hints that steer split-KV, never read on the device: upper bounds on
  // any sequence's query rows and keys (0: unknown; max_kv_len 0 turns split-KV off)
  // and the device's SM count (0: split-KV off). A wrong bound costs speed, not
  // correctness: the last split of a tile always runs to the tile's last key.
  int32_t max_query_len = 0;
  int32_t max_kv_len = 0;
  int32_t num_sms = 0;
};

// The most splits ChoosePagedAttentionSplit makes.
inline constexpr int32_t kPagedAttentionMaxSplits = 32;

// How a launch splits key ranges: num_splits blocks per tile, split z covering keys
// [z * keys_per_split, (z + 1) * keys_per_split) (the last one up to the tile's last
// key). num_splits 1: no split-KV (keys_per_split is then 0).
struct PagedAttentionSplit {
  int32_t num_splits = 1;
  int32_t keys_per_split = 0;
};

// Returns the split LaunchPagedAttention makes for `params` given a large enough
// workspace: none when the single-pass grid already has 2 x num_sms blocks, else
// enough splits to reach about that many blocks, each of at least 32 keys, at most
// 32, and at most 64 x num_sms (row, head) partials in all. Pure host arithmetic.
PagedAttentionSplit ChoosePagedAttentionSplit(const PagedAttentionParams& params);

// Returns the bytes of device workspace a launch over `num_seqs` sequences and
// `num_tokens` query rows needs to split key ranges up to `max_splits` ways (1: never):
// the per-sequence tile offsets, and max_splits x num_tokens x num_heads partial
// states of head_dim + 2 floats when max_splits > 1.
size_t PagedAttentionWorkspaceBytes(int32_t num_seqs, int64_t num_tokens, int32_t num_heads,
                                    int32_t head_dim, int32_t max_splits);

// Returns a workspace size, independent of the batch's token count, with which every
// batch of at most `num_seqs` sequences gets the split ChoosePagedAttentionSplit makes
// on a device of `num_sms` SMs (its bound on partials makes this finite): what a
// backend allocates once, up front.
size_t PagedAttentionFixedWorkspaceBytes(int32_t num_seqs, int32_t head_dim, int32_t num_sms);

// Computes out = softmax(q K^T * scale, causal) V for every query row of the batch:
// sequence i's rows [query_start[i], query_start[i+1]) sit at positions
// kv_len[i] - q_len .. kv_len[i] - 1 and attend to keys 0 .. their own position.
// `workspace` is `workspace_bytes` of device memory (256-byte aligned, as cudaMalloc
// returns), at least PagedAttentionWorkspaceBytes(num_seqs, num_tokens, num_heads,
// head_dim, 1); the launch uses ChoosePagedAttentionSplit's split, or fewer splits if
// the workspace cannot hold their partials. The workspace may be reused by the next
// launch on the same stream. Every row of `out` that belongs to a sequence is written.
// Returns cudaErrorInvalidValue for unsupported shapes (head_dim > 256, num_heads not
// a multiple of num_kv_heads) or a too small workspace, else the launch error.
cudaError_t LaunchPagedAttention(const PagedAttentionParams& params, void* workspace,
                                 size_t workspace_bytes, cudaStream_t stream);

}  // namespace orca::kernels
