#include "engine/group/plan_codec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"

namespace orca {
namespace {

template <typename T>
std::vector<T> ToVector(const google::protobuf::RepeatedField<T>& f) {
  return std::vector<T>(f.begin(), f.end());
}

void SamplingToProto(const SamplingParams& p, v1::Sampling* m) {
  m->set_temperature(p.temperature);
  m->set_top_k(p.top_k);
  m->set_top_p(p.top_p);
  m->set_min_p(p.min_p);
  m->set_repetition_penalty(p.repetition_penalty);
  m->set_presence_penalty(p.presence_penalty);
  m->set_frequency_penalty(p.frequency_penalty);
  for (const auto& [id, bias] : p.logit_bias) {
    m->add_logit_bias_ids(id);
    m->add_logit_bias_values(bias);
  }
  m->set_seed(p.seed);
  m->set_logprobs(p.logprobs);
  m->set_prompt_logprobs(p.prompt_logprobs);
}

SamplingParams SamplingFromProto(const v1::Sampling& m) {
  SamplingParams p;
  p.temperature = m.temperature();
  p.top_k = m.top_k();
  p.top_p = m.top_p();
  p.min_p = m.min_p();
  p.repetition_penalty = m.repetition_penalty();
  p.presence_penalty = m.presence_penalty();
  p.frequency_penalty = m.frequency_penalty();
  const int n = std::min(m.logit_bias_ids_size(), m.logit_bias_values_size());
  for (int i = 0; i < n; ++i)
    p.logit_bias.emplace_back(m.logit_bias_ids(i), m.logit_bias_values(i));
  p.seed = m.seed();
  p.logprobs = m.logprobs();
  p.prompt_logprobs = m.prompt_logprobs();
  return p;
}

void TopToProto(const std::vector<std::pair<int32_t, float>>& top,
                google::protobuf::RepeatedPtrField<v1::TopLogprobEntry>* out) {
  for (const auto& [id, lp] : top) {
    v1::TopLogprobEntry* e = out->Add();
    e->set_token_id(id);
    e->set_logprob(lp);
  }
}

std::vector<std::pair<int32_t, float>> TopFromProto(
    const google::protobuf::RepeatedPtrField<v1::TopLogprobEntry>& entries) {
  std::vector<std::pair<int32_t, float>> top;
  for (const v1::TopLogprobEntry& e : entries) top.emplace_back(e.token_id(), e.logprob());
  return top;
}

// The fields that travel whole in both forms.
void CommonToProto(const ScheduledSequence& s, v1::ScheduledSequence* q) {
  q->set_seq_id(s.seq_id);
  q->mutable_token_ids()->Add(s.token_ids.begin(), s.token_ids.end());
  q->set_start_pos(s.start_pos);
  q->set_sample(s.sample);
  q->set_output_index(s.output_index);
  q->set_penalty_prompt_len(s.penalty_prompt_len);
  q->mutable_banned_token_ids()->Add(s.banned_token_ids.begin(), s.banned_token_ids.end());
  q->set_prompt_logprobs_from(s.prompt_logprobs_from);
  q->mutable_prompt_logprob_targets()->Add(s.prompt_logprob_targets.begin(),
                                           s.prompt_logprob_targets.end());
  if (s.deferred_mask != nullptr) {  // (GroupExecutor makes them beforehand, in parallel)
    const std::vector<uint32_t> mask = s.deferred_mask->Make();
    q->mutable_allowed_token_mask()->Add(mask.begin(), mask.end());
  } else {
    q->mutable_allowed_token_mask()->Add(s.allowed_token_mask.begin(), s.allowed_token_mask.end());
  }
}

ScheduledSequence CommonFromProto(const v1::ScheduledSequence& q) {
  ScheduledSequence s;
  s.seq_id = q.seq_id();
  s.token_ids = ToVector(q.token_ids());
  s.start_pos = q.start_pos();
  s.sample = q.sample();
  s.output_index = q.output_index();
  s.penalty_prompt_len = q.penalty_prompt_len();
  s.banned_token_ids = ToVector(q.banned_token_ids());
  s.prompt_logprobs_from = q.prompt_logprobs_from();
  s.prompt_logprob_targets = ToVector(q.prompt_logprob_targets());
  s.allowed_token_mask = ToVector(q.allowed_token_mask());
  return s;
}

// held := held[0, base) + tail, where base is 0 (a whole new vector) or exactly what is
// held (an extension); anything else means the two ends disagree.
template <typename Desync>
absl::Status Extend(int32_t base, const google::protobuf::RepeatedField<int32_t>& tail,
                    std::vector<int32_t>& held, const Desync& desync, uint64_t seq,
                    absl::string_view what) {
  if (base != 0 && static_cast<size_t>(base) != held.size()) {
    return desync(seq, absl::StrCat(what, " extends ", base, " entries, ", held.size(), " held"));
  }
  held.resize(static_cast<size_t>(base));
  held.insert(held.end(), tail.begin(), tail.end());
  return absl::OkStatus();
}

// Whether `prefix` is a prefix of `v`.
bool IsPrefix(const std::vector<int32_t>& prefix, const std::vector<int32_t>& v) {
  return prefix.size() <= v.size() && std::equal(prefix.begin(), prefix.end(), v.begin());
}

}  // namespace

void ToProto(const IterationPlan& plan, v1::IterationPlan* out) {
  out->set_iteration(plan.iteration);
  out->mutable_released_seq_ids()->Add(plan.released_seq_ids.begin(), plan.released_seq_ids.end());
  for (const ScheduledSequence& s : plan.seqs) {
    v1::ScheduledSequence* q = out->add_seqs();
    CommonToProto(s, q);
    q->mutable_block_table()->Add(s.block_table.begin(), s.block_table.end());
    q->mutable_penalty_history()->Add(s.penalty_history.begin(), s.penalty_history.end());
    SamplingToProto(s.sampling, q->mutable_sampling());
  }
}

IterationPlan FromProto(const v1::IterationPlan& plan) {
  IterationPlan out;
  out.iteration = plan.iteration();
  out.released_seq_ids = ToVector(plan.released_seq_ids());
  for (const v1::ScheduledSequence& q : plan.seqs()) {
    ScheduledSequence s = CommonFromProto(q);
    s.block_table = ToVector(q.block_table());
    s.penalty_history = ToVector(q.penalty_history());
    s.sampling = SamplingFromProto(q.sampling());
    out.seqs.push_back(std::move(s));
  }
  return out;
}

void PlanEncoder::Encode(const IterationPlan& plan, v1::IterationPlan* out) {
  out->set_iteration(plan.iteration);
  out->mutable_released_seq_ids()->Add(plan.released_seq_ids.begin(), plan.released_seq_ids.end());
  for (uint64_t id : plan.released_seq_ids) held_.erase(id);
  for (const ScheduledSequence& s : plan.seqs) {
    v1::ScheduledSequence* q = out->add_seqs();
    CommonToProto(s, q);
    auto [it, fresh] = held_.try_emplace(s.seq_id);
    HeldSequence& h = it->second;
    // Block tables only grow while a sequence runs (preemption releases it).
    const size_t blocks_base = IsPrefix(h.block_table, s.block_table) ? h.block_table.size() : 0;
    q->set_block_table_base(static_cast<int32_t>(blocks_base));
    q->mutable_block_table()->Add(s.block_table.begin() + blocks_base, s.block_table.end());
    h.block_table = s.block_table;
    if (fresh || !(h.sampling == s.sampling)) {
      SamplingToProto(s.sampling, q->mutable_sampling());
      h.sampling = s.sampling;
    }
    // A plan that carries no history leaves the held one as it is.
    if (!s.penalty_history.empty()) {
      const size_t base =
          IsPrefix(h.penalty_history, s.penalty_history) ? h.penalty_history.size() : 0;
      q->set_penalty_history_base(static_cast<int32_t>(base));
      q->mutable_penalty_history()->Add(s.penalty_history.begin() + base, s.penalty_history.end());
      h.penalty_history = s.penalty_history;
    }
  }
}

absl::StatusOr<IterationPlan> PlanDecoder::Decode(const v1::IterationPlan& plan) {
  IterationPlan out;
  out.iteration = plan.iteration();
  out.released_seq_ids = ToVector(plan.released_seq_ids());
  for (uint64_t id : out.released_seq_ids) held_.erase(id);
  auto desync = [&](uint64_t seq, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("plan ", plan.iteration(), ": sequence ", seq,
                                                   ": ", what, " (a plan was lost or reordered)"));
  };
  for (const v1::ScheduledSequence& q : plan.seqs()) {
    ScheduledSequence s = CommonFromProto(q);
    auto [it, fresh] = held_.try_emplace(s.seq_id);
    HeldSequence& h = it->second;
    ORCA_RETURN_IF_ERROR(Extend(q.block_table_base(), q.block_table(), h.block_table, desync,
                                s.seq_id, "block table"));
    s.block_table = h.block_table;
    if (q.has_sampling()) {
      h.sampling = SamplingFromProto(q.sampling());
    } else if (fresh) {
      return desync(s.seq_id, "no sampling parameters");
    }
    s.sampling = h.sampling;
    if (q.penalty_history_base() > 0 || q.penalty_history_size() > 0) {
      ORCA_RETURN_IF_ERROR(Extend(q.penalty_history_base(), q.penalty_history(), h.penalty_history,
                                  desync, s.seq_id, "penalty history"));
      s.penalty_history = h.penalty_history;
    }
    out.seqs.push_back(std::move(s));
  }
  return out;
}

