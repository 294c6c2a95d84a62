#include "engine/sched/scheduler.h"

#include <algorithm>
#include <cassert>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/sched/request_limits.h"

namespace orca {
namespace {

// A guided request's mask at the state its output has reached, made when the rank that
// samples asks (after the forward pass is started): the guide's mask, and the stop
// tokens where the output already matches.
class GuideTokenMask : public DeferredTokenMask {
 public:
  GuideTokenMask(std::shared_ptr<const TokenGuide> guide, int32_t state,
                 std::vector<int32_t> stop_token_ids)
      : guide_(std::move(guide)), state_(state), stop_token_ids_(std::move(stop_token_ids)) {}

  std::vector<uint32_t> Make() const override {
    std::vector<uint32_t> mask = *guide_->Mask(state_);
    for (int32_t t : stop_token_ids_) {
      if (t < 0 || static_cast<size_t>(t) / 32 >= mask.size()) continue;
      mask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
    }
    return mask;
  }

 private:
  const std::shared_ptr<const TokenGuide> guide_;
  const int32_t state_;
  const std::vector<int32_t> stop_token_ids_;
};

}  // namespace

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
  }
  return "none";
}

IterationScheduler::IterationScheduler(const SchedulerConfig& config, KvBlockPool* pool)
    : config_(config), pool_(pool), capacity_(config.kv_policy, config.policy) {
  if (config_.kv_policy == KvPolicy::kReserve || IsRequestLevel(config_.policy)) {
    config_.prefix_caching = false;  // prefix caching comes on top of `paged` only
  }
}

absl::Status IterationScheduler::Add(std::unique_ptr<Request> request) {
  Request& r = *request;
  ORCA_RETURN_IF_ERROR(ValidateRequest(r.prompt_tokens, r.max_tokens, limits()));
  if (requests_.count(r.id))
    return absl::AlreadyExistsError(absl::StrCat("request ", r.id, " exists"));
  r.status = RequestStatus::kWaiting;
  waiting_.push_back(&r);
  requests_[r.id] = std::move(request);
  return absl::OkStatus();
}

RequestLimits IterationScheduler::limits() const {
  RequestLimits l;
  l.max_model_len = config_.max_model_len;
  l.kv_cache_tokens = int64_t{pool_->num_blocks()} * pool_->block_size();
  // Without chunked prefill a prompt is scheduled whole, in one iteration.
  if (!config_.chunked_prefill) l.max_unchunked_prompt = config_.max_batched_tokens;
  return l;
}

Request* IterationScheduler::Get(uint64_t id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

const Request* IterationScheduler::Find(uint64_t id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

void IterationScheduler::FinishRequest(Request& r, FinishReason reason) {
  if (r.finished()) return;
  r.status = RequestStatus::kFinished;
  r.finish_reason = reason;
  released_.push_back(r.id);
  running_.erase(std::remove(running_.begin(), running_.end(), &r), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), &r), waiting_.end());
  ReleaseIfIdle(r);
}

void IterationScheduler::ReleaseIfIdle(Request& r) {
  if (!r.finished() || r.in_flight > 0) return;  // blocks are freed when its batch returns
  r.blocks.Release(*pool_);
  auto it = requests_.find(r.id);
  finished_.push_back(std::move(it->second));
  requests_.erase(it);
}

void IterationScheduler::Complete(Request& r, FinishReason reason) {
  if (config_.policy != SchedulingPolicy::kRequest || r.status != RequestStatus::kRunning) {
    FinishRequest(r, reason);
    return;
  }
  r.held_finish = reason;
  EndStaticBatchIfComplete();
}

void IterationScheduler::EndStaticBatchIfComplete() {
  if (config_.policy != SchedulingPolicy::kRequest) return;
  for (const Request* r : running_) {
    if (r->held_finish == FinishReason::kNone) return;
  }
  const std::vector<Request*> batch = running_;  // FinishRequest edits running_
  for (Request* r : batch) FinishRequest(*r, r->held_finish);
}

bool IterationScheduler::Abort(uint64_t request_id) {
  Request* r = Get(request_id);
  if (r == nullptr || r->finished()) return false;
  FinishRequest(*r, FinishReason::kAbort);
  EndStaticBatchIfComplete();  // the others may all have been waiting for it
  return true;
}

