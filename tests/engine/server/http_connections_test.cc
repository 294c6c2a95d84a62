// HttpServer's connection handling and admission on loopback, in front of a real Engine
// on stories260K (issue 16): slow clients (slowloris) that never finish their request
// header hold no thread and are closed at the header deadline, idle keep-alive
// connections at the idle deadline, a connection over the cap gets 503 at once; and a
// burst that fits into the free batch slots is never refused with 429.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "engine/server/http_server.h"
#include "tests/engine/server/raw_connection.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kJson[] = "application/json";
// Half a request header: the blank line that ends it never comes.
constexpr char kHalfHeader[] = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n";

std::unique_ptr<Engine> MakeEngine(const std::string& dir, int32_t max_waiting_requests,
                                   int32_t max_batch_size) {
  EngineOptions eo;
  eo.model.dir = dir;
  eo.device.threads = 1;
  eo.kv_cache.num_blocks = 256;
  eo.scheduler.max_waiting_requests = max_waiting_requests;
  eo.scheduler.max_batch_size = max_batch_size;
  auto engine = Engine::Create(eo);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

HttpServerOptions BaseOptions() {
  HttpServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.served_model_name = "stories260K";
  o.num_threads = 8;
  o.render_chat = [](const nlohmann::ordered_json&) -> absl::StatusOr<std::string> {
    return std::string("chat");
  };
  return o;
}

using testing::RawConnection;

// Opens `n` connections that each send half a request header and stall.
std::vector<std::unique_ptr<RawConnection>> Stall(int port, int n) {
  std::vector<std::unique_ptr<RawConnection>> conns;
  for (int i = 0; i < n; ++i) {
    auto c = std::make_unique<RawConnection>(port);
    EXPECT_TRUE(c->connected() && c->Send(kHalfHeader)) << "connection " << i;
    conns.push_back(std::move(c));
  }
  return conns;
}

class HttpConnectionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
    dir_ = dir;
  }
  // Starts an engine and a server with `options` in front of it.
  void Start(HttpServerOptions options, int32_t max_waiting_requests = 1024,
             int32_t max_batch_size = 64, bool start_engine = true) {
    engine_ = MakeEngine(dir_, max_waiting_requests, max_batch_size);
    ASSERT_NE(engine_, nullptr);
    if (start_engine) engine_->Start();
    auto server = HttpServer::Create(engine_.get(), std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (engine_) engine_->Stop();
  }
  std::unique_ptr<httplib::Client> Client(int read_timeout_s) {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_connection_timeout(read_timeout_s, 0);
    c->set_read_timeout(read_timeout_s, 0);
    c->set_write_timeout(read_timeout_s, 0);
    return c;
  }

  std::string dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> server_;
};

// Issue 16: 600 clients that never finish their request header used to take every
// connection thread (one per connection, no header deadline), and everyone else waited
// in the accept queue. Now they hold no thread: a normal client is served at once.
TEST_F(HttpConnectionsTest, ServesWhileSixHundredClientsStallInTheirHeaders) {
  Start(BaseOptions());
  auto stalled = Stall(server_->port(), 600);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted

  auto client = Client(/*read_timeout_s=*/3);
  const auto t0 = Clock::now();
  auto health = client->Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto res = client->Post(
      "/v1/completions",
      json{{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}}.dump(), kJson);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["choices"][0]["text"], ", there was a little girl");
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  // The stalled clients are still connected (their deadline is 10 s).
  int open = 0;
  for (auto& c : stalled) open += c->ClosedNow() ? 0 : 1;
  EXPECT_EQ(open, 600);
}

