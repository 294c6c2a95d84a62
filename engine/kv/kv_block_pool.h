// KvBlockPool: the allocator of the paged KV cache. It hands out block ids in
// [0, num_blocks); the memory behind them lives in the backend (one K and one V
// tensor per layer, see KvCacheShape). Blocks are reference counted so that full
// blocks can be shared between sequences.
//
// Prefix caching: a full block can be registered under the hash of its token prefix.
// When its last reference is released, a registered block is not freed but parked in
// an LRU list of evictable blocks; a later request with the same prefix takes it back
// (Lookup), and allocation evicts the least recently used parked blocks only when the
// free list is empty. Parked blocks count as free for capacity and usage.
//
// BlockTable: one sequence's list of blocks and the number of token slots in use.
//
// Not thread-safe: the Engine owns the pool, and only its engine thread (the scheduler
// and the iteration loop) allocates, releases, looks up or reads the counts. The
// exceptions are num_blocks(), block_size() and BlocksFor(), which read only what is
// fixed at construction: any thread may call them (Engine::Submit checks a request
// against the cache size on the caller's thread).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace orca {

class KvBlockPool {
 public:
  KvBlockPool(int32_t num_blocks, int32_t block_size);

  // Fixed at construction (or by Resize, on the owner's thread); any thread may call
  // these and BlocksFor() while no Resize runs.
  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  // Returns the blocks available to Allocate: free plus evictable cached blocks.
  int32_t num_free() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  int32_t num_cached() const { return static_cast<int32_t>(by_hash_.size()); }
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

  // Registers full block `block` (referenced) as holding `tokens` after the prefix whose
  // chained hash is `hash`. A block or hash already registered is left as is.
  void RegisterCached(int32_t block, uint64_t hash, absl::Span<const int32_t> tokens);
  // Returns a cached block for (`hash`, `tokens`) with one more reference, or -1.
  int32_t LookupCached(uint64_t hash, absl::Span<const int32_t> tokens);

  // Forgets every cached block (their memory was re-initialised, e.g. a serving group
  // restarted): parked blocks become free, blocks in use stay in use unregistered.
  void DropCached();

  // Sets the block count to `num_blocks` (> 0) while no block is in use or cached (a
  // serving group whose ranks size the cache when it first forms: the pool starts with
  // the fewest blocks that sizing guarantees). FailedPrecondition otherwise, changing
  // nothing.
  absl::Status Resize(int32_t num_blocks);

  // Returns the chained hash of a block of `tokens` following a prefix hashed `prev`.
  static uint64_t HashBlock(uint64_t prev, absl::Span<const int32_t> tokens);

 private:
  struct CachedBlock {
    uint64_t hash = 0;
    std::vector<int32_t> tokens;
    bool registered = false;
    std::list<int32_t>::iterator lru_pos;
    bool parked = false;
  };
  void Unregister(int32_t block);

  int32_t num_blocks_;
  int32_t block_size_;
  std::vector<int32_t> free_;  // LIFO: recently freed blocks are reused first
  std::vector<int32_t> refs_;
  std::vector<CachedBlock> cached_;
  std::list<int32_t> lru_;  // parked registered blocks, least recently used first
  std::unordered_map<uint64_t, int32_t> by_hash_;
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