void ToProto(const IterationResult& result, v1::IterationDone* out) {
  out->set_iteration(result.iteration);
  for (const SampledToken& t : result.tokens) {
    v1::SampledToken* q = out->add_tokens();
    q->set_seq_id(t.seq_id);
    q->set_token_id(t.token_id);
    q->set_logprob(t.logprob);
    TopToProto(t.top_logprobs, q->mutable_top_logprobs());
  }
  for (const SequencePromptLogprobs& p : result.prompt_logprobs) {
    v1::PromptLogprobs* q = out->add_prompt_logprobs();
    q->set_seq_id(p.seq_id);
    q->set_first_position(p.first_position);
    for (const PromptLogprob& e : p.entries) {
      v1::PromptTokenLogprob* m = q->add_entries();
      m->set_token_id(e.token_id);
      m->set_logprob(e.logprob);
      m->set_rank(e.rank);
      TopToProto(e.top_logprobs, m->mutable_top_logprobs());
    }
  }
  for (const TraceSpan& span : result.spans) {
    v1::TraceSpan* q = out->add_spans();
    q->set_name(span.name);
    q->set_start_us(span.start_us);
    q->set_dur_us(span.dur_us);
  }
}

IterationResult FromProto(const v1::IterationDone& done) {
  IterationResult out;
  out.iteration = done.iteration();
  for (const v1::SampledToken& q : done.tokens()) {
    SampledToken t;
    t.seq_id = q.seq_id();
    t.token_id = q.token_id();
    t.logprob = q.logprob();
    t.top_logprobs = TopFromProto(q.top_logprobs());
    out.tokens.push_back(std::move(t));
  }
  for (const v1::PromptLogprobs& q : done.prompt_logprobs()) {
    SequencePromptLogprobs p;
    p.seq_id = q.seq_id();
    p.first_position = q.first_position();
    for (const v1::PromptTokenLogprob& m : q.entries()) {
      p.entries.push_back(
          PromptLogprob{m.token_id(), m.logprob(), m.rank(), TopFromProto(m.top_logprobs())});
    }
    out.prompt_logprobs.push_back(std::move(p));
  }
  for (const v1::TraceSpan& q : done.spans()) {
    out.spans.push_back(TraceSpan{q.name(), q.start_us(), q.dur_us()});
  }
  return out;
}

}  // namespace orca
