// The public endpoints' transport security and per-client limit (docs/security.md), on
// loopback in front of a real Engine on stories260K:
//   - TLS (server.tls_cert_file / tls_key_file): a CA and a server certificate for
//     127.0.0.1 are made here with the openssl CLI; curl (an independent TLS client)
//     completes over HTTPS with that CA and refuses the server without it; keep-alive,
//     streaming and concurrent clients work over TLS; idle TLS connections hold no
//     thread; a plain HTTP request to the TLS port gets a plain 400 and a closed
//     connection; gRPC works over TLS with the CA and fails without TLS. Bad files give
//     errors naming them.
//   - server.max_concurrent_per_client: one client's request beyond the limit gets 429
//     (rate_limit_error, Retry-After) on HTTP and RESOURCE_EXHAUSTED on gRPC, the two
//     sharing one budget; probes are exempt; the place is free again once the answer is
//     written. An engine whose loop has not started keeps requests open
//     deterministically.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "engine/server/client_limiter.h"
#include "engine/server/grpc_server.h"
#include "engine/server/http_server.h"
#include "engine/server/tls_credentials.h"
#include "orca/v1/inference.grpc.pb.h"
#include "tests/engine/server/raw_connection.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using json = nlohmann::json;

constexpr char kJson[] = "application/json";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A CA, a server certificate it signed for 127.0.0.1 / localhost, the server's key, and
// another key; made once for the suite with the openssl CLI.
struct Pki {
  testing::TempDir dir;
  std::string ca() const { return dir.file("ca.crt"); }
  std::string cert() const { return dir.file("server.crt"); }
  std::string key() const { return dir.file("server.key"); }
  std::string other_key() const { return dir.file("other.key"); }
  std::string encrypted_key() const { return dir.file("encrypted.key"); }
  bool ok = false;
};

const Pki& TestPki() {
  static Pki* pki = [] {
    auto* p = new Pki();
    const std::string d = p->dir.path();
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    std::ofstream(d + "/ext.cnf") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    const std::string script = absl::StrCat(
        "cd ", d, " && openssl req -x509 ", ec,
        " -keyout ca.key -out ca.crt -days 2 -subj /CN=orca-test-ca 2>&1", " && openssl req ", ec,
        " -keyout server.key -out server.csr -subj /CN=localhost 2>&1",
        " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial",
        " -out server.crt -days 2 -extfile ext.cnf 2>&1",
        " && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1",
        " -out other.key 2>&1",
        " && openssl pkcs8 -topk8 -in server.key -out encrypted.key -passout pass:pw 2>&1");
    std::string out;
    p->ok = testing::RunCommand(script, &out) == 0;
    EXPECT_TRUE(p->ok) << out;
    return p;
  }();
  return *pki;
}

// Runs `command`; returns its stdout, and its exit code in `code`.
std::string RunShell(const std::string& command, int* code) {
  std::string out;
  *code = testing::RunCommand(command, &out);
  return out;
}

std::unique_ptr<Engine> MakeEngine(const std::string& dir) {
  EngineOptions eo;
  eo.model.dir = dir;
  eo.device.threads = 1;
  eo.kv_cache.num_blocks = 256;
  auto engine = Engine::Create(eo);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

HttpServerOptions BaseOptions() {
  HttpServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.served_model_name = "stories260K";
  o.num_threads = 4;
  o.render_chat = [](const nlohmann::ordered_json&) -> absl::StatusOr<std::string> {
    return std::string("chat");
  };
  return o;
}

std::unique_ptr<HttpServer> StartHttp(Engine* engine, HttpServerOptions options) {
  auto server = HttpServer::Create(engine, std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  absl::Status started = (*server)->Start();
  EXPECT_TRUE(started.ok()) << started;
  return started.ok() ? std::move(*server) : nullptr;
}

std::optional<TlsCredentials> LoadTestCredentials() {
  auto c = LoadTlsCredentials(TestPki().cert(), TestPki().key());
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : std::nullopt;
}

using testing::RawConnection;

// ---------------------------------------------------------------------------------------
// Loading the certificate and key.

TEST(TlsCredentialsTest, AValidPairLoadsAndNeitherFileMeansOff) {
  ASSERT_TRUE(TestPki().ok);
  auto c = LoadTlsCredentials(TestPki().cert(), TestPki().key());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->has_value());
  EXPECT_TRUE(absl::StrContains((*c)->cert_pem, "BEGIN CERTIFICATE"));
  auto off = LoadTlsCredentials("", "");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->has_value());
}

