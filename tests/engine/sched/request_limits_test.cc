// ValidateRequest: the one admission check shared by the Engine and the scheduler.
#include <gtest/gtest.h>

#include "engine/sched/request_limits.h"

namespace orca {
namespace {

TEST(RequestLimitsTest, AcceptsWhatFitsAndNamesTheLimitOtherwise) {
  const RequestLimits limits{100, 10, 16};
  const std::vector<int32_t> prompt = {1, 2, 3};
  EXPECT_TRUE(ValidateRequest(prompt, 7, limits).ok());  // exactly the context
  EXPECT_EQ(ValidateRequest({}, 1, limits).message(), "the prompt is empty");
  EXPECT_EQ(ValidateRequest(prompt, 0, limits).message(), "max_tokens must be at least 1");
  EXPECT_EQ(ValidateRequest({1, 100}, 1, limits).message(),
            "token id 100 is outside the vocabulary [0, 100)");
  EXPECT_EQ(ValidateRequest({1, -1}, 1, limits).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status too_long = ValidateRequest(prompt, 8, limits);
  EXPECT_EQ(too_long.message(),
            "the request needs 11 tokens (3 in the prompt, 8 to generate); the context length "
            "is 10");
  auto c = GetContextLengthError(too_long);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->max_model_len, 10);
  EXPECT_EQ(c->prompt, 3);
  EXPECT_EQ(c->completion, 8);
  EXPECT_FALSE(GetContextLengthError(absl::InvalidArgumentError("x")).has_value());
  // The KV cache bounds a request too (the context allows 20 here; the cache holds 16).
  EXPECT_EQ(ValidateRequest(prompt, 14, RequestLimits{0, 20, 16}).message(),
            "the request needs 17 tokens of KV cache; the whole cache holds 16");
  EXPECT_TRUE(ValidateRequest({7, 100000}, 1, RequestLimits{0, 20, 0}).ok());  // unchecked
  // Without chunked prefill a prompt must fit one iteration's token budget.
  RequestLimits unchunked{0, 200, 0};
  unchunked.max_unchunked_prompt = 2;
  EXPECT_TRUE(ValidateRequest({1, 2}, 100, unchunked).ok());
  EXPECT_EQ(ValidateRequest(prompt, 1, unchunked).message(),
            "the prompt has 3 tokens but --max-batched-tokens is 2 and chunked prefill is off "
            "(--no-chunked-prefill), so a prompt must fit in one iteration; shorten the prompt, "
            "raise --max-batched-tokens or turn chunked prefill on");
}

}  // namespace
}  // namespace orca
