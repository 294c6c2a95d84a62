// KvBlockPool: the allocator of the paged KV cache. It hands out block ids in
// [0, num_blocks); the memory behind them lives in the backend (one K and one V
// tensor per layer, see KvCacheShape). Blocks are reference counted so that full
// blocks can be shared between sequences (prefix caching); a block returns to the free
// list when its last reference is released.
//
// BlockTable: one sequence's list of blocks and the number of token slots in use.
//
// Not thread-safe: owned and used by the scheduler's iteration thread.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace orca {

class KvBlockPool {
 public:
  KvBlockPool(int32_t num_blocks, int32_t block_size);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_used() const { return num_blocks_ - num_free(); }
  // Returns the fraction of blocks in use, in [0, 1].
  double usage() const { return num_blocks_ ? static_cast<double>(num_used()) / num_blocks_ : 0.0; }

  // Returns the number of blocks needed to hold `num_tokens` tokens.
  int32_t BlocksFor(int64_t num_tokens) const {
    return static_cast<int32_t>((num_tokens + block_size_ - 1) / block_size_);
  }

  // Takes `n` free blocks (reference count 1 each) and appends them to `out`.
  // Fails with ResourceExhausted, taking nothing, when fewer than `n` are free.
  absl::Status Allocate(int32_t n, std::vector<int32_t>* out);
  // Adds a reference to an allocated block.
  void AddRef(int32_t block);
  // Drops one reference from each block; blocks reaching zero become free.
  void Release(absl::Span<const int32_t> blocks);
  int32_t ref_count(int32_t block) const { return refs_[block]; }

 private:
  int32_t num_blocks_;
  int32_t block_size_;
  std::vector<int32_t> free_;  // LIFO: recently freed blocks are reused first
  std::vector<int32_t> refs_;
};

class BlockTable {
 public:
  // Ensures capacity for `num_tokens` token slots, allocating blocks from `pool`.
  // Fails with ResourceExhausted (and allocates nothing) when the pool is short.
  absl::Status EnsureCapacity(KvBlockPool& pool, int64_t num_tokens);
  // Releases every block to `pool` and empties the table.
  void Release(KvBlockPool& pool);

  const std::vector<int32_t>& blocks() const { return blocks_; }
  std::vector<int32_t>& mutable_blocks() { return blocks_; }
  // Returns the cache slot of token position `pos` (which must be within capacity).
  int32_t Slot(int64_t pos, int32_t block_size) const {
    return blocks_[pos / block_size] * block_size + static_cast<int32_t>(pos % block_size);
  }

 private:
  std::vector<int32_t> blocks_;
};

}  // namespace orca
