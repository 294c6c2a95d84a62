// KV-cache write: scatters the new tokens' K and V rows into the paged cache.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace orca::kernels {

// For t < tokens: k_cache[slot_mapping[t], :] = k[t, :] and likewise for v; rows are
// `width` floats (kv_heads * head_dim); k and v rows are k_ld / v_ld floats apart, the
// caches contiguous with `num_slots` rows. A negative slot skips its token (padding);
// a slot >= num_slots is skipped too (the caller validates slots). Returns the launch
// error, if any.
cudaError_t LaunchKvWrite(const float* k, int64_t k_ld, const float* v, int64_t v_ld,
                          int64_t tokens, int64_t width, const int32_t* slot_mapping,
                          float* k_cache, float* v_cache, int64_t num_slots, cudaStream_t stream);

}  // namespace orca::kernels
