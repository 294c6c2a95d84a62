#include "engine/kv/kv_block_pool.h"

#include <algorithm>
#include <cassert>

#include "absl/strings/str_cat.h"

namespace orca {

KvBlockPool::KvBlockPool(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size), refs_(num_blocks, 0), cached_(num_blocks) {
  free_.reserve(num_blocks);
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

absl::Status KvBlockPool::Resize(int32_t num_blocks) {
  if (num_blocks <= 0 || num_used() > 0 || num_cached() > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("KV cache: cannot resize from ", num_blocks_, " to ", num_blocks,
                     " blocks with ", num_used(), " in use and ", num_cached(), " cached"));
  }
  *this = KvBlockPool(num_blocks, block_size_);
  return absl::OkStatus();
}

absl::Status KvBlockPool::Allocate(int32_t n, std::vector<int32_t>* out) {
  if (n < 0 || n > num_free()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("KV cache: need ", n, " blocks, ", num_free(), " free of ", num_blocks_));
  }
  for (int32_t i = 0; i < n; ++i) {
    int32_t b;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {  // evict the least recently used cached block
      b = lru_.front();
      lru_.pop_front();
      cached_[b].parked = false;
      Unregister(b);
    }
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
    if (--refs_[b] > 0) continue;
    CachedBlock& c = cached_[b];
    if (c.registered) {
      c.lru_pos = lru_.insert(lru_.end(), b);
      c.parked = true;
    } else {
      free_.push_back(b);
    }
  }
}

void KvBlockPool::RegisterCached(int32_t block, uint64_t hash, absl::Span<const int32_t> tokens) {
  CachedBlock& c = cached_[block];
  if (c.registered || by_hash_.count(hash)) return;
  c.registered = true;
  c.hash = hash;
  c.tokens.assign(tokens.begin(), tokens.end());
  by_hash_[hash] = block;
}

int32_t KvBlockPool::LookupCached(uint64_t hash, absl::Span<const int32_t> tokens) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return -1;
  int32_t b = it->second;
  CachedBlock& c = cached_[b];
  if (c.tokens.size() != tokens.size() ||
      !std::equal(tokens.begin(), tokens.end(), c.tokens.begin())) {
    return -1;  // a hash collision: treat as a miss
  }
  if (c.parked) {
    lru_.erase(c.lru_pos);
    c.parked = false;
    refs_[b] = 1;
  } else {
    ++refs_[b];
  }
  return b;
}

void KvBlockPool::DropCached() {
  for (int32_t b : lru_) {
    cached_[b].parked = false;
    free_.push_back(b);
  }
  lru_.clear();
  for (int32_t b = 0; b < num_blocks_; ++b) Unregister(b);
}

void KvBlockPool::Unregister(int32_t block) {
  CachedBlock& c = cached_[block];
  if (!c.registered) return;
  by_hash_.erase(c.hash);
  c.registered = false;
  c.tokens.clear();
}

uint64_t KvBlockPool::HashBlock(uint64_t prev, absl::Span<const int32_t> tokens) {
  // FNV-1a over the previous hash and the token ids, finished with a SplitMix64 mix.
  uint64_t h = 1469598103934665603ull ^ prev;
  for (int32_t t : tokens) {
    h ^= static_cast<uint32_t>(t);
    h *= 1099511628211ull;
  }
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
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
