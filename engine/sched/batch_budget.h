// BatchBudget: the batch-composition policy of one iteration (TensorRT-LLM's
// micro-batch scheduler): at most max_batch_size sequences and max_batched_tokens tokens,
// and how a sequence's remaining tokens are cut to fit (chunked prefill). One budget per
// Schedule() call; the KV side is KvCapacity's. Plain value; not thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "engine/config/engine_config.h"

namespace orca {

class BatchBudget {
 public:
  explicit BatchBudget(const SchedulerOptions& o)
      : max_seqs_(o.max_batch_size), tokens_(o.max_batched_tokens), chunked_(o.chunked_prefill) {}

  // Whether a batch of `seqs` sequences has room for no more.
  bool full(int32_t seqs) const { return seqs >= max_seqs_; }
  // The tokens still available this iteration.
  int32_t tokens() const { return tokens_; }
  // Returns how many of a sequence's `remaining` tokens this iteration takes: all of
  // them when they fit, else (chunked prefill, or a `recompute`) what is left of the
  // budget, possibly 0; nullopt when they do not fit and may not be chunked (the
  // sequence waits). A recompute after preemption (prompt + generated tokens) is always
  // chunkable: it may exceed max_batched_tokens, and waiting would stall it forever.
  std::optional<int32_t> Fit(int32_t remaining, bool recompute = false) const {
    if (remaining <= tokens_) return remaining;
    if (!chunked_ && !recompute) return std::nullopt;
    return tokens_;
  }
  // Takes `n` tokens (at most tokens()).
  void Spend(int32_t n) { tokens_ -= n; }

 private:
  int32_t max_seqs_;
  int32_t tokens_;
  bool chunked_;
};

}  // namespace orca
