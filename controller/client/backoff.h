// Jittered exponential backoff. A Backoff is a small value owned by one retry loop;
// not thread-safe.
#pragma once

#include <cstdint>

#include "absl/time/time.h"

namespace orca::controller {

struct BackoffPolicy {
  absl::Duration initial = absl::Milliseconds(100);
  absl::Duration max = absl::Seconds(30);
  double multiplier = 2.0;
  double jitter = 0.2;  // each delay is scaled by a factor in [1 - jitter, 1 + jitter]
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy = {}, uint64_t seed = 0);

  // Returns the delay before the next attempt and advances.
  absl::Duration Next();
  // Forgets past failures.
  void Reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  BackoffPolicy policy_;
  int attempt_ = 0;
  uint64_t state_;
};

}  // namespace orca::controller
