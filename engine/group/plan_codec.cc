#include "engine/group/plan_codec.h"

namespace orca {
namespace {

template <typename T>
std::vector<T> ToVector(const google::protobuf::RepeatedField<T>& f) {
  return std::vector<T>(f.begin(), f.end());
}

}  // namespace

void ToProto(const IterationPlan& plan, v1::IterationPlan* out) {
  out->set_iteration(plan.iteration);
  for (const ScheduledSequence& s : plan.seqs) {
    v1::ScheduledSequence* q = out->add_seqs();
    q->set_seq_id(s.seq_id);
    q->mutable_token_ids()->Add(s.token_ids.begin(), s.token_ids.end());
    q->set_start_pos(s.start_pos);
    q->mutable_block_table()->Add(s.block_table.begin(), s.block_table.end());
    q->set_sample(s.sample);
    q->set_output_index(s.output_index);
    q->mutable_penalty_history()->Add(s.penalty_history.begin(), s.penalty_history.end());
    q->set_penalty_prompt_len(s.penalty_prompt_len);
    q->mutable_banned_token_ids()->Add(s.banned_token_ids.begin(), s.banned_token_ids.end());
    const SamplingParams& p = s.sampling;
    v1::Sampling* m = q->mutable_sampling();
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
  }
}

IterationPlan FromProto(const v1::IterationPlan& plan) {
  IterationPlan out;
  out.iteration = plan.iteration();
  for (const v1::ScheduledSequence& q : plan.seqs()) {
    ScheduledSequence s;
    s.seq_id = q.seq_id();
    s.token_ids = ToVector(q.token_ids());
    s.start_pos = q.start_pos();
    s.block_table = ToVector(q.block_table());
    s.sample = q.sample();
    s.output_index = q.output_index();
    s.penalty_history = ToVector(q.penalty_history());
    s.penalty_prompt_len = q.penalty_prompt_len();
    s.banned_token_ids = ToVector(q.banned_token_ids());
    const v1::Sampling& m = q.sampling();
    SamplingParams& p = s.sampling;
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
    for (const auto& [id, lp] : t.top_logprobs) {
      v1::TopLogprobEntry* e = q->add_top_logprobs();
      e->set_token_id(id);
      e->set_logprob(lp);
    }
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
    for (const v1::TopLogprobEntry& e : q.top_logprobs()) {
      t.top_logprobs.emplace_back(e.token_id(), e.logprob());
    }
    out.tokens.push_back(std::move(t));
  }
  return out;
}

}  // namespace orca