bool IterationScheduler::Finish(uint64_t request_id, FinishReason reason) {
  Request* r = Get(request_id);
  if (r == nullptr || r->finished() || r->held_finish != FinishReason::kNone) return false;
  if (reason == FinishReason::kStop || reason == FinishReason::kLength) {
    Complete(*r, reason);
  } else {
    FinishRequest(*r, reason);
    EndStaticBatchIfComplete();
  }
  return true;
}

std::vector<uint64_t> IterationScheduler::RunningIds() const {
  std::vector<uint64_t> ids;
  for (const Request* r : running_) ids.push_back(r->id);
  return ids;
}

std::vector<std::unique_ptr<Request>> IterationScheduler::TakeFinished() {
  std::vector<std::unique_ptr<Request>> out;
  out.swap(finished_);
  return out;
}

void IterationScheduler::MatchPrefix(Request& r) {
  if (!config_.prefix_caching || r.num_computed_tokens != 0 || !r.blocks.blocks().empty() ||
      r.wants_prompt_logprobs()) {
    return;
  }
  const int32_t bs = pool_->block_size();
  uint64_t h = 0;
  int32_t matched = 0;
  std::vector<int32_t> tokens(bs);
  // Leave at least one token to compute: its logits sample the next token.
  while ((matched + 1) * bs <= r.num_tokens() - 1) {
    for (int32_t i = 0; i < bs; ++i) tokens[i] = r.TokenAt(matched * bs + i);
    uint64_t hh = KvBlockPool::HashBlock(h, tokens);
    int32_t b = pool_->LookupCached(hh, tokens);
    if (b < 0) break;
    r.blocks.mutable_blocks().push_back(b);
    h = hh;
    ++matched;
  }
  r.num_computed_tokens = matched * bs;
  r.num_cached_prompt_tokens =
      std::min<int32_t>(matched * bs, static_cast<int32_t>(r.prompt_tokens.size()));
  r.prefix_hash = h;
  r.num_registered_blocks = matched;
}

void IterationScheduler::RegisterFullBlocks(Request& r) {
  if (!config_.prefix_caching) return;
  const int32_t bs = pool_->block_size();
  const int32_t full =
      std::min<int32_t>(r.num_computed_tokens / bs, static_cast<int32_t>(r.blocks.blocks().size()));
  std::vector<int32_t> tokens(bs);
  for (int32_t i = r.num_registered_blocks; i < full; ++i) {
    for (int32_t j = 0; j < bs; ++j) tokens[j] = r.TokenAt(i * bs + j);
    uint64_t hh = KvBlockPool::HashBlock(r.prefix_hash, tokens);
    pool_->RegisterCached(r.blocks.blocks()[i], hh, tokens);
    r.prefix_hash = hh;
    r.num_registered_blocks = i + 1;
  }
}

void IterationScheduler::Preempt(Request& victim) {
  victim.blocks.Release(*pool_);
  victim.num_computed_tokens = 0;
  victim.num_registered_blocks = 0;
  victim.prefix_hash = 0;
  victim.status = RequestStatus::kWaiting;
  ++victim.num_preemptions;
  ++num_preemptions_;
  released_.push_back(victim.id);
  running_.erase(std::remove(running_.begin(), running_.end(), &victim), running_.end());
  // Back into the queue at its arrival position, so FCFS order holds.
  auto pos = std::find_if(waiting_.begin(), waiting_.end(), [&](Request* w) {
    return w->arrival_time > victim.arrival_time ||
           (w->arrival_time == victim.arrival_time && w->id > victim.id);
  });
  waiting_.insert(pos, &victim);
}

