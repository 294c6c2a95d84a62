// Paged causal attention over a flat mixed batch (ORCA selective batching): prefill
// chunks and decode tokens of many sequences in one launch, grouped-query attention,
// per-sequence block tables, online softmax in float32.
//
// Work decomposition: a thread block covers a tile of consecutive query rows of one
// sequence and up to 16 query heads that share one KV head (16 (row, head) pairs in
// all), so a decode-only batch gets one block per (sequence, KV-head group) and a
// prefill chunk one block per few rows. Each warp owns up to 4 pairs and streams the
// causal key range in chunks of 32 keys (one key per lane for Q.K, one output column
// per lane for P.V), keeping a running max, sum and accumulator per pair. When a tile
// has fewer than 4 pairs (decode with little or no GQA), warps split the key range and
// merge their partial softmax states in shared memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::kernels {

struct PagedAttentionParams {
  const float* q = nullptr;  // [num_tokens, num_heads * head_dim], rows q_ld apart
  int64_t q_ld = 0;
  int64_t num_tokens = 0;
  // Caches: [num_blocks * block_size, num_kv_heads * head_dim], contiguous.
  const float* k_cache = nullptr;
  const float* v_cache = nullptr;
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
  float* out = nullptr;  // [num_tokens, num_heads * head_dim], rows out_ld apart
  int64_t out_ld = 0;
};

// Returns the number of int32 workspace elements LaunchPagedAttention needs.
inline int64_t PagedAttentionWorkspaceInts(int32_t num_seqs) { return int64_t{num_seqs} + 1; }

// Computes out = softmax(q K^T * scale, causal) V for every query row of the batch:
// sequence i's rows [query_start[i], query_start[i+1]) sit at positions
// kv_len[i] - q_len .. kv_len[i] - 1 and attend to keys 0 .. their own position.
// `workspace` is device memory of PagedAttentionWorkspaceInts(num_seqs) int32s.
// Every row of `out` that belongs to a sequence is written. Returns
// cudaErrorInvalidValue for unsupported shapes (head_dim > 256, num_heads not a multiple
// of num_kv_heads), else the launch error.
cudaError_t LaunchPagedAttention(const PagedAttentionParams& params, int32_t* workspace,
                                 cudaStream_t stream);

}  // namespace orca::kernels
