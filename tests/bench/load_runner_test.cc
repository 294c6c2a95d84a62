// RunLoad and SendCompletion against an in-process fake OpenAI server on loopback.
#include "bench/loadgen/load_runner.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

namespace orca::bench {
namespace {

using nlohmann::json;

// Streams max_tokens one-token chunks `token_ms` apart; a prompt starting with 999
// gets one token less than asked for.
class FakeServer {
 public:
  explicit FakeServer(int token_ms) : token_ms_(token_ms) {
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object":"list","data":[{"id":"fake"}]})", "application/json");
    });
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body);
      int n = body["max_tokens"].get<int>();
      if (body["prompt"][0] == 999) --n;
      const int now = ++active_;
      int prev = max_active_.load();
      while (now > prev && !max_active_.compare_exchange_weak(prev, now)) {
      }
      res.set_chunked_content_provider("text/event-stream", [this, n](size_t,
                                                                      httplib::DataSink& sink) {
        for (int i = 0; i < n; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(token_ms_));
          std::string e =
              "data: " +
              json{{"choices", {{{"index", 0}, {"text", "x"}, {"finish_reason", nullptr}}}}}
                  .dump() +
              "\n\n";
          if (!sink.write(e.data(), e.size())) {
            --active_;
            return false;
          }
        }
        std::string tail =
            "data: " +
            json{{"choices", {{{"index", 0}, {"text", ""}, {"finish_reason", "length"}}}}}.dump() +
            "\n\ndata: " +
            json{{"choices", json::array()}, {"usage", {{"completion_tokens", n}}}}.dump() +
            "\n\ndata: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        --active_;
        sink.done();
        return true;
      });
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int max_active() const { return max_active_; }

 private:
  int token_ms_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> active_{0}, max_active_{0};
};

std::vector<TraceRequest> Trace(int n, double rate, int out_min, int out_max) {
  TraceOptions o;
  o.num_requests = n;
  o.rate = rate;
  o.input_min = 4;
  o.input_max = 8;
  o.output_min = out_min;
  o.output_max = out_max;
  return GenerateTrace(o).value();
}

LoadOptions Options(const FakeServer& s) {
  LoadOptions o;
  o.client.base_url = s.url();
  o.progress_interval_s = 0;
  return o;
}

TEST(LoadRunnerTest, OpenLoopRecordsEveryTokenOfEveryRequest) {
  FakeServer server(1);
  auto trace = Trace(20, 200, 2, 6);
  LoadResult r = RunLoad(trace, Options(server));
  ASSERT_EQ(r.records.size(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    const RequestRecord& rec = r.records[i];
    EXPECT_TRUE(rec.ok) << i << ": " << rec.failure << " " << rec.error;
    EXPECT_EQ(rec.output_tokens, trace[i].output_len);
    EXPECT_EQ(static_cast<int>(rec.itl_s.size()), trace[i].output_len - 1);
    EXPECT_GT(rec.ttft_s, 0);
    EXPECT_GE(rec.e2e_s, rec.ttft_s);
    EXPECT_GE(rec.send_s, trace[i].arrival_s - 1e-3);
  }
  EXPECT_GT(r.duration_s, trace.back().arrival_s);
}

TEST(LoadRunnerTest, ClosedLoopKeepsAtMostCRequestsInFlight) {
  FakeServer server(2);
  LoadOptions o = Options(server);
  o.concurrency = 3;
  LoadResult r = RunLoad(Trace(12, 0, 3, 3), o);
  for (const auto& rec : r.records) EXPECT_TRUE(rec.ok) << rec.error;
  EXPECT_LE(server.max_active(), 3);
  EXPECT_GE(server.max_active(), 2);
}

TEST(LoadRunnerTest, ShortResponsesAndDeadServersAreFailures) {
  FakeServer server(1);
  auto trace = Trace(2, 100, 3, 3);
  trace[1].prompt[0] = 999;  // the server drops one token
  LoadResult r = RunLoad(trace, Options(server));
  EXPECT_TRUE(r.records[0].ok);
  EXPECT_EQ(r.records[1].failure, "token_count");

  LoadOptions dead;
  dead.client.base_url = "http://127.0.0.1:1";
  dead.progress_interval_s = 0;
  LoadResult d = RunLoad(Trace(1, 0, 1, 1), dead);
  EXPECT_FALSE(d.records[0].ok);
  EXPECT_EQ(d.records[0].failure, "connect");
}

TEST(LoadRunnerTest, MaxDurationBoundsTheRun) {
  FakeServer server(40);
  auto trace = Trace(4, 1, 20, 20);  // 0.8 s per request
  for (int i = 0; i < 4; ++i) trace[i].arrival_s = 0.1 * i + (i == 3 ? 5.0 : 0.0);
  LoadOptions o = Options(server);
  o.max_duration_s = 0.4;
  const auto t0 = std::chrono::steady_clock::now();
  LoadResult r = RunLoad(trace, o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 2.0);
  EXPECT_EQ(r.records[0].failure, "timeout");
  EXPECT_EQ(r.records[3].failure, "not_sent");
}

}  // namespace
}  // namespace orca::bench