bool IterationScheduler::EnsureBlocks(Request& r, int32_t tokens, const ScheduledBatch& batch) {
  const int32_t need = pool_->BlocksFor(tokens) - static_cast<int32_t>(r.blocks.blocks().size());
  if (need <= 0) return true;
  if (capacity_.may_preempt()) {
    while (pool_->num_free() < need) {
      Request* victim = KvCapacity::Victim(running_, r, batch.plan);
      if (victim == nullptr) {
        // Nothing newer to take from. With a batch in flight, blocks may come back when
        // it returns (its finished requests free theirs, its newer ones become
        // victims): r waits, keeping its KV. Otherwise r itself yields (recomputed
        // later).
        if (inflight_batches_ == 0 && r.in_flight == 0 && r.status == RequestStatus::kRunning) {
          Preempt(r);
        }
        return false;
      }
      Preempt(*victim);
    }
  }
  return r.blocks.EnsureCapacity(*pool_, tokens).ok();
}

void IterationScheduler::AddToBatch(Request& r, int32_t n, ScheduledBatch& batch) {
  ScheduledSequence s;
  s.seq_id = r.id;
  s.start_pos = r.num_computed_tokens;
  s.token_ids.reserve(n);
  for (int32_t i = 0; i < n; ++i) s.token_ids.push_back(r.TokenAt(r.num_computed_tokens + i));
  s.block_table = r.blocks.blocks();
  s.sample = r.num_computed_tokens + n == r.num_tokens();
  s.sampling = r.sampling;
  s.output_index = static_cast<int32_t>(r.output_tokens.size());
  if (s.sample && r.sampling.needs_history()) {
    for (int32_t i = 0; i < r.num_tokens(); ++i) s.penalty_history.push_back(r.TokenAt(i));
    s.penalty_prompt_len = static_cast<int32_t>(r.prompt_tokens.size());
  }
  if (s.sample && static_cast<int32_t>(r.output_tokens.size()) < r.min_tokens) {
    s.banned_token_ids = r.stop_token_ids;
  }
  if (s.sample && r.guide) {
    // Stop tokens end the output where it already matches.
    s.deferred_mask = std::make_shared<GuideTokenMask>(
        r.guide, r.guide_state,
        r.guide->accepting(r.guide_state) ? r.stop_token_ids : std::vector<int32_t>{});
  }
  if (r.wants_prompt_logprobs()) {
    // Row p of the chunk predicts the token at p + 1: score the prompt positions of
    // (start, start + n] not scored before.
    const int32_t first = std::max(s.start_pos + 1, r.next_prompt_logprob);
    const int32_t end = std::min(s.start_pos + n + 1, r.prompt_len());
    s.prompt_logprobs_from = std::max(0, first - 1 - s.start_pos);
    for (int32_t p = first; p < end; ++p) s.prompt_logprob_targets.push_back(r.TokenAt(p));
  }
  if (n == 1 && r.num_computed_tokens >= static_cast<int32_t>(r.prompt_tokens.size())) {
    batch.num_decode_tokens += 1;
  } else {
    batch.num_prefill_tokens += n;
  }
  r.num_computed_tokens += n;
  ++r.in_flight;
  batch.plan.seqs.push_back(std::move(s));
}

void IterationScheduler::AddRowOfCompleted(Request& r, ScheduledBatch& batch) {
  // Recomputes the last position (its KV slot gets the same values again) and samples
  // nothing: the cost of the row FasterTransformer keeps for a finished sequence.
  ScheduledSequence s;
  s.seq_id = r.id;
  s.start_pos = r.num_computed_tokens;
  s.token_ids.push_back(r.TokenAt(r.num_computed_tokens));
  s.block_table = r.blocks.blocks();
  s.sample = false;
  s.sampling = r.sampling;
  s.output_index = static_cast<int32_t>(r.output_tokens.size());
  batch.num_decode_tokens += 1;
  ++r.in_flight;
  batch.plan.seqs.push_back(std::move(s));
}

bool IterationScheduler::ScheduleRunning(Request& r, bool decode_pass, ScheduledBatch& batch,
                                         BatchBudget& budget) {
  if (r.in_flight > 0 || r.finished()) return true;
  const int32_t remaining = r.num_tokens() - r.num_computed_tokens;
  if (remaining <= 0 || (remaining == 1) != decode_pass) return true;
  if (budget.full(static_cast<int32_t>(batch.plan.seqs.size()))) return false;
  if (r.held_finish != FinishReason::kNone) {
    AddRowOfCompleted(r, batch);
    return true;
  }
  const int32_t start = r.num_computed_tokens;
  const std::optional<int32_t> n =
      budget.Fit(remaining, /*recompute=*/r.num_preemptions > 0, start);
  // Not now: a prompt that may not be chunked waits (others may still fit); an empty
  // budget ends the pass.
  if (!n || *n == 0) return budget.tokens() > 0;
  if (!EnsureBlocks(r, capacity_.TokensToHold(r, *n), batch)) return true;
  AddToBatch(r, *n, batch);
  budget.Spend(*n, start);
  return true;
}

