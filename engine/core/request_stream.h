// RequestStream: the thread-safe channel from the engine's iteration thread to the
// endpoint handler serving one request. The engine pushes StreamEvents as tokens are
// produced; the handler pops them (with a timeout, so it can notice a disconnected
// client and abort).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "engine/runner/iteration.h"
#include "engine/sched/request.h"

namespace orca {

struct StreamEvent {
  std::vector<int32_t> token_ids;     // new tokens (stop tokens included)
  std::vector<SampledToken> samples;  // aligned with token_ids (for logprobs)
  // The prompt's next scored tokens (prompt logprobs), continuing the previous events'
  // from position 1; all of them come before (or with) the first token.
  std::vector<PromptLogprob> prompt_logprobs;
  std::string text;  // new text safe to show
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  // Why the request failed (finish_reason kError or kAbort on shutdown): Unavailable is
  // transient and retriable (the serving group broke: HTTP 503, gRPC UNAVAILABLE), other
  // codes are not. The transports map it in one place (engine/server/api_error.h).
  absl::Status status;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_prompt_tokens = 0;
};

class RequestStream {
 public:
  explicit RequestStream(uint64_t id) : id_(id) {}
  uint64_t id() const { return id_; }

  void Push(StreamEvent event) {
    absl::MutexLock lock(&mu_);
    events_.push_back(std::move(event));
  }

  // Waits up to `timeout` for an event; returns false on timeout.
  bool Pop(StreamEvent* out, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !events_.empty(); };
    if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) return false;
    *out = std::move(events_.front());
    events_.pop_front();
    return true;
  }

 private:
  const uint64_t id_;
  absl::Mutex mu_;
  std::deque<StreamEvent> events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace orca
