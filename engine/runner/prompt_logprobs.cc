#include "engine/runner/prompt_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace orca {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float Clean(float v) { return std::isnan(v) ? kNegInf : v; }

// Whether (la, a) ranks before (lb, b): the larger logit, then the smaller id.
bool Before(float la, int32_t a, float lb, int32_t b) { return la > lb || (la == lb && a < b); }

}  // namespace

PromptLogprob ScorePromptToken(absl::Span<const float> logits, int32_t target, int32_t top_n) {
  PromptLogprob out;
  out.token_id = target;
  const int32_t vocab = static_cast<int32_t>(logits.size());
  float max = kNegInf;
  for (float v : logits) max = std::max(max, Clean(v));
  double sum = 0;
  if (std::isfinite(max)) {
    for (float v : logits) sum += std::exp(static_cast<double>(Clean(v)) - max);
  }
  // log(sum) >= 0: the maximum contributes exp(0).
  const double lse = std::isfinite(max) ? max + std::log(sum) : kNegInf;
  auto logprob = [&](float v) {
    v = Clean(v);
    return std::isfinite(lse) && v != kNegInf ? static_cast<float>(v - lse) : kNegInf;
  };
  const float t = Clean(logits[static_cast<size_t>(target)]);
  out.logprob = logprob(t);
  int32_t greater = 0;
  for (float v : logits) greater += Clean(v) > t ? 1 : 0;
  out.rank = greater + 1;

  // The top N by a bounded heap whose front is the worst kept entry.
  const int32_t n = std::clamp(top_n, 0, vocab);
  if (n == 0) return out;
  std::vector<std::pair<float, int32_t>> heap;
  heap.reserve(static_cast<size_t>(n));
  auto worse_first = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return Before(a.first, a.second, b.first, b.second);
  };
  for (int32_t i = 0; i < vocab; ++i) {
    const float v = Clean(logits[static_cast<size_t>(i)]);
    if (static_cast<int32_t>(heap.size()) < n) {
      heap.emplace_back(v, i);
      std::push_heap(heap.begin(), heap.end(), worse_first);
    } else if (Before(v, i, heap.front().first, heap.front().second)) {
      std::pop_heap(heap.begin(), heap.end(), worse_first);
      heap.back() = {v, i};
      std::push_heap(heap.begin(), heap.end(), worse_first);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), worse_first);
  out.top_logprobs.reserve(heap.size());
  for (const auto& [v, id] : heap) out.top_logprobs.emplace_back(id, logprob(v));
  return out;
}

}  // namespace orca
