// KV-cache write: scatters the new tokens' K and V rows into the paged cache.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"

namespace orca::kernels {

// For t < tokens: writes k[t, :] (kv_heads x head_dim elements of `input`: float32 or
// 16-bit; rows k_ld elements apart) into token slot slot_mapping[t] of k_cache, and likewise v. The
// caches hold num_slots / block_size blocks of [kv_heads, block_size, head_dim] elements of `elem`
// (KvCacheShape's layout, engine/backend/backend.h), rounded to nearest even as the CPU
// backend rounds them (float16 saturating at +-65504, NaN kept). A negative slot skips
// its token (padding); a slot >= num_slots is skipped too (the caller validates slots).
// Returns the launch error, if any.
cudaError_t LaunchKvWrite(const void* k, int64_t k_ld, const void* v, int64_t v_ld, int64_t tokens,
                          int32_t kv_heads, int32_t head_dim, int32_t block_size,
                          const int32_t* slot_mapping, ScalarType elem, void* k_cache,
                          void* v_cache, int64_t num_slots, cudaStream_t stream,
                          ScalarType input = ScalarType::kF32);

}  // namespace orca::kernels