bool IterationScheduler::Admit(Request& r, ScheduledBatch& batch, BatchBudget& budget) {
  const bool request_level = IsRequestLevel(config_.policy);
  // Request-level batching admits its whole batch at once; members beyond this
  // iteration's token budget start their prefill in the following iterations.
  if (budget.full(static_cast<int32_t>(batch.plan.seqs.size())) ||
      (budget.tokens() == 0 && !request_level)) {
    return false;
  }
  MatchPrefix(r);
  const int32_t remaining = r.num_tokens() - r.num_computed_tokens;
  auto undo = [&] {
    r.blocks.Release(*pool_);
    r.num_computed_tokens = 0;
    r.num_cached_prompt_tokens = 0;
    r.num_registered_blocks = 0;
    r.prefix_hash = 0;
    return false;
  };
  // A preempted request recomputes its prompt and generated tokens, which may together
  // exceed the budget: they are chunked even without chunked prefill (never stalling
  // the queue). Add() refused prompts that can never fit unchunked.
  const int32_t start = r.num_computed_tokens;
  std::optional<int32_t> fit = budget.Fit(remaining, /*recompute=*/r.num_preemptions > 0, start);
  if (!fit || *fit == 0) {
    // (Iteration-level: no room left under the latency target; the request waits.)
    if (!request_level) return undo();
    fit = 0;  // a static batch's member: admitted now, prefilled in later iterations
  }
  const int32_t n = *fit;
  const int32_t tokens = capacity_.TokensToHold(r, n);
  const int32_t need = pool_->BlocksFor(tokens) - static_cast<int32_t>(r.blocks.blocks().size());
  // The watermark applies while others run: alone, a request may use the whole pool.
  const int32_t keep_free = running_.empty() ? 0 : KvAdmissionWatermark(pool_->num_blocks());
  if (need > pool_->num_free() - keep_free || !r.blocks.EnsureCapacity(*pool_, tokens).ok()) {
    return undo();
  }
  prefix_hit_tokens_ += r.num_cached_prompt_tokens;
  waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &r));
  r.status = RequestStatus::kRunning;
  r.admit_order = next_admit_order_++;
  running_.push_back(&r);
  if (n > 0) AddToBatch(r, n, batch);
  budget.Spend(n, start);
  return true;
}

BatchBudget IterationScheduler::MakeBudget() const {
  // The latency target protects running decodes: with none (only prompts being
  // prefilled, or an idle engine) a full budget finishes the prompts soonest.
  if (config_.target_itl_ms <= 0 || config_.policy != SchedulingPolicy::kIteration ||
      !cost_model_.ready()) {
    return BatchBudget(config_);
  }
  const bool decoding = std::any_of(running_.begin(), running_.end(), [](const Request* r) {
    return !r->finished() && r->num_computed_tokens >= r->prompt_len();
  });
  if (!decoding) return BatchBudget(config_);
  return BatchBudget(config_, &cost_model_, config_.target_itl_ms / 1000.0);
}

void IterationScheduler::ObserveIteration(const ScheduledBatch& batch, double seconds) {
  IterationShape shape;
  for (const ScheduledSequence& s : batch.plan.seqs) {
    shape.AddRow(static_cast<int32_t>(s.token_ids.size()), s.start_pos);
  }
  cost_model_.Observe(shape, seconds);
}

