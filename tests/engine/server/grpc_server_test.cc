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

}  // namespace
}  // namespace orca