TEST(TlsCredentialsTest, BadFilesAreClearErrorsNamingThem) {
  ASSERT_TRUE(TestPki().ok);
  const Pki& pki = TestPki();
  // One without the other.
  for (auto [cert, key] : {std::pair<std::string, std::string>{pki.cert(), ""},
                           std::pair<std::string, std::string>{"", pki.key()}}) {
    auto c = LoadTlsCredentials(cert, key);
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
    EXPECT_TRUE(absl::StrContains(c.status().message(), "server.tls_cert_file")) << c.status();
    EXPECT_TRUE(absl::StrContains(c.status().message(), "server.tls_key_file")) << c.status();
  }
  // A file that is not there.
  auto missing = LoadTlsCredentials(pki.dir.file("absent.crt"), pki.key());
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "absent.crt")) << missing.status();
  // Not PEM: a key where the certificate should be, and the other way round.
  auto swapped = LoadTlsCredentials(pki.key(), pki.cert());
  EXPECT_TRUE(absl::IsInvalidArgument(swapped.status())) << swapped.status();
  EXPECT_TRUE(absl::StrContains(swapped.status().message(), pki.key())) << swapped.status();
  EXPECT_TRUE(absl::StrContains(swapped.status().message(), "no PEM certificate"));
  auto no_key = LoadTlsCredentials(pki.cert(), pki.ca());
  EXPECT_TRUE(absl::IsInvalidArgument(no_key.status())) << no_key.status();
  EXPECT_TRUE(absl::StrContains(no_key.status().message(), pki.ca())) << no_key.status();
  // A key of another certificate.
  auto mismatch = LoadTlsCredentials(pki.cert(), pki.other_key());
  EXPECT_TRUE(absl::IsInvalidArgument(mismatch.status())) << mismatch.status();
  EXPECT_TRUE(absl::StrContains(mismatch.status().message(), "does not belong"));
  EXPECT_TRUE(absl::StrContains(mismatch.status().message(), pki.other_key()));
  EXPECT_TRUE(absl::StrContains(mismatch.status().message(), pki.cert()));
  // An encrypted key is refused at once (no password prompt on the terminal).
  auto encrypted = LoadTlsCredentials(pki.cert(), pki.encrypted_key());
  EXPECT_TRUE(absl::IsInvalidArgument(encrypted.status())) << encrypted.status();
  EXPECT_TRUE(absl::StrContains(encrypted.status().message(), "unencrypted"));
}

// ---------------------------------------------------------------------------------------
// HTTPS.

class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
    ASSERT_TRUE(TestPki().ok);
    engine_ = MakeEngine(dir);
    ASSERT_NE(engine_, nullptr);
    engine_->Start();
    HttpServerOptions o = BaseOptions();
    o.tls = LoadTestCredentials();
    ASSERT_TRUE(o.tls.has_value());
    server_ = StartHttp(engine_.get(), std::move(o));
    ASSERT_NE(server_, nullptr);
    base_ = absl::StrCat("https://127.0.0.1:", server_->port());
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (engine_) engine_->Stop();
  }

  // curl with the test CA, a deadline, and the body's status code appended.
  std::string Curl(const std::string& args, int* code) {
    return RunShell(absl::StrCat("curl -sS --max-time 30 --cacert ", TestPki().ca(), " ", args),
                    code);
  }
  std::string CompletionArgs(const json& body) {
    return absl::StrCat("-H 'Content-Type: application/json' -d '", body.dump(), "' ", base_,
                        "/v1/completions");
  }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> server_;
  std::string base_;
};

TEST_F(HttpsTest, CurlCompletesWithTheCaAndRefusesTheServerWithoutIt) {
  int code = 0;
  const std::string health = Curl(base_ + "/health", &code);
  EXPECT_EQ(code, 0) << health;
  EXPECT_EQ(health, R"({"status":"ok"})");
  const std::string out =
      Curl(CompletionArgs({{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}}),
           &code);
  ASSERT_EQ(code, 0) << out;
  json j = json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["object"], "text_completion") << out;
  EXPECT_EQ(j["choices"][0]["text"], ", there was a little girl") << out;
  // Without the CA the client cannot trust the server (curl: exit 60).
  std::string refused =
      RunShell(absl::StrCat("curl -sS --max-time 30 ", base_, "/health 2>&1"), &code);
  EXPECT_EQ(code, 60) << refused;
}