ScheduledBatch IterationScheduler::Schedule() {
  ScheduledBatch batch;
  if (inflight_batches_ >= config_.max_inflight_batches) return batch;
  BatchBudget budget = MakeBudget();
  const bool request_level = IsRequestLevel(config_.policy);
  // Fixed-shape static batching decodes only once the whole batch has prefilled.
  bool lockstep_wait = false;
  if (config_.policy == SchedulingPolicy::kRequest) {
    for (const Request* r : running_) lockstep_wait |= r->num_computed_tokens < r->prompt_len();
  }

  // With P batches in flight, a batch's decodes are capped at its share of the running
  // requests, ceil(running / P), so the stages' batches stay even (the others are
  // decoded by the next batches).
  const int32_t p = request_level ? 1 : std::max(1, config_.max_inflight_batches);
  const int32_t decode_share = (static_cast<int32_t>(running_.size()) + p - 1) / p;
  // Decodes first, then continuing prefill chunks, both in admission order. Copies:
  // preemption edits running_.
  for (bool decode_pass : {true, false}) {
    std::vector<Request*> order = running_;
    for (Request* r : order) {
      if (r->status != RequestStatus::kRunning) continue;
      // (A prompt's last token is scheduled in the decode pass: it is one token.)
      if (decode_pass && lockstep_wait && r->num_computed_tokens >= r->prompt_len()) continue;
      if (decode_pass && p > 1 && batch.num_decode_tokens >= decode_share) break;
      if (!ScheduleRunning(*r, decode_pass, batch, budget)) break;
    }
  }
  // New requests join in arrival order; request-level batching admits only when the
  // previous batch has completely finished.
  if (!request_level || running_.empty()) {
    while (!waiting_.empty()) {
      if (static_cast<int32_t>(running_.size()) >= config_.max_running()) break;
      if (!Admit(*waiting_.front(), batch, budget)) break;
    }
  }
  if (!batch.empty()) {
    ++inflight_batches_;
    batch.plan.released_seq_ids.swap(released_);
    released_.clear();
  }
  return batch;
}

std::vector<int32_t> IterationScheduler::AdvanceGuides(const ScheduledBatch& batch,
                                                       const IterationResult& result) {
  const std::vector<ScheduledSequence>& seqs = batch.plan.seqs;
  std::vector<int32_t> next(seqs.size(), kNotAdvanced);
  struct Row {
    size_t index;
    const TokenGuide* guide;
    int32_t state, token;
  };
  std::vector<Row> rows;
  size_t k = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (!seqs[i].sample) continue;
    const SampledToken* sample =
        k < result.tokens.size() && result.tokens[k].seq_id == seqs[i].seq_id ? &result.tokens[k]
                                                                              : nullptr;
    ++k;
    const Request* r = sample == nullptr ? nullptr : Get(seqs[i].seq_id);
    if (r == nullptr || !r->guide || r->finished() || sample->token_id < 0) continue;
    rows.push_back(Row{i, r->guide.get(), r->guide_state, sample->token_id});
  }
  auto advance = [&](int64_t j) {
    const Row& row = rows[static_cast<size_t>(j)];
    next[row.index] = row.guide->Next(row.state, row.token);
  };
  if (rows.size() < 2) {
    for (size_t j = 0; j < rows.size(); ++j) advance(static_cast<int64_t>(j));
    return next;
  }
  if (guide_pool_ == nullptr) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    guide_pool_ = std::make_unique<ThreadPool>(std::clamp(cores, 1, 8));
  }
  guide_pool_->ParallelFor(static_cast<int64_t>(rows.size()), advance);
  return next;
}

