#include "engine/kv/kv_block_pool.h"

#include <cassert>

#include "absl/strings/str_cat.h"

namespace orca {

KvBlockPool::KvBlockPool(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size), refs_(num_blocks, 0) {
  free_.reserve(num_blocks);
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

absl::Status KvBlockPool::Allocate(int32_t n, std::vector<int32_t>* out) {
  if (n < 0 || n > num_free()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("KV cache: need ", n, " blocks, ", num_free(), " free of ", num_blocks_));
  }
  for (int32_t i = 0; i < n; ++i) {
    int32_t b = free_.back();
    free_.pop_back();
    refs_[b] = 1;
    out->push_back(b);
  }
  return absl::OkStatus();
}

void KvBlockPool::AddRef(int32_t block) {
  assert(refs_[block] > 0);
  ++refs_[block];
}

void KvBlockPool::Release(absl::Span<const int32_t> blocks) {
  for (int32_t b : blocks) {
    assert(refs_[b] > 0);
    if (--refs_[b] == 0) free_.push_back(b);
  }
}

absl::Status BlockTable::EnsureCapacity(KvBlockPool& pool, int64_t num_tokens) {
  int32_t need = pool.BlocksFor(num_tokens) - static_cast<int32_t>(blocks_.size());
  if (need <= 0) return absl::OkStatus();
  return pool.Allocate(need, &blocks_);
}

void BlockTable::Release(KvBlockPool& pool) {
  pool.Release(blocks_);
  blocks_.clear();
}

}  // namespace orca
