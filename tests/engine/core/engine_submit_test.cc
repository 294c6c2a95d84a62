// Engine::Submit refuses at once what the scheduler could never run, so one bad request
// cannot stall the queue behind it (issue 16, bug 1), on a real model (stories260K); and
// grammar-guided requests decoded together (their next masks made on several threads
// between iterations) each follow the grammar.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
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

// Whether `s` can begin a sentence of root ::= ([a-z ] | "(" root ")")+: only those
// characters, never closing more brackets than are open. (A grammar's states are
// rarely revisited, so most steps need new masks, which the scheduler makes on every
// core at once.)
bool PrefixOfBracketSentence(const std::string& s) {
  int depth = 0;
  for (char c : s) {
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth < 0) return false;
    } else if (c != ' ' && (c < 'a' || c > 'z')) {
      return false;
    }
  }
  return true;
}

TEST(EngineSubmitTest, GrammarGuidedRequestsTogetherEachFollowTheGrammar) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  EngineOptions eo;
  eo.model.dir = dir;
  eo.kv_cache.num_blocks = 256;
  // One compute thread: OpenBLAS's own threads are not instrumented, so under TSan their
  // writes race with the backend's pool in appearance only. The scheduler's mask threads
  // (one per CPU) are ours.
  eo.device.threads = 1;
  auto engine = Engine::Create(eo);
  ASSERT_TRUE(engine.ok()) << engine.status();
  (*engine)->Start();
  auto guide = (*engine)->Guide(R"g(root ::= ([a-z ] | "(" root ")")+)g", GuideSyntax::kGbnf);
  ASSERT_TRUE(guide.ok()) << guide.status();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 8; ++i) {
    GenerateParams p;
    p.prompt_tokens = (*engine)->tokenizer().Encode("Once upon a time", true);
    p.max_tokens = 24;
    p.sampling.temperature = 1.0f;
    p.seed = 100 + static_cast<uint64_t>(i);
    p.guide = *guide;
    auto stream = (*engine)->Submit(p);
    ASSERT_TRUE(stream.ok()) << stream.status();
    streams.push_back(*stream);
  }
  for (auto& stream : streams) {
    std::vector<int32_t> tokens;
    StreamEvent ev;
    do {
      ASSERT_TRUE(stream->Pop(&ev, absl::Seconds(60)));
      tokens.insert(tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
    } while (!ev.finished);
    EXPECT_NE(ev.finish_reason, FinishReason::kError);
    const std::string text = (*engine)->tokenizer().Decode(tokens, true);
    EXPECT_TRUE(PrefixOfBracketSentence(text)) << text;
    EXPECT_FALSE(tokens.empty());
  }
  (*engine)->Stop();
}

}  // namespace
}  // namespace orca