std::vector<RequestUpdate> IterationScheduler::Update(const ScheduledBatch& batch,
                                                      const IterationResult& result) {
  std::vector<RequestUpdate> updates;
  if (batch.empty()) return updates;
  --inflight_batches_;
  const std::vector<int32_t> advanced = AdvanceGuides(batch, result);
  size_t k = 0, kp = 0, row = 0;
  for (const ScheduledSequence& s : batch.plan.seqs) {
    const int32_t advanced_state = advanced[row++];
    const SampledToken* sample = nullptr;
    if (s.sample) {
      if (k < result.tokens.size() && result.tokens[k].seq_id == s.seq_id)
        sample = &result.tokens[k];
      ++k;
    }
    const SequencePromptLogprobs* scored = nullptr;
    if (!s.prompt_logprob_targets.empty()) {
      const SequencePromptLogprobs* p =
          kp < result.prompt_logprobs.size() ? &result.prompt_logprobs[kp] : nullptr;
      if (p != nullptr && p->seq_id == s.seq_id &&
          p->first_position == s.start_pos + s.prompt_logprobs_from + 1 &&
          p->entries.size() == s.prompt_logprob_targets.size()) {
        scored = p;
      }
      ++kp;
    }
    Request* r = Get(s.seq_id);
    if (r == nullptr) continue;
    --r->in_flight;
    if (r->finished()) {  // aborted while in flight
      ReleaseIfIdle(*r);
      continue;
    }
    RegisterFullBlocks(*r);
    const bool lost =
        (s.sample && sample == nullptr) || (!s.prompt_logprob_targets.empty() && scored == nullptr);
    if (!s.sample && !lost && scored == nullptr) continue;
    RequestUpdate u;
    u.request_id = r->id;
    if (scored != nullptr && scored->first_position == r->next_prompt_logprob) {
      u.prompt_logprobs = scored->entries;
      r->next_prompt_logprob += static_cast<int32_t>(scored->entries.size());
    }
    if (!s.sample && !lost) {
      updates.push_back(std::move(u));
      continue;
    }
    // Lost: the rank's result lacks what the plan asked for. No token: the row's token
    // mask allowed nothing: its guide's state needs what the vocabulary cannot spell and
    // has no match a stop token could end; the request fails rather than sampling
    // outside the pattern.
    if (lost || sample->token_id < 0) {
      u.finished = true;
      u.finish_reason = FinishReason::kError;
      if (!lost) {
        const std::string after =
            absl::StrCat("guided decoding: after ", r->output_tokens.size(), " output tokens ");
        u.error = absl::InvalidArgumentError(
            r->guide && r->guide->accepting(r->guide_state)
                ? absl::StrCat(after,
                               "the output matches the pattern and no token of this model's "
                               "vocabulary continues it, but it may not end here (min_tokens ",
                               r->min_tokens, ", or no stop token)")
                : absl::StrCat(after,
                               "the pattern needs text that no token of this model's "
                               "vocabulary begins"));
      }
      FinishRequest(*r, FinishReason::kError);
      updates.push_back(std::move(u));
      continue;
    }
    r->output_tokens.push_back(sample->token_id);
    u.new_tokens.push_back(sample->token_id);
    u.samples.push_back(*sample);
    const bool is_stop = std::find(r->stop_token_ids.begin(), r->stop_token_ids.end(),
                                   sample->token_id) != r->stop_token_ids.end();
    const int32_t generated = static_cast<int32_t>(r->output_tokens.size());
    // Guided decoding: the output ends once it matches and nothing more may follow
    // (where it matches, a stop token may still end it). The next state's mask is made
    // by the next plan's sampling rank, not here (DeferredTokenMask).
    bool guide_done = false, guide_stuck = false;
    if (r->guide && !is_stop) {
      r->guide_state = advanced_state != kNotAdvanced
                           ? advanced_state
                           : r->guide->Next(r->guide_state, sample->token_id);
      guide_done = r->guide_state != TokenGuide::kDead && r->guide->complete(r->guide_state);
      guide_stuck = r->guide_state == TokenGuide::kDead;  // a token the mask refused
    }
    if (guide_stuck) {
      u.finish_reason = FinishReason::kError;
      u.error = absl::InternalError(absl::StrCat("guided decoding: token ", sample->token_id,
                                                 " was sampled outside the pattern"));
    } else if ((is_stop && generated > r->min_tokens - 1) || guide_done) {
      u.finish_reason = FinishReason::kStop;
    } else if (generated >= r->max_tokens || r->num_tokens() >= config_.max_model_len) {
      u.finish_reason = FinishReason::kLength;
    }
    if (u.finish_reason == FinishReason::kError) {
      u.finished = true;
      FinishRequest(*r, FinishReason::kError);
    } else if (u.finish_reason != FinishReason::kNone) {
      u.finished = true;
      Complete(*r, u.finish_reason);
    }
    updates.push_back(std::move(u));
  }
  return updates;
}

}  // namespace orca