// A header not complete within header_timeout, and a keep-alive connection idle for
// idle_timeout, are closed.
TEST_F(HttpConnectionsTest, StalledHeadersAndIdleConnectionsAreClosedAtTheirDeadlines) {
  HttpServerOptions o = BaseOptions();
  o.header_timeout = std::chrono::milliseconds(1000);
  o.idle_timeout = std::chrono::milliseconds(1500);
  Start(std::move(o));
  const auto t0 = Clock::now();
  auto stalled = Stall(server_->port(), 50);
  RawConnection silent(server_->port());  // connects, never sends a byte
  RawConnection idle(server_->port());
  ASSERT_TRUE(idle.Send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  for (auto& c : stalled) {
    EXPECT_TRUE(c->ReadUntilClosed(std::chrono::milliseconds(4000)))
        << "a stalled header was not closed";
  }
  EXPECT_TRUE(silent.ReadUntilClosed(std::chrono::milliseconds(1000)));
  const auto closed = Clock::now() - t0;
  EXPECT_GE(closed, std::chrono::milliseconds(900));
  std::string answer;
  EXPECT_TRUE(idle.ReadUntilClosed(std::chrono::milliseconds(3000), &answer));
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 200")) << answer;
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(1400));  // after its response
  // And the server goes on serving.
  auto res = Client(3)->Get("/health");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

// Over max_connections, a new connection is answered 503 with Retry-After and closed at
// once; once the stalled ones are closed at their deadline, clients are served again.
TEST_F(HttpConnectionsTest, AConnectionOverTheCapGets503AndIsClosed) {
  HttpServerOptions o = BaseOptions();
  o.max_connections = 20;
  o.header_timeout = std::chrono::milliseconds(1000);
  Start(std::move(o));
  auto stalled = Stall(server_->port(), 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  RawConnection extra(server_->port());
  ASSERT_TRUE(extra.connected());
  ASSERT_TRUE(extra.Send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  std::string answer;
  EXPECT_TRUE(extra.ReadUntilClosed(std::chrono::milliseconds(500), &answer));
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 503")) << answer;
  EXPECT_TRUE(absl::StrContains(answer, "Retry-After: 1")) << answer;
  EXPECT_TRUE(absl::StrContains(answer, "service_unavailable_error")) << answer;

  for (auto& c : stalled) EXPECT_TRUE(c->ReadUntilClosed(std::chrono::milliseconds(4000)));
  auto res = Client(3)->Get("/health");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
}

// Issue 16: a burst was refused with 429 while batch slots were free, because requests
// waiting for the next iteration counted as queued. With 64 slots and room for one
// request beyond them, a burst of 20 is all accepted (the engine starts only after it
// arrived, so that every request is still waiting when the next one comes).
TEST_F(HttpConnectionsTest, ABurstThatFitsTheFreeBatchSlotsIsNotRefused) {
  Start(BaseOptions(), /*max_waiting_requests=*/1, /*max_batch_size=*/64,
        /*start_engine=*/false);
  constexpr int kBurst = 20;
  std::vector<int> status(kBurst, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kBurst; ++i) {
    clients.emplace_back([&, i] {
      auto res = Client(60)->Post(
          "/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 4}}.dump(), kJson);
      status[i] = res ? res->status : -1;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  engine_->Start();
  for (auto& t : clients) t.join();
  for (int i = 0; i < kBurst; ++i) EXPECT_EQ(status[i], 200) << "request " << i;
}

// The bound itself: with the engine stopped (nothing admitted), 64 requests fill the
// free slots, one more may wait beyond them, the next is refused.
TEST_F(HttpConnectionsTest, TheWaitingBoundCountsOnlyRequestsBeyondTheFreeSlots) {
  engine_ = MakeEngine(dir_, /*max_waiting_requests=*/1, /*max_batch_size=*/64);
  ASSERT_NE(engine_, nullptr);
  auto submit = [&] {
    GenerateParams p;
    p.prompt_tokens = engine_->tokenizer().Encode("Once", true);
    p.max_tokens = 2;
    return engine_->Submit(std::move(p)).status();
  };
  for (int i = 0; i < 65; ++i) ASSERT_TRUE(submit().ok()) << "request " << i;
  const absl::Status refused = submit();
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
}

}  // namespace
}  // namespace orca
