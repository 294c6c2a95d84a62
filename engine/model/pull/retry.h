// RetryPolicy and the retry loop of `orca model pull`: an operation that fails with
// Unavailable (a transport error, a 5xx or 429) is tried again after an exponentially
// growing pause, a bounded number of times; any other result ends the loop. Thread-safe
// (no state).
#pragma once

#include <chrono>
#include <functional>

#include "absl/status/status.h"

namespace orca {

struct RetryPolicy {
  int attempts = 6;  // tries, the first included
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
};

// Runs `op` until it returns anything but Unavailable or `policy.attempts` tries are
// spent; calls `on_retry(error, pause)` before each pause. Returns the last result.
absl::Status RetryUnavailable(
    const RetryPolicy& policy, const std::function<absl::Status()>& op,
    const std::function<void(const absl::Status&, std::chrono::milliseconds)>& on_retry);

}  // namespace orca
