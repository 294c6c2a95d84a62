#include "engine/runner/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace orca {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// log-softmax of `logits` evaluated at `ids`.
void LogSoftmaxAt(absl::Span<const float> logits, double* log_z, float* max_out) {
  float m = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (float v : logits) z += std::exp(static_cast<double>(v) - m);
  *log_z = std::log(z);
  *max_out = m;
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

  for (const auto& [t, bias] : p.logit_bias) {
    if (t >= 0 && t < vocab) logits[t] += bias;
  }
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    std::vector<int32_t> counts;
    const size_t start = std::min(seq.penalty_history.size(),
                                  static_cast<size_t>(std::max(0, seq.penalty_prompt_len)));
    std::vector<int32_t> out(seq.penalty_history.begin() + start, seq.penalty_history.end());
    std::sort(out.begin(), out.end());
    for (size_t i = 0; i < out.size();) {
      size_t j = i;
      while (j < out.size() && out[j] == out[i]) ++j;
      if (out[i] >= 0 && out[i] < vocab) {
        logits[out[i]] -= p.frequency_penalty * static_cast<float>(j - i) + p.presence_penalty;
      }
      i = j;
    }
  }
  if (p.repetition_penalty != 1.0f && p.repetition_penalty > 0) {
    std::vector<int32_t> seen = seq.penalty_history;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t t : seen) {
      if (t < 0 || t >= vocab) continue;
      float& l = logits[t];
      l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    }
  }
  for (int32_t t : seq.banned_token_ids) {
    if (t >= 0 && t < vocab) logits[t] = -INFINITY;
  }

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
    int32_t n = std::min(p.logprobs, vocab);
    std::vector<int32_t> idx(vocab);
    std::iota(idx.begin(), idx.end(), 0);
    std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int32_t i = 0; i < n; ++i) out.top_logprobs.emplace_back(idx[i], logprob_of(idx[i]));
  }

  if (p.greedy()) {
    int32_t best = 0;
    for (int32_t t = 1; t < vocab; ++t) {
      if (logits[t] > logits[best]) best = t;
    }
    out.token_id = best;
  } else {
    // Candidates sorted by logit, truncated by top-k, then probabilities at temperature T,
    // then top-p and min-p on those probabilities.
    std::vector<int32_t> idx(vocab);
    std::iota(idx.begin(), idx.end(), 0);
    int32_t k = (p.top_k > 0 && p.top_k < vocab) ? p.top_k : vocab;
    auto by_logit = [&](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    if (k < vocab) {
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), by_logit);
      idx.resize(k);
    } else {
      std::sort(idx.begin(), idx.end(), by_logit);
    }
    std::vector<double> prob(idx.size());
    const double top = logits[idx[0]];
    double sum = 0;
    for (size_t i = 0; i < idx.size(); ++i) {
      prob[i] = std::exp((static_cast<double>(logits[idx[i]]) - top) / p.temperature);
      sum += prob[i];
    }
    size_t keep = idx.size();
    if (p.top_p < 1.0f) {
      double cum = 0;
      for (size_t i = 0; i < idx.size(); ++i) {
        cum += prob[i] / sum;
        if (cum >= p.top_p) {
          keep = i + 1;
          break;
        }
      }
    }
    if (p.min_p > 0.0f) {
      double threshold = p.min_p * prob[0];
      size_t n = 0;
      while (n < keep && prob[n] >= threshold) ++n;
      keep = std::max<size_t>(n, 1);
    }
    double kept_sum = 0;
    for (size_t i = 0; i < keep; ++i) kept_sum += prob[i];
    double u = SeededUniform(p.seed, static_cast<uint64_t>(seq.output_index)) * kept_sum;
    size_t chosen = keep - 1;
    double cum = 0;
    for (size_t i = 0; i < keep; ++i) {
      cum += prob[i];
      if (u < cum) {
        chosen = i;
        break;
      }
    }
    out.token_id = idx[chosen];
  }
  if (p.logprobs >= 0) out.logprob = logprob_of(out.token_id);
  return out;
}

}  // namespace orca
