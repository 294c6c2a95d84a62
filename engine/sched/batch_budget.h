// BatchBudget: the batch-composition policy of one iteration (TensorRT-LLM's
// micro-batch scheduler): at most max_batch_size sequences and max_batched_tokens tokens,
// and how a sequence's remaining tokens are cut to fit (chunked prefill). One budget per
// Schedule() call; the KV side is KvCapacity's. Plain value; not thread-safe.
//
// With a target inter-token latency (SchedulerOptions::target_itl_ms, Sarathi-Serve's
// stall-free batching on ORCA's iteration loop) prefill chunks also stop where an
// IterationCostModel predicts the iteration would outlast the target, so the running
// decodes keep their pace while new prompts are prefilled a chunk at a time. Decodes
// (one token) are never limited by it, and the prefill of an iteration may always take
// min_prefill_tokens() so that new requests progress however long the decodes alone take.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "engine/config/engine_config.h"
#include "engine/sched/iteration_cost_model.h"

namespace orca {

class BatchBudget {
 public:
  explicit BatchBudget(const SchedulerOptions& o)
      : max_seqs_(o.max_batch_size), tokens_(o.max_batched_tokens), chunked_(o.chunked_prefill) {}
  // The same, with prefill chunks also held to `target_s` seconds per iteration as `model`
  // (which must outlive the budget and be ready()) predicts it. Needs chunked prefill: a
  // prompt that may not be cut is never held back by the target.
  BatchBudget(const SchedulerOptions& o, const IterationCostModel* model, double target_s)
      : BatchBudget(o) {
    if (chunked_ && model != nullptr && target_s > 0) {
      model_ = model;
      target_s_ = target_s;
      min_prefill_ = std::max(1, o.max_batched_tokens / 32);
    }
  }

  // Whether a batch of `seqs` sequences has room for no more.
  bool full(int32_t seqs) const { return seqs >= max_seqs_; }
  // The tokens still available this iteration under max_batched_tokens.
  int32_t tokens() const { return tokens_; }
  // The prefill tokens an iteration may take even past the latency target.
  int32_t min_prefill_tokens() const { return min_prefill_; }
  // Returns how many of a sequence's `remaining` tokens, computed from position `start`,
  // this iteration takes: all of them when they fit, else (chunked prefill, or a
  // `recompute`) what is left of the budget, possibly 0; nullopt when they do not fit and
  // may not be chunked (the sequence waits). A recompute after preemption (prompt +
  // generated tokens) is always chunkable: it may exceed max_batched_tokens, and waiting
  // would stall it forever.
  std::optional<int32_t> Fit(int32_t remaining, bool recompute = false, int32_t start = 0) const {
    const int32_t room = remaining > 1 ? std::min(tokens_, LatencyRoom(remaining, start)) : tokens_;
    if (remaining <= room) return remaining;
    if (!chunked_ && !recompute) return std::nullopt;
    return room;
  }
  // Takes `n` tokens (at most what Fit allowed) of a sequence computed from `start`.
  void Spend(int32_t n, int32_t start = 0) {
    tokens_ -= n;
    if (n > 1) prefill_ += n;
    if (n > 0) shape_.AddRow(n, start);
  }

 private:
  // The most tokens of a prefill chunk at `start` (at most `remaining`) the latency
  // target leaves room for.
  int32_t LatencyRoom(int32_t remaining, int32_t start) const {
    if (model_ == nullptr) return remaining;
    const int32_t floor = std::max(0, min_prefill_ - prefill_);
    auto fits = [&](int32_t n) {
      IterationShape s = shape_;
      s.AddRow(n, start);
      return model_->Predict(s) <= target_s_;
    };
    // Predictions grow with n (the coefficients are >= 0): bisect for the largest fit.
    int32_t lo = 0, hi = std::min(remaining, tokens_);
    if (fits(hi)) return std::max(hi, floor);
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    return std::max(lo, floor);
  }

  int32_t max_seqs_;
  int32_t tokens_;
  bool chunked_;
  const IterationCostModel* model_ = nullptr;
  double target_s_ = 0;
  int32_t min_prefill_ = 0;
  int32_t prefill_ = 0;  // prefill tokens taken so far
  IterationShape shape_;
};

}  // namespace orca
