#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench/loadgen/client.h"

namespace orca::bench {
namespace {

std::string Chunk(const std::string& text, const char* finish = nullptr) {
  nlohmann::json c = {{"index", 0},
                      {"text", text},
                      {"logprobs", nullptr},
                      {"finish_reason", finish ? nlohmann::json(finish) : nlohmann::json(nullptr)}};
  nlohmann::json j = {{"id", "cmpl-1"}, {"object", "text_completion"}, {"choices", {c}}};
  return "data: " + j.dump() + "\n\n";
}

std::string Usage(int completion) {
  nlohmann::json j = {{"id", "cmpl-1"},
                      {"choices", nlohmann::json::array()},
                      {"usage", {{"prompt_tokens", 4}, {"completion_tokens", completion}}}};
  return "data: " + j.dump() + "\n\n";
}

// An orca-style stream: one chunk per token, a bare finish chunk, usage, [DONE].
std::vector<std::string> Stream(int tokens, int usage) {
  std::vector<std::string> events;
  for (int i = 0; i < tokens; ++i) events.push_back(Chunk("t" + std::to_string(i)));
  events.push_back(Chunk("", "length"));
  if (usage >= 0) events.push_back(Usage(usage));
  events.push_back("data: [DONE]\n\n");
  return events;
}

TEST(CompletionStreamParserTest, TimesChunksAndTrustsUsage) {
  CompletionStreamParser p;
  auto events = Stream(3, 3);
  // Token i arrives at 0.1 * (i + 1) s; the tail events with the last token.
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string& e = events[i];
    const double t = 0.1 * static_cast<double>(std::min<size_t>(i, 2) + 1);
    // Split each event at an awkward byte boundary to exercise buffering.
    p.Feed(e.data(), 7, t);
    p.Feed(e.data() + 7, e.size() - 7, t);
  }
  RequestRecord r;
  p.Finish(200, 0.35, 3, &r);
  EXPECT_TRUE(r.ok) << r.failure << " " << r.error;
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(p.chunks_with_output(), 3);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.1);
  EXPECT_DOUBLE_EQ(r.e2e_s, 0.35);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.1, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.1, 1e-12);
}

TEST(CompletionStreamParserTest, CrLfSeparatorsAndWholeStreamInOneRead) {
  std::string all;
  for (const auto& e : Stream(2, 2)) {
    std::string crlf;
    for (char c : e) {
      if (c == '\n')
        crlf += "\r\n";
      else
        crlf += c;
    }
    all += crlf;
  }
  CompletionStreamParser p;
  p.Feed(all.data(), all.size(), 0.5);
  RequestRecord r;
  p.Finish(200, 0.6, 2, &r);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(p.done());
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.5);
}

TEST(CompletionStreamParserTest, CountsChunksWithoutUsage) {
  CompletionStreamParser p;
  for (const auto& e : Stream(4, -1)) p.Feed(e.data(), e.size(), 0.2);
  RequestRecord r;
  p.Finish(200, 0.3, 4, &r);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.output_tokens, 4);
}

TEST(CompletionStreamParserTest, DetectsTooFewTokens) {
  CompletionStreamParser p;
  for (const auto& e : Stream(3, 3)) p.Feed(e.data(), e.size(), 0.2);
  RequestRecord r;
  p.Finish(200, 0.3, 5, &r);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failure, "token_count");
  EXPECT_THAT(r.error, testing::HasSubstr("asked for 5 tokens, received 3"));
}

TEST(CompletionStreamParserTest, DetectsEarlyStopMissingDoneAndErrors) {
  {
    CompletionStreamParser p;
    std::string s = Chunk("a") + Chunk("", "stop") + Usage(1) + "data: [DONE]\n\n";
    p.Feed(s.data(), s.size(), 0.1);
    RequestRecord r;
    p.Finish(200, 0.1, 1, &r);
    EXPECT_EQ(r.failure, "finish_reason");
  }
  {
    CompletionStreamParser p;
    std::string s = Chunk("a") + Chunk("", "length");
    p.Feed(s.data(), s.size(), 0.1);
    RequestRecord r;
    p.Finish(200, 0.1, 1, &r);
    EXPECT_EQ(r.failure, "no_done");
  }
  {
    CompletionStreamParser p;
    std::string s =
        Chunk("a") + "data: {\"error\": {\"message\": \"boom\"}}\n\n" + "data: [DONE]\n\n";
    p.Feed(s.data(), s.size(), 0.1);
    RequestRecord r;
    p.Finish(200, 0.1, 1, &r);
    EXPECT_EQ(r.failure, "stream_error");
    EXPECT_THAT(r.error, testing::HasSubstr("boom"));
  }
  {
    CompletionStreamParser p;
    std::string body = "{\"error\": {\"message\": \"queue full\", \"code\": 429}}";
    p.Feed(body.data(), body.size(), 0.01);
    RequestRecord r;
    p.Finish(429, 0.01, 1, &r);
    EXPECT_EQ(r.failure, "http_429");
    EXPECT_THAT(r.error, testing::HasSubstr("queue full"));
  }
}

TEST(CompletionBodyTest, AsksForExactlyTheTraceLengths) {
  ClientOptions o;
  o.model = "m";
  o.seed = 10;
  o.extra_body = {{"top_k", 5}};
  TraceRequest r;
  r.prompt = {3, 4, 5};
  r.input_len = 3;
  r.output_len = 7;
  nlohmann::json b = CompletionBody(o, r, 2);
  EXPECT_EQ(b["prompt"], nlohmann::json({3, 4, 5}));
  EXPECT_EQ(b["max_tokens"], 7);
  EXPECT_EQ(b["ignore_eos"], true);
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_EQ(b["model"], "m");
  EXPECT_EQ(b["seed"], 12);
  EXPECT_EQ(b["top_k"], 5);
  o.nest_prompt = true;
  EXPECT_EQ(CompletionBody(o, r, 0)["prompt"], nlohmann::json({{3, 4, 5}}));
}

}  // namespace
}  // namespace orca::bench
