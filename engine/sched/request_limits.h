// ValidateRequest: the one check that a request can ever be scheduled, shared by the
// Engine (at Submit, so the client hears at once) and the IterationScheduler (Add).
// Messages are neutral; the API edges add their own phrasing (OpenAI's "maximum context
// length" sentence is built from the kContextLengthPayload numbers). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace orca {

struct RequestLimits {
  int32_t vocab_size = 0;       // 0: token ids are not checked
  int32_t max_model_len = 0;    // prompt + max_tokens at most
  int64_t kv_cache_tokens = 0;  // what the whole KV cache holds; 0: not checked
  // The longest prompt one iteration schedules whole: max_batched_tokens when chunked
  // prefill is off (a longer one would wait at the head of the queue forever); 0: not
  // checked (chunked prefill cuts any prompt to fit).
  int32_t max_unchunked_prompt = 0;
};

// The Status payload of a context-length error: "max_model_len,prompt,completion".
inline constexpr char kContextLengthPayload[] = "orca.dev/context-length";

// Returns OK when a request for `prompt` plus up to `max_tokens` new tokens fits
// `limits`; InvalidArgument naming the limit otherwise.
absl::Status ValidateRequest(absl::Span<const int32_t> prompt, int32_t max_tokens,
                             const RequestLimits& limits);

// The numbers of a context-length error (nullopt for any other status).
struct ContextLengthError {
  int64_t max_model_len = 0, prompt = 0, completion = 0;
};
std::optional<ContextLengthError> GetContextLengthError(const absl::Status& status);

}  // namespace orca
