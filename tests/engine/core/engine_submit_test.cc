// Engine::Submit refuses at once what the scheduler could never run, so one bad request
// cannot stall the queue behind it (issue 16, bug 1), on a real model (stories260K).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/core/engine.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

TEST(EngineSubmitTest, RefusesAPromptOverTheBudgetWithoutChunkedPrefillAndKeepsServing) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  EngineOptions eo;
  eo.model.dir = dir;
  eo.kv_cache.num_blocks = 64;
  eo.device.threads = 1;
  eo.scheduler.chunked_prefill = false;
  eo.scheduler.max_batched_tokens = 64;
  auto engine = Engine::Create(eo);
  ASSERT_TRUE(engine.ok()) << engine.status();
  (*engine)->Start();

  GenerateParams too_long;
  too_long.prompt_tokens.resize(100);
  std::iota(too_long.prompt_tokens.begin(), too_long.prompt_tokens.end(), 1);
  too_long.max_tokens = 4;
  auto refused = (*engine)->Submit(too_long);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(
                "the prompt has 100 tokens but --max-batched-tokens is 64 and chunked prefill "
                "is off"),
            std::string::npos)
      << refused.status();

  // The next request is answered, not queued behind one that can never run.
  GenerateParams ok;
  ok.prompt_tokens = (*engine)->tokenizer().Encode("Once upon a time", true);
  ok.max_tokens = 4;
  ok.ignore_eos = true;
  auto stream = (*engine)->Submit(ok);
  ASSERT_TRUE(stream.ok()) << stream.status();
  StreamEvent ev;
  int32_t tokens = 0;
  do {
    ASSERT_TRUE((*stream)->Pop(&ev, absl::Seconds(20))) << "the request stalled in the queue";
    tokens += static_cast<int32_t>(ev.token_ids.size());
  } while (!ev.finished);
  EXPECT_EQ(ev.finish_reason, FinishReason::kLength);
  EXPECT_EQ(tokens, 4);
  EXPECT_EQ((*engine)->Snapshot().num_waiting, 0);
  (*engine)->Stop();
}

}  // namespace
}  // namespace orca
