// The textbook sampler, for tests and benchmarks: what SampleToken computes, with no
// shortcut (every token sorted, then truncated), for the same uniform draw.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "engine/runner/iteration.h"

namespace orca::testing {

// The textbook sampler, with no shortcut: every token sorted by logit (ties to the
// lower id), top-k, probabilities at temperature T, top-p over the sorted prefix,
// min-p relative to the top token, then the inverse CDF of the draw over what is kept.
inline int32_t FullSortReference(const std::vector<float>& logits, const SamplingParams& p,
                                 double u01) {
  std::vector<int32_t> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (p.top_k > 0 && p.top_k < static_cast<int32_t>(idx.size())) idx.resize(p.top_k);
  std::vector<double> prob;
  double sum = 0;
  for (int32_t t : idx) {
    prob.push_back(std::exp((static_cast<double>(logits[t]) - logits[idx[0]]) / p.temperature));
    sum += prob.back();
  }
  size_t keep = idx.size();
  double cum = 0;
  for (size_t i = 0; i < idx.size() && p.top_p < 1.0f; ++i) {
    cum += prob[i] / sum;
    if (cum >= p.top_p) {
      keep = i + 1;
      break;
    }
  }
  size_t n = 0;
  while (p.min_p > 0 && n < keep && prob[n] >= p.min_p * prob[0]) ++n;
  if (p.min_p > 0) keep = std::max<size_t>(n, 1);
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += prob[i];
  const double u = u01 * kept;
  cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += prob[i];
    if (u < cum) return idx[i];
  }
  return idx[keep - 1];
}

}  // namespace orca::testing
