#include "engine/sched/iteration_cost_model.h"

#include <cmath>

namespace orca {
namespace {

// Solves the k x k system a x = b in place (Gaussian elimination with partial
// pivoting); returns false when it is singular.
template <size_t K>
bool SolveInPlace(std::array<std::array<double, K>, K>& a, std::array<double, K>& b, int k) {
  for (int c = 0; c < k; ++c) {
    int pivot = c;
    for (int r = c + 1; r < k; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c])) pivot = r;
    }
    if (std::fabs(a[pivot][c]) < 1e-300) return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (int r = c + 1; r < k; ++r) {
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < k; ++j) a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  for (int c = k - 1; c >= 0; --c) {
    double s = b[c];
    for (int j = c + 1; j < k; ++j) s -= a[c][j] * b[j];
    b[c] = s / a[c][c];
  }
  return true;
}

}  // namespace

IterationCostModel::Vec IterationCostModel::Features(const IterationShape& s) {
  // Scaled so that a typical iteration's features are all of order 1.
  return {1.0, s.rows / 16.0, s.tokens / 256.0, s.attended / 65536.0};
}

void IterationCostModel::Observe(const IterationShape& shape, double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0 || shape.rows <= 0) return;
  const double keep = std::exp2(-1.0 / kWindow);
  const Vec x = Features(shape);
  for (int i = 0; i < kFeatures; ++i) {
    for (int j = 0; j < kFeatures; ++j) xtx_[i][j] = keep * xtx_[i][j] + x[i] * x[j];
    xty_[i] = keep * xty_[i] + x[i] * seconds;
  }
  ++observations_;
  if (shape.tokens > shape.rows) ++prefill_observations_;
  fitted_ = false;
}

bool IterationCostModel::ready() const {
  return observations_ >= kMinObservations && prefill_observations_ >= kMinPrefillObservations;
}

void IterationCostModel::Fit() const {
  // Least squares with every coefficient >= 0: solve over the active features and drop
  // the most negative until none is (an active-set descent; four features at most).
  // A small ridge keeps collinear features (e.g. decode-only batches, where rows ==
  // tokens) solvable.
  double trace = 0;
  for (int i = 0; i < kFeatures; ++i) trace += xtx_[i][i];
  const double ridge = 1e-9 * trace / kFeatures + 1e-300;
  std::array<bool, kFeatures> active;
  active.fill(true);
  coef_.fill(0);
  for (int round = 0; round < kFeatures; ++round) {
    int idx[kFeatures], k = 0;
    for (int i = 0; i < kFeatures; ++i) {
      if (active[i]) idx[k++] = i;
    }
    std::array<Vec, kFeatures> a{};
    Vec b{};
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < k; ++j) a[i][j] = xtx_[idx[i]][idx[j]];
      a[i][i] += ridge;
      b[i] = xty_[idx[i]];
    }
    if (k == 0 || !SolveInPlace(a, b, k)) break;
    int worst = -1;
    for (int i = 0; i < k; ++i) {
      if (b[i] < 0 && (worst < 0 || b[i] < b[worst])) worst = i;
    }
    if (worst < 0) {
      for (int i = 0; i < k; ++i) coef_[idx[i]] = b[i];
      break;
    }
    active[idx[worst]] = false;
  }
  fitted_ = true;
}

const std::array<double, IterationCostModel::kFeatures>& IterationCostModel::coefficients() const {
  if (!fitted_) Fit();
  return coef_;
}

double IterationCostModel::Predict(const IterationShape& shape) const {
  if (!ready()) return 0;
  const Vec& c = coefficients();
  const Vec x = Features(shape);
  double t = 0;
  for (int i = 0; i < kFeatures; ++i) t += c[i] * x[i];
  return t;
}

}  // namespace orca