TEST_F(HttpsTest, KeepAliveStreamingAndConcurrentClientsWorkOverTls) {
  int code = 0;
  // Two requests, one connection (curl reuses it: the second needs no new connect).
  const std::string two =
      Curl(absl::StrCat("-w ' connects=%{num_connects}\\n' ", base_, "/health ", base_, "/ready"),
           &code);
  ASSERT_EQ(code, 0) << two;
  EXPECT_TRUE(absl::StrContains(two, R"({"status":"ok"} connects=1)")) << two;
  EXPECT_TRUE(absl::StrContains(two, R"({"status":"ready"} connects=0)")) << two;
  // A stream ends in [DONE].
  const std::string stream = Curl(
      "-N " + CompletionArgs({{"prompt", "Once"}, {"max_tokens", 6}, {"stream", true}}), &code);
  ASSERT_EQ(code, 0) << stream;
  EXPECT_TRUE(absl::EndsWith(stream, "data: [DONE]\n\n")) << stream;
  // 16 requests, 8 at a time.
  const std::string many = RunShell(
      absl::StrCat("seq 16 | xargs -P 8 -I{} curl -sS --max-time 60 --cacert ", TestPki().ca(),
                   " -o /dev/null -w '%{http_code}\\n' -H 'Content-Type: application/json' -d '",
                   json{{"prompt", "Tom"}, {"max_tokens", 4}}.dump(), "' ", base_,
                   "/v1/completions"),
      &code);
  EXPECT_EQ(code, 0) << many;
  std::vector<std::string> codes = absl::StrSplit(many, '\n', absl::SkipEmpty());
  EXPECT_EQ(codes, std::vector<std::string>(16, "200")) << many;
}

// Connections that never start their handshake wait without a thread: with more of them
// than worker threads, a real client is still served.
TEST_F(HttpsTest, IdleTlsConnectionsHoldNoThread) {
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 12; ++i) {  // three times the server's 4 threads
    idle.push_back(std::make_unique<RawConnection>(server_->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  int code = 0;
  const std::string health = Curl(base_ + "/health", &code);
  EXPECT_EQ(code, 0) << health;
  EXPECT_EQ(health, R"({"status":"ok"})");
}

TEST_F(HttpsTest, PlainHttpToTheTlsPortIsAnswered400AndClosed) {
  RawConnection plain(server_->port());
  ASSERT_TRUE(plain.connected());
  ASSERT_TRUE(plain.Send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  bool closed = false;
  const std::string answer = plain.ReadAll(&closed);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 400 ")) << answer;
  EXPECT_TRUE(absl::StrContains(answer, "HTTPS only")) << answer;
  EXPECT_TRUE(closed) << "the connection must be closed, not left hanging";
  // cpp-httplib's plain client sees an error or that 400, never a hang.
  httplib::Client client("127.0.0.1", server_->port());
  client.set_read_timeout(10, 0);
  auto res = client.Get("/health");
  EXPECT_TRUE(!res || res->status == 400);
  // The server goes on serving HTTPS.
  int code = 0;
  EXPECT_EQ(Curl(base_ + "/health", &code), R"({"status":"ok"})");
  EXPECT_EQ(code, 0);
}

// ---------------------------------------------------------------------------------------
// gRPC over TLS.

TEST(GrpcTlsTest, GeneratesOverTlsWithTheCaAndRefusesPlaintext) {
  ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
  ASSERT_TRUE(TestPki().ok);
  auto engine = MakeEngine(dir);
  ASSERT_NE(engine, nullptr);
  engine->Start();
  GrpcServerOptions go;
  go.address = "127.0.0.1:0";
  go.served_model_name = "stories260K";
  go.tls = LoadTestCredentials();
  auto server = GrpcServer::Start(engine.get(), go);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = absl::StrCat("127.0.0.1:", (*server)->port());

  v1::GenerateRequest req;
  req.set_text("Once upon a time");
  req.set_max_tokens(8);
  req.mutable_sampling()->set_temperature(0);
  auto generate = [&req](const std::shared_ptr<grpc::Channel>& channel, std::string* text) {
    auto stub = v1::Inference::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto reader = stub->Generate(&ctx, req);
    v1::GenerateResponse resp;
    while (reader->Read(&resp)) *text += resp.text();
    return reader->Finish();
  };
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadAll(TestPki().ca());
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("localhost");  // the certificate's name; dialed by IP
  std::string text;
  grpc::Status s =
      generate(grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args), &text);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(text, ", there was a little girl");

  std::string none;
  grpc::Status plain =
      generate(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()), &none);
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.error_message();
  EXPECT_TRUE(none.empty());
  (*server)->Stop();
  engine->Stop();
}

// ---------------------------------------------------------------------------------------
// server.max_concurrent_per_client.

class ClientLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
    engine_ = MakeEngine(dir);  // not started: requests stay open until Start()
    ASSERT_NE(engine_, nullptr);
    limiter_ = std::make_shared<ClientLimiter>(1);
    HttpServerOptions o = BaseOptions();
    o.client_limiter = limiter_;
    http_ = StartHttp(engine_.get(), o);
    ASSERT_NE(http_, nullptr);
    GrpcServerOptions go;
    go.address = "127.0.0.1:0";
    go.served_model_name = "stories260K";
    go.client_limiter = limiter_;  // one budget for both transports
    auto grpc = GrpcServer::Start(engine_.get(), go);
    ASSERT_TRUE(grpc.ok()) << grpc.status();
    grpc_ = std::move(*grpc);
    stub_ = v1::Inference::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_->port()),
                                                       grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (engine_) engine_->Start();  // lets what is still open finish
    if (grpc_) grpc_->Stop();
    if (http_) http_->Stop();
    if (engine_) engine_->Stop();
  }

  httplib::Result Post(const json& body) {
    httplib::Client c("127.0.0.1", http_->port());
    c.set_read_timeout(60, 0);
    return c.Post("/v1/completions", body.dump(), kJson);
  }
  grpc::Status Generate(int max_tokens, std::string* text = nullptr) {
    v1::GenerateRequest req;
    req.set_text("Once upon a time");
    req.set_max_tokens(max_tokens);
    req.mutable_sampling()->set_temperature(0);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto reader = stub_->Generate(&ctx, req);
    v1::GenerateResponse resp;
    while (reader->Read(&resp)) {
      if (text != nullptr) *text += resp.text();
    }
    return reader->Finish();
  }
  // Waits until 127.0.0.1 has `n` requests open.
  bool OpenBecomes(int n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (limiter_->open("127.0.0.1") != n) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return true;
  }

  std::unique_ptr<Engine> engine_;
  std::shared_ptr<ClientLimiter> limiter_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<v1::Inference::Stub> stub_;
};

