// OutputProcessor: stream events from scheduler updates, stop-string decisions returned
// as data, the static-batching hold, failures. On stories260K's tokenizer.
#include <gtest/gtest.h>

#include "engine/core/output_processor.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

class OutputProcessorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
    auto t = Tokenizer::FromDirectory(dir);
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = std::move(*t);
  }
  // The update of one sampled token.
  static RequestUpdate Token(uint64_t id, int32_t t, FinishReason reason = FinishReason::kNone) {
    RequestUpdate u;
    u.request_id = id;
    u.new_tokens = {t};
    u.samples = {SampledToken{}};
    u.finished = reason != FinishReason::kNone;
    u.finish_reason = reason;
    return u;
  }
  std::vector<int32_t> Encode(const std::string& s) { return tokenizer_->Encode(s, false); }
  static std::vector<StreamEvent> Drain(RequestStream& s) {
    std::vector<StreamEvent> out;
    StreamEvent ev;
    while (s.Pop(&ev, absl::ZeroDuration())) out.push_back(ev);
    return out;
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(OutputProcessorTest, StreamsTextAndReturnsAStopStringDecision) {
  OutputProcessor p(*tokenizer_, /*hold_responses=*/false);
  OutputOptions o;
  o.stop = {"Lily"};
  o.prompt_tokens = 3;
  auto stream = p.Add(7, o);
  std::string text;
  FinishReason decided = FinishReason::kNone;
  for (int32_t t : Encode(" there was a girl named Lily and")) {
    decided = p.Apply(Token(7, t), 1.0);
    for (const StreamEvent& ev : Drain(*stream)) {
      text += ev.text;
      if (ev.finished) {
        EXPECT_EQ(ev.finish_reason, FinishReason::kStop);
      }
    }
    if (decided != FinishReason::kNone) break;
  }
  EXPECT_EQ(decided, FinishReason::kStop) << "the scheduler must be told";
  EXPECT_EQ(text, " there was a girl named ");  // the stop string is never shown
  p.Retire(7, FinishReason::kStop, 2.0);        // completed: released, nothing more to send
  EXPECT_TRUE(Drain(*stream).empty());
}

TEST_F(OutputProcessorTest, StaticBatchingHoldsResponsesUntilTheBatchIsOver) {
  OutputProcessor p(*tokenizer_, /*hold_responses=*/true);
  auto a = p.Add(1, OutputOptions{});
  auto b = p.Add(2, OutputOptions{});
  const std::vector<int32_t> ids = Encode(" Once");
  ASSERT_FALSE(ids.empty());
  p.Apply(Token(1, ids[0], FinishReason::kLength), 1.0);  // 1 is complete
  p.Apply(Token(2, ids[0]), 1.0);                         // 2 goes on
  p.Retire(1, FinishReason::kLength, 1.0);
  EXPECT_TRUE(Drain(*a).empty()) << "held while the batch runs";
  p.Apply(Token(2, ids[0], FinishReason::kLength), 2.0);
  p.Retire(2, FinishReason::kLength, 2.0);
  EXPECT_TRUE(Drain(*b).empty());
  p.ReleaseHeld(2.0);
  const auto ea = Drain(*a), eb = Drain(*b);
  ASSERT_EQ(ea.size(), 1u);
  EXPECT_TRUE(ea[0].finished);
  ASSERT_EQ(eb.size(), 2u);
  EXPECT_EQ(eb[1].completion_tokens, 2);
}

TEST_F(OutputProcessorTest, FailGivesACompletedRequestItsResponseAndOthersTheError) {
  OutputProcessor p(*tokenizer_, /*hold_responses=*/true);
  auto done = p.Add(1, OutputOptions{});
  auto running = p.Add(2, OutputOptions{});
  const int32_t t = Encode(" a")[0];
  p.Apply(Token(1, t, FinishReason::kLength), 1.0);
  p.Apply(Token(2, t), 1.0);
  const absl::Status lost = absl::UnavailableError("the serving group broke");
  p.Fail(1, lost, 2.0);
  p.Fail(2, lost, 2.0);
  const auto d = Drain(*done), r = Drain(*running);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.back().finish_reason, FinishReason::kLength);
  EXPECT_TRUE(d.back().status.ok());
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r.back().finish_reason, FinishReason::kError);
  EXPECT_TRUE(absl::IsUnavailable(r.back().status));
}

// A request the scheduler failed with a reason (a guide no token can continue) ends its
// stream with that reason, after the tokens it had.
TEST_F(OutputProcessorTest, AFailedUpdateCarriesItsReasonToTheStream) {
  OutputProcessor p(*tokenizer_, /*hold_responses=*/false);
  auto stream = p.Add(3, OutputOptions{});
  const int32_t a = Encode(" a")[0];
  p.Apply(Token(3, a), 1.0);
  RequestUpdate failed;
  failed.request_id = 3;
  failed.finished = true;
  failed.finish_reason = FinishReason::kError;
  failed.error = absl::InvalidArgumentError("guided decoding: stuck");
  p.Apply(failed, 2.0);
  const auto events = Drain(*stream);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].token_ids, std::vector<int32_t>{a});
  EXPECT_TRUE(events.back().finished);
  EXPECT_EQ(events.back().finish_reason, FinishReason::kError);
  EXPECT_EQ(events.back().status, failed.error);
}

}  // namespace
}  // namespace orca
