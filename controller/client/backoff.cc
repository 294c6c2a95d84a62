#include "controller/client/backoff.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace orca::controller {

Backoff::Backoff(BackoffPolicy policy, uint64_t seed)
    : policy_(policy),
      state_(seed != 0 ? seed
                       : static_cast<uint64_t>(
                             std::chrono::steady_clock::now().time_since_epoch().count()) |
                             1) {}

absl::Duration Backoff::Next() {
  double base = absl::ToDoubleSeconds(policy_.initial) * std::pow(policy_.multiplier, attempt_);
  base = std::min(base, absl::ToDoubleSeconds(policy_.max));
  ++attempt_;
  // xorshift64*: cheap, deterministic for a given seed.
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  double unit = static_cast<double>((state_ * 2685821657736338717ull) >> 11) / 9007199254740992.0;
  double factor = 1.0 + policy_.jitter * (2.0 * unit - 1.0);
  return absl::Seconds(std::min(base * factor, absl::ToDoubleSeconds(policy_.max)));
}

}  // namespace orca::controller
