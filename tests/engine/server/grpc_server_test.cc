// orca.v1.Inference/Generate against an in-process engine on stories260K, through a
// real gRPC channel on loopback.
#include "engine/server/grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <thread>

#include "orca/v1/inference.grpc.pb.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

class GrpcServerTest : public ::testing::Test {
 protected:
  // The api key the server requires ("" = none).
  virtual std::string ApiKey() const { return ""; }

  void SetUp() override {
    auto dir = orca::testing::SharedModelDir("stories260K");
    if (!dir) {
      if (orca::testing::InCi()) FAIL() << "stories260K missing in CI";
      GTEST_SKIP() << "models/stories260K not found";
    }
    EngineOptions eo;
    eo.model.dir = *dir;
    eo.kv_cache.num_blocks = 256;
    eo.device.threads = 1;
    auto engine = Engine::Create(eo);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = std::move(*engine);
    engine_->Start();
    GrpcServerOptions go;
    go.address = "127.0.0.1:0";
    go.served_model_name = "stories260K";
    go.api_key = ApiKey();
    auto server = GrpcServer::Start(engine_.get(), go);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                       grpc::InsecureChannelCredentials());
    stub_ = v1::Inference::NewStub(channel);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (engine_) engine_->Stop();
  }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<v1::Inference::Stub> stub_;
};