TEST_F(ClientLimitTest, AnOpenHttpStreamMakesTheNextRequest429UntilItIsWritten) {
  auto first = std::async(std::launch::async, [this] {
    return Post({{"prompt", "Once"}, {"max_tokens", 4}, {"stream", true}});
  });
  ASSERT_TRUE(OpenBecomes(1));
  auto res = Post({{"prompt", "Once"}, {"max_tokens", 2}});
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
  json e = json::parse(res->body, nullptr, false);
  ASSERT_TRUE(e.is_object()) << res->body;
  EXPECT_EQ(e["error"]["type"], "rate_limit_error") << res->body;
  EXPECT_EQ(e["error"]["code"], "rate_limit_exceeded") << res->body;
  // The same client over gRPC: the budget is shared.
  EXPECT_EQ(Generate(2).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Probes are exempt.
  httplib::Client probe("127.0.0.1", http_->port());
  auto health = probe.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(limiter_->open("127.0.0.1"), 1) << "refused requests took nothing";

  engine_->Start();
  auto done = first.get();
  ASSERT_TRUE(done) << httplib::to_string(done.error());
  EXPECT_EQ(done->status, 200);
  EXPECT_TRUE(absl::EndsWith(done->body, "data: [DONE]\n\n")) << done->body;
  ASSERT_TRUE(OpenBecomes(0)) << "the place is given back once the stream is written";
  auto next = Post({{"prompt", "Once"}, {"max_tokens", 2}});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
}

TEST_F(ClientLimitTest, AnOpenGrpcCallMakesTheNextOneResourceExhausted) {
  auto first = std::async(std::launch::async, [this] {
    std::string text;
    grpc::Status s = Generate(8, &text);
    return std::make_pair(s, text);
  });
  ASSERT_TRUE(OpenBecomes(1));
  grpc::Status second = Generate(2);
  EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << second.error_message();
  EXPECT_TRUE(absl::StrContains(second.error_message(), "server.max_concurrent_per_client"));
  auto res = Post({{"prompt", "Once"}, {"max_tokens", 2}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);

  engine_->Start();
  auto [status, text] = first.get();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(text, ", there was a little girl");
  ASSERT_TRUE(OpenBecomes(0));
  EXPECT_TRUE(Generate(2).ok());
}

}  // namespace
}  // namespace orca
