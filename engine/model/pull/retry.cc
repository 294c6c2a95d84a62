#include "engine/model/pull/retry.h"

#include <algorithm>
#include <thread>

namespace orca {

absl::Status RetryUnavailable(
    const RetryPolicy& policy, const std::function<absl::Status()>& op,
    const std::function<void(const absl::Status&, std::chrono::milliseconds)>& on_retry) {
  auto pause = policy.initial_backoff;
  absl::Status last;
  const int attempts = std::max(1, policy.attempts);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    last = op();
    if (!absl::IsUnavailable(last) || attempt == attempts) break;
    if (on_retry) on_retry(last, pause);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, policy.max_backoff);
  }
  return last;
}

}  // namespace orca