TEST_F(GrpcServerTest, StreamsTheGreedyContinuation) {
  v1::GenerateRequest req;
  req.set_text("Once upon a time");
  req.set_max_tokens(8);
  req.mutable_sampling()->set_temperature(0);
  req.set_logprobs(1);
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, req);
  v1::GenerateResponse resp;
  std::string text;
  int messages = 0, tokens = 0;
  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED;
  v1::Usage usage;
  while (reader->Read(&resp)) {
    ++messages;
    text += resp.text();
    tokens += resp.token_ids_size();
    ASSERT_EQ(resp.logprobs_size(), resp.token_ids_size());
    if (resp.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
      finish = resp.finish_reason();
      usage = resp.usage();
    }
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(text, ", there was a little girl");
  EXPECT_EQ(tokens, 8);
  EXPECT_GE(messages, 8);
  EXPECT_EQ(finish, v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(usage.prompt_tokens(), 5);
  EXPECT_EQ(usage.completion_tokens(), 8);
}

// prompt_logprobs over gRPC: the prompt's tokens 1..4 scored (ranks, top N) before or
// with the first token id; "Once upon a time" is the model's own favourite start.
TEST_F(GrpcServerTest, ScoresThePromptWhenAsked) {
  v1::GenerateRequest req;
  req.mutable_token_ids()->add_ids(1);
  for (int32_t id : {403, 407, 261, 378}) req.mutable_token_ids()->add_ids(id);
  req.set_max_tokens(2);
  req.mutable_sampling()->set_temperature(0);
  req.set_prompt_logprobs(2);
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, req);
  v1::GenerateResponse resp;
  std::vector<v1::TokenLogprob> scored;
  bool token_seen = false;
  while (reader->Read(&resp)) {
    if (token_seen) {
      EXPECT_EQ(resp.prompt_logprobs_size(), 0) << "scores after the first token";
    }
    scored.insert(scored.end(), resp.prompt_logprobs().begin(), resp.prompt_logprobs().end());
    token_seen |= resp.token_ids_size() > 0;
  }
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_EQ(scored.size(), 4u);
  const int32_t expected[] = {403, 407, 261, 378};
  for (size_t i = 0; i < scored.size(); ++i) {
    EXPECT_EQ(scored[i].token_id(), expected[i]);
    EXPECT_LT(scored[i].logprob(), 0.0f);
    EXPECT_EQ(scored[i].rank(), 1) << i;
    ASSERT_EQ(scored[i].top_size(), 2);
    EXPECT_EQ(scored[i].top(0).token_id(), expected[i]);
  }
  v1::GenerateRequest bad = req;
  bad.set_prompt_logprobs(21);
  grpc::ClientContext bad_ctx;
  auto bad_reader = stub_->Generate(&bad_ctx, bad);
  while (bad_reader->Read(&resp)) {
  }
  EXPECT_EQ(bad_reader->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(GrpcServerTest, RejectsInvalidRequestsWithTheHttpRules) {
  auto code_of = [&](const v1::GenerateRequest& req) {
    grpc::ClientContext ctx;
    auto reader = stub_->Generate(&ctx, req);
    v1::GenerateResponse resp;
    while (reader->Read(&resp)) {
    }
    return reader->Finish().error_code();
  };
  v1::GenerateRequest none;
  EXPECT_EQ(code_of(none), grpc::StatusCode::INVALID_ARGUMENT);
  v1::GenerateRequest bad_temp;
  bad_temp.set_text("hi");
  bad_temp.mutable_sampling()->set_temperature(-1);
  EXPECT_EQ(code_of(bad_temp), grpc::StatusCode::INVALID_ARGUMENT);
  v1::GenerateRequest too_long;
  too_long.set_text("hi");
  too_long.set_max_tokens(100000);
  EXPECT_EQ(code_of(too_long), grpc::StatusCode::INVALID_ARGUMENT);
  v1::GenerateRequest bad_ids;
  bad_ids.mutable_token_ids()->add_ids(999999);
  EXPECT_EQ(code_of(bad_ids), grpc::StatusCode::INVALID_ARGUMENT);
  v1::GenerateRequest unknown_model;
  unknown_model.set_text("hi");
  unknown_model.set_model("gpt-9");
  EXPECT_EQ(code_of(unknown_model), grpc::StatusCode::NOT_FOUND);
}

TEST_F(GrpcServerTest, CancelledCallsFreeTheirBlocks) {
  for (int i = 0; i < 8; ++i) {
    v1::GenerateRequest req;
    req.set_text("Once upon a time");
    req.set_max_tokens(500);
    req.set_ignore_eos(true);
    grpc::ClientContext ctx;
    auto reader = stub_->Generate(&ctx, req);
    v1::GenerateResponse resp;
    ASSERT_TRUE(reader->Read(&resp));
    ctx.TryCancel();
    while (reader->Read(&resp)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  for (int k = 0;
       k < 200 && (engine_->Snapshot().kv_cache_usage > 0 || engine_->Snapshot().num_running > 0);
       ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(engine_->Snapshot().kv_cache_usage, 0.0);
  EXPECT_EQ(engine_->Snapshot().num_running, 0);
}

// Shutdown (orca serve on SIGTERM): once BeginShutdown() is called new calls fail
// UNAVAILABLE, and when the engine stops, an open call fails UNAVAILABLE too (retriable),
// rather than ending as if it had finished (an ABORT finish reason with status OK).
TEST_F(GrpcServerTest, ShutdownFailsOpenAndNewCallsUnavailable) {
  v1::GenerateRequest req;
  req.set_text("Once upon a time");
  req.set_max_tokens(480);
  req.set_ignore_eos(true);
  grpc::ClientContext ctx;
  auto reader = stub_->Generate(&ctx, req);
  v1::GenerateResponse resp;
  ASSERT_TRUE(reader->Read(&resp));
  server_->BeginShutdown();
  engine_->Stop();
  int more = 0;
  while (reader->Read(&resp)) ++more;
  grpc::Status open = reader->Finish();
  EXPECT_EQ(open.error_code(), grpc::StatusCode::UNAVAILABLE)
      << open.error_message() << " after " << more << " more messages";

  grpc::ClientContext late_ctx;
  auto late = stub_->Generate(&late_ctx, req);
  while (late->Read(&resp)) {
  }
  EXPECT_EQ(late->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// The drain (orca serve on SIGTERM): after BeginShutdown() a call admitted before goes
// on to its end (counted by open_requests() until then) while new calls fail
// UNAVAILABLE, with the engine still running.
TEST_F(GrpcServerTest, BeginShutdownLetsOpenCallsFinishAndRefusesNewOnes) {
  // A client with a 1 KiB HTTP/2 window and a 480-token stream: while it does not read,
  // the server's writes wait for window long before the stream's end, so the call stays
  // open whatever the machine's load (64 tokens could all be written into the default
  // window before the first Read, and the call count as closed).
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 1024);
  auto slow_stub = v1::Inference::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials(), args));
  v1::GenerateRequest req;
  req.set_text("Once upon a time");
  req.set_max_tokens(480);
  req.set_ignore_eos(true);
  grpc::ClientContext ctx;
  auto reader = slow_stub->Generate(&ctx, req);
  v1::GenerateResponse resp;
  ASSERT_TRUE(reader->Read(&resp));
  // Longer than the whole stream takes when nothing holds it back.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(server_->open_requests(), 1);
  server_->BeginShutdown();

  grpc::ClientContext late_ctx;
  auto late = stub_->Generate(&late_ctx, req);
  v1::GenerateResponse late_resp;
  while (late->Read(&late_resp)) {
  }
  EXPECT_EQ(late->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(server_->open_requests(), 1);

  int tokens = resp.token_ids_size();
  v1::FinishReason finish = resp.finish_reason();
  while (reader->Read(&resp)) {
    tokens += resp.token_ids_size();
    finish = resp.finish_reason();
  }
  grpc::Status open = reader->Finish();
  EXPECT_TRUE(open.ok()) << open.error_message();
  EXPECT_EQ(tokens, 480);
  EXPECT_EQ(finish, v1::FINISH_REASON_LENGTH);
  for (int i = 0; i < 500 && server_->open_requests() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_->open_requests(), 0);
}

// --api-key-file used to protect only the HTTP API: Generate on the gRPC port (0.0.0.0 by
// default) generated for anyone. Every transport now asks the same Authenticator.
class GrpcServerWithKeyTest : public GrpcServerTest {
 protected:
  std::string ApiKey() const override { return "sekret-key"; }

  // Runs a short Generate with `authorization` metadata (none when empty).
  grpc::Status Generate(const std::string& authorization, int* tokens) {
    v1::GenerateRequest req;
    req.set_text("Once upon a time");
    req.set_max_tokens(4);
    grpc::ClientContext ctx;
    if (!authorization.empty()) ctx.AddMetadata("authorization", authorization);
    auto reader = stub_->Generate(&ctx, req);
    v1::GenerateResponse resp;
    *tokens = 0;
    while (reader->Read(&resp)) *tokens += resp.token_ids_size();
    return reader->Finish();
  }
};

TEST_F(GrpcServerWithKeyTest, GenerateRequiresTheApiKey) {
  int tokens = 0;
  grpc::Status missing = Generate("", &tokens);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED) << missing.error_message();
  EXPECT_EQ(tokens, 0);
  grpc::Status wrong = Generate("Bearer not-it", &tokens);
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED) << wrong.error_message();
  EXPECT_EQ(tokens, 0);
  EXPECT_EQ(wrong.error_message().find("sekret"), std::string::npos) << "the key leaked";
  grpc::Status prefix = Generate("Bearer sekret", &tokens);
  EXPECT_EQ(prefix.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status bare = Generate("sekret-key", &tokens);  // no "Bearer"
  EXPECT_EQ(bare.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  grpc::Status keyed = Generate("Bearer sekret-key", &tokens);
  EXPECT_TRUE(keyed.ok()) << keyed.error_message();
  EXPECT_EQ(tokens, 4);
}

}  // namespace
}  // namespace orca
