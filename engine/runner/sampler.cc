#include "engine/runner/sampler.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>

namespace orca {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// NaN becomes -inf (never sampled, and no longer able to make comparisons and sorts
// undefined); +inf becomes the largest float, so softmax stays finite.
void SanitizeLogits(absl::Span<float> logits) {
  for (float& v : logits) {
    if (std::isnan(v)) {
      v = -INFINITY;
    } else if (v == INFINITY) {
      v = std::numeric_limits<float>::max();
    }
  }
}

// logit_bias, presence/frequency penalties (OpenAI: on the output's tokens),
// repetition penalty (Hugging Face: on prompt and output), then bans. The first three
// are the row's LogitEdits: the one definition the backend applies too.
void ApplyPenalties(absl::Span<float> logits, const ScheduledSequence& seq) {
  const int32_t vocab = static_cast<int32_t>(logits.size());
  if (HasLogitEdits(seq.sampling)) {
    thread_local std::vector<LogitEdit> edits;
    edits.clear();
    AppendLogitEdits(seq, vocab, &edits);
    for (const LogitEdit& e : edits) {
      ApplyLogitEdit(e, seq.sampling.repetition_penalty, logits[e.token]);
    }
  }
  for (int32_t t : seq.banned_token_ids) {
    if (t >= 0 && t < vocab) logits[t] = -INFINITY;
  }
  // Guided decoding: only the tokens the mask allows.
  if (!seq.allowed_token_mask.empty()) {
    for (int32_t t = 0; t < vocab; ++t) {
      const size_t word = static_cast<size_t>(t) / 32;
      const bool allowed =
          word < seq.allowed_token_mask.size() && ((seq.allowed_token_mask[word] >> (t % 32)) & 1);
      if (!allowed) logits[t] = -INFINITY;
    }
  }
}

// log-softmax of `logits`: its normaliser and maximum.
void LogSoftmaxAt(absl::Span<const float> logits, double* log_z, float* max_out) {
  float m = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (float v : logits) z += std::exp(static_cast<double>(v) - m);
  *log_z = std::log(z);
  *max_out = m;
}

// The candidates' order: higher logit first, ties to the lower id (a total order, so
// every partial sort below yields the same prefix).
struct ByLogit {
  absl::Span<const float> logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

// The first token with the highest logit.
int32_t Argmax(absl::Span<const float> logits) {
  int32_t best = 0;
  for (int32_t t = 1; t < static_cast<int32_t>(logits.size()); ++t) {
    if (logits[t] > logits[best]) best = t;
  }
  return best;
}

// The `n` best tokens in ByLogit order, by a bounded heap: one pass, no copy of the
// vocabulary.
std::vector<int32_t> TopIds(absl::Span<const float> logits, int32_t n) {
  const ByLogit better{logits};
  std::vector<int32_t> heap;  // front: the worst of those kept
  heap.reserve(static_cast<size_t>(n));
  for (int32_t t = 0; t < static_cast<int32_t>(logits.size()); ++t) {
    if (static_cast<int32_t>(heap.size()) < n) {
      heap.push_back(t);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(t, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = t;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  return heap;
}

// Index of the draw `u` in [0, sum(w)) by inverse CDF over `order`: the first entry
// whose cumulative weight exceeds u (rounding past the end: the last entry of
// positive weight).
template <typename Order>
int32_t InverseCdf(const Order& order, size_t n, const std::vector<double>& w, double u) {
  double cum = 0;
  int32_t last = order(0);
  for (size_t i = 0; i < n; ++i) {
    const int32_t t = order(i);
    if (w[t] <= 0) continue;
    cum += w[t];
    last = t;
    if (u < cum) return t;
  }
  return last;
}

// Draws from softmax(logits / T) after top-k, top-p and min-p, in that order (top-p
// and min-p on the probabilities at temperature T).
//
// Truncation needs the candidates in ByLogit order, but only as far as it keeps them:
// top-k sorts k; top-p sorts a prefix that grows 4x until it holds the nucleus (real
// models' nuclei are tens to hundreds of tokens, not the vocabulary); min-p first
// partitions out what it drops. With none of them, the draw walks the vocabulary in id
// order: the same distribution, one pass, no sort. The weights are computed once per
// candidate.
int32_t Draw(absl::Span<const float> logits, const SamplingParams& p, int32_t output_index) {
  const int32_t vocab = static_cast<int32_t>(logits.size());
  const int32_t top_id = Argmax(logits);
  const double top = logits[top_id];
  if (logits[top_id] == -INFINITY) return top_id;  // every token banned or NaN
  const double u01 = SeededUniform(p.seed, static_cast<uint64_t>(output_index));
  thread_local std::vector<double> w;  // by token id; set for the candidates only
  thread_local std::vector<int32_t> idx;
  w.resize(static_cast<size_t>(vocab));
  auto weigh = [&](int32_t t) {
    return w[t] = std::exp((static_cast<double>(logits[t]) - top) / p.temperature);
  };

  const int32_t k = (p.top_k > 0 && p.top_k < vocab) ? p.top_k : vocab;
  if (k == vocab && p.top_p >= 1.0f && p.min_p <= 0.0f) {
    double sum = 0;
    for (int32_t t = 0; t < vocab; ++t) sum += weigh(t);
    return InverseCdf([](size_t i) { return static_cast<int32_t>(i); }, vocab, w, u01 * sum);
  }

  const ByLogit by_logit{logits};
  idx.resize(static_cast<size_t>(vocab));
  std::iota(idx.begin(), idx.end(), 0);
  size_t candidates = static_cast<size_t>(vocab);
  size_t sorted = 0;  // idx[0, sorted) is in ByLogit order
  double sum = 0;     // the candidates' weight, which top-p's mass is relative to
  if (k < vocab) {
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), by_logit);
    candidates = sorted = static_cast<size_t>(k);
    for (size_t i = 0; i < candidates; ++i) sum += weigh(idx[i]);
  } else {
    for (int32_t t = 0; t < vocab; ++t) sum += weigh(t);
  }
  auto sort_prefix = [&](size_t n) {
    if (n <= sorted) return;
    std::partial_sort(idx.begin(), idx.begin() + n, idx.begin() + candidates, by_logit);
    sorted = n;
  };

  // min-p keeps the tokens with probability >= min_p x the top one's (weight 1): a
  // prefix of the ByLogit order.
  size_t limit = candidates;
  if (p.min_p > 0.0f) {
    const double threshold = std::min(1.0, static_cast<double>(p.min_p));
    auto kept = [&](int32_t t) { return w[t] >= threshold; };
    if (sorted == candidates) {
      limit = 0;
      while (limit < candidates && kept(idx[limit])) ++limit;
    } else {
      limit = std::partition(idx.begin(), idx.begin() + candidates, kept) - idx.begin();
      candidates = std::max<size_t>(limit, 1);
    }
    limit = std::max<size_t>(limit, 1);
  }
  size_t keep = limit;
  if (p.top_p < 1.0f) {
    double cum = 0;
    size_t i = 0;
    for (size_t n = std::min<size_t>(limit, 64);; n = std::min(limit, n * 4)) {
      sort_prefix(n);
      for (; i < n; ++i) {
        cum += w[idx[i]] / sum;
        if (cum >= p.top_p) break;
      }
      if (i < n) {
        keep = i + 1;
        break;
      }
      if (n == limit) break;
    }
  }
  sort_prefix(keep);
  double kept_sum = 0;
  for (size_t i = 0; i < keep; ++i) kept_sum += w[idx[i]];
  return InverseCdf([&](size_t i) { return idx[i]; }, keep, w, u01 * kept_sum);
}

}  // namespace

double SeededUniform(uint64_t seed, uint64_t index) {
  uint64_t r = SplitMix64(SplitMix64(seed) ^ (index * 0xd1b54a32d192ed03ull));
  return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
}

SampledToken SampleToken(absl::Span<float> logits, const ScheduledSequence& seq) {
  const SamplingParams& p = seq.sampling;
  const int32_t vocab = static_cast<int32_t>(logits.size());
  SampledToken out;
  out.seq_id = seq.seq_id;

  SanitizeLogits(logits);
  ApplyPenalties(logits, seq);

  // Log-probabilities are those of the model's distribution after penalties and bans,
  // before temperature and truncation (vLLM's "processed" logits without sampling
  // transforms), so they do not depend on the sampling knobs.
  double log_z = 0;
  float max_logit = 0;
  if (p.logprobs >= 0) LogSoftmaxAt(logits, &log_z, &max_logit);
  auto logprob_of = [&](int32_t t) {
    return static_cast<float>(static_cast<double>(logits[t]) - max_logit - log_z);
  };
  if (p.logprobs > 0) {
    for (int32_t t : TopIds(logits, std::min(p.logprobs, vocab))) {
      out.top_logprobs.emplace_back(t, logprob_of(t));
    }
  }
  out.token_id = p.greedy() ? Argmax(logits) : Draw(logits, p, seq.output_index);
  if (p.logprobs >= 0) out.logprob = logprob_of(out.token_id);
  return out;
}

bool SamplesOnBackend(const ScheduledSequence& seq, const SamplingCaps& caps, int32_t vocab) {
  const SamplingParams& p = seq.sampling;
  if (!caps.supported || (HasLogitEdits(p) && !caps.logit_edits)) return false;
  if (p.logprobs > caps.max_logprobs) return false;
  if (p.greedy()) return true;
  // Top-p or min-p alone truncate the whole vocabulary: a top-k of `vocab`.
  const int32_t k = p.top_k >= 1 && p.top_k < vocab ? p.top_k : vocab;
  if (k == vocab && p.top_p >= 1.0f && p.min_p <= 0.0f) return true;  // nothing truncates
  return k <= caps.max_top_k;
}

bool AllowsNoToken(const ScheduledSequence& seq, int32_t vocab) {
  const std::vector<uint32_t>& mask = seq.allowed_token_mask;
  if (mask.empty()) return false;
  const size_t words = std::min(mask.size(), (static_cast<size_t>(vocab) + 31) / 32);
  for (size_t w = 0; w < words; ++w) {
    uint32_t bits = mask[w];
    if (w + 1 == words && words * 32 > static_cast<size_t>(vocab)) {
      bits &= (1u << (vocab % 32)) - 1;  // ids past the vocabulary
    }
    if (bits == 0) continue;
    for (int32_t t : seq.banned_token_ids) {
      if (t >= 0 && static_cast<size_t>(t) / 32 == w) bits &= ~(1u << (t % 32));
    }
    if (bits != 0) return false;
  }
  return true;
}

void AppendBackendSampleMask(const ScheduledSequence& seq, int32_t vocab,
                             std::vector<uint32_t>* masks) {
  const size_t words = (static_cast<size_t>(vocab) + 31) / 32;
  const size_t at = masks->size();
  if (seq.allowed_token_mask.empty()) {
    masks->resize(at + words, ~0u);
  } else {
    // Ids past the guide's mask are never allowed (ApplyPenalties).
    masks->resize(at + words, 0u);
    const size_t n = std::min(words, seq.allowed_token_mask.size());
    std::copy_n(seq.allowed_token_mask.begin(), n, masks->begin() + static_cast<ptrdiff_t>(at));
  }
  for (int32_t t : seq.banned_token_ids) {
    if (t >= 0 && t < vocab) (*masks)[at + static_cast<size_t>(t) / 32] &= ~(1u << (t % 32));
  }
}

SampleRowParams BackendSampleParams(const ScheduledSequence& seq) {
  const SamplingParams& p = seq.sampling;
  SampleRowParams r;
  r.temperature = p.greedy() ? 0.0f : p.temperature;
  r.top_k = p.top_k;
  r.top_p = p.top_p;
  r.min_p = p.min_p;
  r.uniform = SeededUniform(p.seed, static_cast<uint64_t>(seq.output_index));
  r.logprobs = p.logprobs;
  r.repetition_penalty = p.repetition_penalty;
  return r;
}

void AppendLogitEdits(const ScheduledSequence& seq, int32_t vocab, std::vector<LogitEdit>* edits) {
  const SamplingParams& p = seq.sampling;
  auto valid = [vocab](int32_t t) { return t >= 0 && t < vocab; };
  // Three lists in token order (reused per thread: this runs for every row each step):
  // the biases (in the request's order within a token), the output's tokens with their
  // repeats, the history's distinct tokens.
  thread_local std::vector<std::pair<int32_t, float>> bias;
  thread_local std::vector<int32_t> out, seen;
  bias.clear();
  out.clear();
  seen.clear();
  for (const auto& [t, b] : p.logit_bias) {
    if (valid(t)) bias.emplace_back(t, b);
  }
  std::stable_sort(bias.begin(), bias.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    const size_t start = std::min(seq.penalty_history.size(),
                                  static_cast<size_t>(std::max(0, seq.penalty_prompt_len)));
    std::copy_if(seq.penalty_history.begin() + static_cast<ptrdiff_t>(start),
                 seq.penalty_history.end(), std::back_inserter(out), valid);
    std::sort(out.begin(), out.end());
  }
  if (p.repetition_penalty != 1.0f && p.repetition_penalty > 0) {
    std::copy_if(seq.penalty_history.begin(), seq.penalty_history.end(), std::back_inserter(seen),
                 valid);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  }
  // Merged: one edit per token, its kinds together, its biases summed in order.
  size_t i = 0, j = 0, k = 0;
  for (;;) {
    int32_t t = INT32_MAX;
    if (i < bias.size()) t = std::min(t, bias[i].first);
    if (j < out.size()) t = std::min(t, out[j]);
    if (k < seen.size()) t = std::min(t, seen[k]);
    if (t == INT32_MAX) return;
    LogitEdit e{t, 0, 0.0f, 0.0f};
    for (; i < bias.size() && bias[i].first == t; ++i) {
      e.ops |= LogitEdit::kBias;
      e.bias += bias[i].second;
    }
    if (j < out.size() && out[j] == t) {
      const size_t from = j;
      while (j < out.size() && out[j] == t) ++j;
      e.ops |= LogitEdit::kSubtract;
      e.subtract = p.frequency_penalty * static_cast<float>(j - from) + p.presence_penalty;
    }
    if (k < seen.size() && seen[k] == t) {
      ++k;
      e.ops |= LogitEdit::kRepeat;
    }
    edits->push_back(e);
  }
}

}  // namespace orca
