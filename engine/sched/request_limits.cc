#include "engine/sched/request_limits.h"

#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace orca {

absl::Status ValidateRequest(absl::Span<const int32_t> prompt, int32_t max_tokens,
                             const RequestLimits& limits) {
  if (prompt.empty()) return absl::InvalidArgumentError("the prompt is empty");
  if (max_tokens < 1) return absl::InvalidArgumentError("max_tokens must be at least 1");
  if (limits.vocab_size > 0) {
    for (int32_t t : prompt) {
      if (t < 0 || t >= limits.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token id ", t, " is outside the vocabulary [0, ", limits.vocab_size, ")"));
      }
    }
  }
  const int64_t total = static_cast<int64_t>(prompt.size()) + max_tokens;
  if (total > limits.max_model_len) {
    absl::Status s = absl::InvalidArgumentError(
        absl::StrCat("the request needs ", total, " tokens (", prompt.size(), " in the prompt, ",
                     max_tokens, " to generate); the context length is ", limits.max_model_len));
    s.SetPayload(kContextLengthPayload, absl::Cord(absl::StrCat(limits.max_model_len, ",",
                                                                prompt.size(), ",", max_tokens)));
    return s;
  }
  if (limits.kv_cache_tokens > 0 && total > limits.kv_cache_tokens) {
    return absl::InvalidArgumentError(absl::StrCat("the request needs ", total,
                                                   " tokens of KV cache; the whole cache holds ",
                                                   limits.kv_cache_tokens));
  }
  if (limits.max_unchunked_prompt > 0 &&
      static_cast<int64_t>(prompt.size()) > limits.max_unchunked_prompt) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prompt has ", prompt.size(), " tokens but --max-batched-tokens is ",
        limits.max_unchunked_prompt,
        " and chunked prefill is off (--no-chunked-prefill), so a prompt must fit in one "
        "iteration; shorten the prompt, raise --max-batched-tokens or turn chunked prefill on"));
  }
  return absl::OkStatus();
}

std::optional<ContextLengthError> GetContextLengthError(const absl::Status& status) {
  auto p = status.GetPayload(kContextLengthPayload);
  if (!p) return std::nullopt;
  std::vector<std::string> parts = absl::StrSplit(std::string(*p), ',');
  ContextLengthError e;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &e.max_model_len) ||
      !absl::SimpleAtoi(parts[1], &e.prompt) || !absl::SimpleAtoi(parts[2], &e.completion)) {
    return std::nullopt;
  }
  return e;
}

}  // namespace orca
