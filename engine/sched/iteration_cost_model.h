// IterationCostModel: how long one iteration takes, predicted from its shape and learned
// online from the iterations the engine timed. The SLO-aware token budget
// (BatchBudget with a target inter-token latency) asks it how many prefill tokens fit
// beside the running decodes.
//
// The model is linear in four features of a batch, with coefficients kept >= 0:
//   seconds = c0 + c1 * rows + c2 * tokens + c3 * attended
// where rows is the number of sequences (per-row work: sampling, the LM head), tokens the
// tokens computed (the GEMMs), and attended the sum over rows of n * (start + n), the
// query-key pairs attention forms. It is fitted by least squares over exponentially
// forgotten observations (a window of about kWindow iterations), so a server whose load
// or neighbours change follows them. Pure arithmetic; not thread-safe.
#pragma once

#include <array>
#include <cstdint>

namespace orca {

// The shape of one iteration (or of a batch being composed).
struct IterationShape {
  int32_t rows = 0;
  int32_t tokens = 0;
  double attended = 0;  // sum of n * (start + n) over rows

  // Adds a row of `n` tokens starting at position `start`.
  void AddRow(int32_t n, int32_t start) {
    rows += 1;
    tokens += n;
    attended += static_cast<double>(n) * (static_cast<double>(start) + n);
  }
};

class IterationCostModel {
 public:
  static constexpr int kFeatures = 4;
  // Observations forgotten by half after about this many newer ones.
  static constexpr double kWindow = 500;
  // Predictions start after this many observations, of which kMinPrefillObservations
  // had more tokens than rows (some prefill): the token cost is then identified.
  static constexpr int kMinObservations = 16;
  static constexpr int kMinPrefillObservations = 4;

  // Records that an iteration of `shape` took `seconds` (ignored unless finite, > 0).
  void Observe(const IterationShape& shape, double seconds);
  bool ready() const;
  // Predicted seconds for `shape` (0 until ready()).
  double Predict(const IterationShape& shape) const;
  // The fitted coefficients, in seconds per unit of Features() (for logs and tests).
  const std::array<double, kFeatures>& coefficients() const;
  int64_t num_observations() const { return observations_; }

 private:
  using Vec = std::array<double, kFeatures>;
  static Vec Features(const IterationShape& shape);
  void Fit() const;

  // Exponentially weighted sums of x x^T and x y.
  std::array<Vec, kFeatures> xtx_{};
  Vec xty_{};
  int64_t observations_ = 0;
  int64_t prefill_observations_ = 0;
  mutable Vec coef_{};
  mutable bool fitted_ = false;
};

}  // namespace orca
