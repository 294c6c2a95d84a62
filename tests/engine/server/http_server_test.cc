// HttpServer in-process on 127.0.0.1 (a free port) in front of a real Engine on
// stories260K, talked to with cpp-httplib's client: the endpoints, greedy and streamed
// completions against the engine itself, and the OpenAI error answers.
#include "engine/server/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/engine/server/raw_connection.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using json = nlohmann::json;

constexpr char kModel[] = "stories260K";
constexpr char kJson[] = "application/json";

std::unique_ptr<Engine> MakeEngine(const std::string& dir, int32_t max_waiting_requests = 1024,
                                   int32_t max_batch_size = 64) {
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
  o.served_model_name = kModel;
  o.num_threads = 8;
  o.render_chat = [](const nlohmann::ordered_json& ctx) -> absl::StatusOr<std::string> {
    std::string text;
    for (const auto& m : ctx["messages"]) {
      text += m["role"].get<std::string>() + ": " + m["content"].get<std::string>() + "\n";
    }
    return text;
  };
  return o;
}

std::unique_ptr<HttpServer> StartServer(Engine* engine, HttpServerOptions options) {
  auto server = HttpServer::Create(engine, std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  absl::Status started = (*server)->Start();
  EXPECT_TRUE(started.ok()) << started;
  return started.ok() ? std::move(*server) : nullptr;
}

std::unique_ptr<httplib::Client> ClientFor(const HttpServer& server) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", server.port());
  c->set_read_timeout(60, 0);
  c->set_write_timeout(10, 0);
  return c;
}

// Checks that `body` is an OpenAI error object with `param`; returns it.
json ExpectErrorObject(const std::string& body, const json& param) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object() && j.contains("error")) << body;
  if (!j.is_object() || !j.contains("error")) return json::object();
  const json& e = j["error"];
  for (const char* key : {"message", "type", "param", "code"}) {
    EXPECT_TRUE(e.contains(key)) << key << " missing in " << body;
  }
  EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty()) << body;
  EXPECT_EQ(e["param"], param) << body;
  return e;
}

using testing::RawConnection;

std::string Chunk(const std::string& data) {
  char size[32];
  snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ORCA_REQUIRE_SHARED_MODEL(dir, "stories260K");
    dir_ = dir;
    engine_ = MakeEngine(dir);
    ASSERT_NE(engine_, nullptr);
    engine_->Start();
    HttpServerOptions o = BaseOptions();
    o.max_body_bytes = 4096;
    o.ready = [this] { return ready_.load(); };
    server_ = StartServer(engine_.get(), std::move(o));
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(server_->port(), 0);
    client_ = ClientFor(*server_);
    // Some tests never talk to this server; a request makes sure its listener thread
    // runs before TearDown stops it (see DISABLED_StopRightAfterStartReturns).
    auto health = client_->Get("/health");
    ASSERT_TRUE(health) << httplib::to_string(health.error());
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    if (engine_) engine_->Stop();
  }

  httplib::Result PostJson(const std::string& path, const json& body) {
    return client_->Post(path.c_str(), body.dump(), kJson);
  }

  // The greedy continuation of `prompt` through the Engine directly.
  std::string EngineGreedyText(const std::string& prompt, int max_tokens) {
    GenerateParams p;
    p.prompt_tokens = engine_->tokenizer().Encode(prompt, /*add_special_tokens=*/true);
    p.max_tokens = max_tokens;
    p.sampling.temperature = 0;
    auto stream = engine_->Submit(std::move(p));
    EXPECT_TRUE(stream.ok()) << stream.status();
    if (!stream.ok()) return "";
    std::string text;
    StreamEvent ev;
    do {
      if (!(*stream)->Pop(&ev, absl::Seconds(60))) {
        ADD_FAILURE() << "no event for 60 s";
        return text;
      }
      text += ev.text;
    } while (!ev.finished);
    return text;
  }

  std::string dir_;
  std::atomic<bool> ready_{true};
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, HealthAndReady) {
  auto health = client_->Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");

  auto ready = client_->Get("/ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);

  ready_ = false;
  auto not_ready = client_->Get("/ready");
  ASSERT_TRUE(not_ready);
  EXPECT_EQ(not_ready->status, 503);
  // The liveness probe does not depend on the group.
  auto still_healthy = client_->Get("/health");
  ASSERT_TRUE(still_healthy);
  EXPECT_EQ(still_healthy->status, 200);
}

TEST_F(HttpServerTest, CompletionsAnswer503WithRetryAfterWhileNotReady) {
  ready_ = false;
  auto res = PostJson("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 4}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_TRUE(res->has_header("Retry-After"));
  EXPECT_FALSE(res->get_header_value("Retry-After").empty());
  ExpectErrorObject(res->body, nullptr);  // the type string is not pinned here
}

TEST_F(HttpServerTest, ListsTheServedModel) {
  auto res = client_->Get("/v1/models");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  json j = json::parse(res->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], kModel);
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["max_model_len"], engine_->max_model_len());
}

TEST_F(HttpServerTest, GreedyCompletionEqualsTheEngineDirectly) {
  const std::string reference = EngineGreedyText("Once upon a time", 8);
  ASSERT_FALSE(reference.empty());
  auto res = PostJson(
      "/v1/completions",
      {{"model", kModel}, {"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  json j = json::parse(res->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], kModel);
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["text"], reference);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(j["usage"]["completion_tokens"], 8);
}

TEST_F(HttpServerTest, StreamsServerSentEventsEndingInDone) {
  const std::string reference = EngineGreedyText("Once upon a time", 8);
  auto res = PostJson(
      "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}, {"stream", true}});
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_TRUE(absl::StartsWith(res->get_header_value("Content-Type"), "text/event-stream"));
  ASSERT_TRUE(absl::EndsWith(res->body, "\n\n")) << res->body;
  std::vector<std::string> frames =
      absl::StrSplit(res->body.substr(0, res->body.size() - 2), "\n\n");
  ASSERT_GE(frames.size(), 3u) << res->body;
  EXPECT_EQ(frames.back(), "data: [DONE]");
  std::string text;
  std::string finish_reason;
  for (size_t i = 0; i + 1 < frames.size(); ++i) {
    ASSERT_TRUE(absl::StartsWith(frames[i], "data: ")) << frames[i];
    json chunk = json::parse(frames[i].substr(6), nullptr, false);
    ASSERT_FALSE(chunk.is_discarded()) << frames[i];
    EXPECT_EQ(chunk["object"], "text_completion");
    ASSERT_EQ(chunk["choices"].size(), 1u) << frames[i];
    text += chunk["choices"][0]["text"].get<std::string>();
    if (chunk["choices"][0]["finish_reason"].is_string()) {
      EXPECT_TRUE(finish_reason.empty()) << "two frames carry a finish_reason";
      finish_reason = chunk["choices"][0]["finish_reason"];
    }
  }
  EXPECT_EQ(text, reference);
  EXPECT_EQ(finish_reason, "length");
}

// Returns the data frames of an SSE body, [DONE] left out.
std::vector<json> SseChunks(const std::string& body) {
  std::vector<json> out;
  for (absl::string_view frame : absl::StrSplit(body, "\n\n", absl::SkipEmpty())) {
    EXPECT_TRUE(absl::ConsumePrefix(&frame, "data: ")) << frame;
    if (frame == "[DONE]") continue;
    out.push_back(json::parse(frame, nullptr, false));
    EXPECT_FALSE(out.back().is_discarded()) << frame;
  }
  return out;
}

// Completions' `echo` with `logprobs` (what lm-eval-harness sends for log-likelihoods):
// `logprobs` covers the prompt's tokens (the first without a logprob) and then the
// generated ones, the same for every choice of a prompt and streamed or not. The values
// themselves are checked against PyTorch in e2e/serving/openai_client.test.mjs.
TEST_F(HttpServerTest, EchoWithLogprobsScoresThePromptStreamedAndNot) {
  const json body = {{"prompt", "Once upon a time"},
                     {"max_tokens", 3},
                     {"temperature", 0},
                     {"echo", true},
                     {"logprobs", 2},
                     {"n", 2}};
  auto res = PostJson("/v1/completions", body);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  const json j = json::parse(res->body);
  ASSERT_EQ(j["choices"].size(), 2u);
  const int prompt_len = j["usage"]["prompt_tokens"];
  ASSERT_EQ(prompt_len, 5);  // <s> Once upon a time
  json prompt_part;
  for (const json& c : j["choices"]) {
    EXPECT_TRUE(absl::StartsWith(c["text"].get<std::string>(), "Once upon a time")) << c;
    const json& lp = c["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), static_cast<size_t>(prompt_len + 3)) << lp;
    ASSERT_EQ(lp["token_logprobs"].size(), lp["tokens"].size());
    ASSERT_EQ(lp["top_logprobs"].size(), lp["tokens"].size());
    ASSERT_EQ(lp["text_offset"].size(), lp["tokens"].size());
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    for (size_t i = 1; i < lp["tokens"].size(); ++i) {
      EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0) << i;
      const json& top = lp["top_logprobs"][i];
      EXPECT_TRUE(top.contains(lp["tokens"][i].get<std::string>())) << top;
      EXPECT_LE(top.size(), 3u) << top;  // the top 2 and the token itself
      EXPECT_GE(lp["text_offset"][i].get<int>(), lp["text_offset"][i - 1].get<int>());
    }
    json part = {lp["tokens"], lp["token_logprobs"]};
    for (json& a : part) a.erase(a.begin() + prompt_len, a.end());
    if (prompt_part.is_null()) prompt_part = part;
    EXPECT_EQ(part, prompt_part) << "the choices of one prompt score it alike";
  }

  json streamed = body;
  streamed["stream"] = true;
  streamed["n"] = 1;
  auto sres = PostJson("/v1/completions", streamed);
  ASSERT_TRUE(sres);
  ASSERT_EQ(sres->status, 200) << sres->body;
  const std::vector<json> chunks = SseChunks(sres->body);
  ASSERT_GE(chunks.size(), 4u);
  const json& first = chunks[0]["choices"][0];
  EXPECT_EQ(first["text"], "Once upon a time");
  json part = {first["logprobs"]["tokens"], first["logprobs"]["token_logprobs"]};
  EXPECT_EQ(part, prompt_part) << "the echoed chunk carries the prompt's scores";
  std::string text;
  for (const json& c : chunks) text += c["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, j["choices"][0]["text"]);
}

// vLLM's `prompt_logprobs` field, on both endpoints: per prompt token (the first null)
// a map from token id to logprob, rank and text holding the token and the top N; out of
// range values are a 400 naming the field.
TEST_F(HttpServerTest, PromptLogprobsFieldOnBothEndpoints) {
  for (const bool chat : {false, true}) {
    json body = {{"max_tokens", 2}, {"prompt_logprobs", 1}};
    if (chat) {
      body["messages"] = json::array({{{"role", "user"}, {"content", "Tell me a story"}}});
    } else {
      body["prompt"] = std::vector<int>{1, 403, 407, 261, 378};
    }
    for (const bool stream : {false, true}) {
      body["stream"] = stream;
      auto res = PostJson(chat ? "/v1/chat/completions" : "/v1/completions", body);
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
      const json choice =
          stream ? SseChunks(res->body).at(0)["choices"][0] : json::parse(res->body)["choices"][0];
      const json& p = choice["prompt_logprobs"];
      ASSERT_TRUE(p.is_array()) << choice;
      ASSERT_GE(p.size(), 5u);
      EXPECT_TRUE(p[0].is_null());
      for (size_t i = 1; i < p.size(); ++i) {
        ASSERT_TRUE(p[i].is_object()) << p[i];
        EXPECT_GE(p[i].size(), 1u);
        EXPECT_LE(p[i].size(), 2u);
        bool has_rank_one = false;
        for (const auto& [id, e] : p[i].items()) {
          EXPECT_LE(e["logprob"].get<double>(), 0.0);
          EXPECT_GE(e["rank"].get<int>(), 1);
          EXPECT_TRUE(e["decoded_token"].is_string());
          has_rank_one |= e["rank"] == 1;
        }
        EXPECT_TRUE(has_rank_one) << p[i];
      }
      if (!chat) {
        EXPECT_TRUE(p[1].contains("403")) << p[1];  // the prompt's second token
      }
    }
  }
  for (const int bad : {-2, 21}) {
    auto res = PostJson("/v1/completions", {{"prompt", "hi"}, {"prompt_logprobs", bad}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400);
    ExpectErrorObject(res->body, "prompt_logprobs");
  }
}

// Guided decoding's fields: a guided completion continues the prompt inside the
// pattern (a grammar's outputs are its sentences); what the compilers refuse and two
// guides at once are 400s naming the field (never silently ignored).
TEST_F(HttpServerTest, GuidedDecodingFieldsAndTheirErrors) {
  auto ok = PostJson("/v1/completions", {{"prompt", "Once upon a"},
                                         {"max_tokens", 8},
                                         {"temperature", 0},
                                         {"guided_choice", {" time", " cat"}}});
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  const json j = json::parse(ok->body);
  EXPECT_EQ(j["choices"][0]["text"], " time");  // the greedy choice, with its space
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  // A grammar (GBNF): sampled outputs are its sentences.
  auto sum = PostJson("/v1/completions", {{"prompt", "Once upon a"},
                                          {"max_tokens", 40},
                                          {"n", 4},
                                          {"seed", 3},
                                          {"guided_grammar",
                                           "root ::= \" \" term (\" + \" term){1,3}\n"
                                           "term ::= [1-9] [0-9]? | \"(\" root \")\""}});
  ASSERT_TRUE(sum);
  ASSERT_EQ(sum->status, 200) << sum->body;
  const std::regex sentence(R"( (?:[1-9][0-9]?|\( .*\))(?: \+ (?:[1-9][0-9]?|\( .*\))){1,3})");
  const json sums = json::parse(sum->body);  // (the loop must not range over a temporary's member)
  for (const json& c : sums["choices"]) {
    EXPECT_EQ(c["finish_reason"], "stop") << c.dump();
    EXPECT_TRUE(std::regex_match(c["text"].get<std::string>(), sentence)) << c.dump();
  }
  // A left-recursive grammar: a 400 that names the rule and the way out.
  auto left = PostJson(
      "/v1/completions",
      {{"prompt", "hi"}, {"guided_grammar", "root ::= expr\nexpr ::= expr \"+\" [0-9] | [0-9]"}});
  ASSERT_TRUE(left);
  EXPECT_EQ(left->status, 400) << left->body;
  EXPECT_NE(left->body.find("rule 'expr' is left-recursive"), std::string::npos) << left->body;
  // A grammar that reads each letter thousands of ways: a 400 naming where and the limit,
  // before it costs the engine anything.
  auto ambiguous = PostJson(
      "/v1/completions",
      {{"prompt", "hi"},
       {"guided_grammar", "root ::= line{2,3}\nline ::= | [A-Z] [a-z] root{0,6} \"\\n\""}});
  ASSERT_TRUE(ambiguous);
  EXPECT_EQ(ambiguous->status, 400) << ambiguous->body;
  EXPECT_NE(ambiguous->body.find("too ambiguous"), std::string::npos) << ambiguous->body;
  EXPECT_NE(ambiguous->body.find("1024 ways"), std::string::npos) << ambiguous->body;
  const std::vector<std::pair<json, std::string>> refused = {
      {{{"guided_regex", "(?<=a)b"}}, "guided_regex"},
      {{{"guided_regex", 3}}, "guided_regex"},
      {{{"guided_choice", json::array()}}, "guided_choice"},
      {{{"guided_choice", {"a", 1}}}, "guided_choice"},
      {{{"guided_regex", "a"}, {"guided_choice", {"a"}}}, "guided_json"},
      {{{"guided_json", {{"type", "object"}, {"additionalProperties", true}}}}, "guided_json"},
      {{{"guided_json", "{not json"}}, "guided_json"},
      {{{"guided_grammar", "root ::= item"}}, "guided_grammar"},
      {{{"guided_grammar", 7}}, "guided_grammar"},
      {{{"guided_grammar", "root ::= \"a\""}, {"guided_regex", "a"}}, "guided_json"},
      {{{"response_format", {{"type", "xml"}}}}, "response_format"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", json::object()}}}},
       "response_format"},
  };
  for (const auto& [fields, param] : refused) {
    json body = {{"prompt", "hi"}, {"max_tokens", 2}};
    body.update(fields);
    auto res = PostJson("/v1/completions", body);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body.dump();
    ExpectErrorObject(res->body, param.c_str());
  }
  auto text =
      PostJson("/v1/completions",
               {{"prompt", "hi"}, {"max_tokens", 2}, {"response_format", {{"type", "text"}}}});
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 200) << text->body;
}

TEST_F(HttpServerTest, RejectsABadFieldWith400AndItsParam) {
  auto res = PostJson("/v1/completions", {{"prompt", "hi"}, {"temperature", 5}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  json e = ExpectErrorObject(res->body, "temperature");
  EXPECT_EQ(e["type"], "invalid_request_error");

  auto bad_json = client_->Post("/v1/completions", "{not json", kJson);
  ASSERT_TRUE(bad_json);
  EXPECT_EQ(bad_json->status, 400);
  ExpectErrorObject(bad_json->body, nullptr);

  auto too_long = PostJson("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 100000}});
  ASSERT_TRUE(too_long);
  EXPECT_EQ(too_long->status, 400);
  EXPECT_EQ(ExpectErrorObject(too_long->body, "prompt")["type"], "invalid_request_error");
}

TEST_F(HttpServerTest, UnknownModelAndPathAre404) {
  auto res = PostJson("/v1/completions", {{"model", "gpt-9"}, {"prompt", "hi"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  json e = ExpectErrorObject(res->body, "model");
  EXPECT_EQ(e["code"], "model_not_found");
  EXPECT_TRUE(absl::StrContains(e["message"].get<std::string>(), "gpt-9"));

  auto path = client_->Get("/v1/nothing-here");
  ASSERT_TRUE(path);
  EXPECT_EQ(path->status, 404);
  ExpectErrorObject(path->body, nullptr);
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413) {
  const std::string big = json{{"prompt", std::string(8192, 'a')}, {"max_tokens", 1}}.dump();
  auto res = client_->Post("/v1/completions", big, kJson);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 413);
  ExpectErrorObject(res->body, nullptr);
  // A body within the limit is served.
  auto ok = PostJson("/v1/completions", {{"prompt", std::string(100, 'a')}, {"max_tokens", 1}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

// cpp-httplib 0.11.4 applies set_payload_max_length only to a Content-Length: a chunked
// body was read whole (a 210 MB one took 7.9 GB). The server must answer 413 as soon as
// the body passes the limit, without waiting for (or reading) the rest, close that
// connection (the unread rest must never be parsed as a next request), and go on serving.
TEST_F(HttpServerTest, ChunkedBodyOverTheLimitIs413BeforeItEnds) {
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.connected());
  ASSERT_TRUE(
      conn.Send("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"));
  // 3 x 2 KB against a 4 KB limit, then nothing: no last chunk, the body never ends.
  const std::string prefix = R"({"max_tokens": 1, "prompt": ")";
  ASSERT_TRUE(conn.Send(Chunk(prefix + std::string(2048 - prefix.size(), 'a'))));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(conn.Send(Chunk(std::string(2048, 'a'))));
  // What a smuggler would put behind the limit: it must not be served.
  ASSERT_TRUE(conn.Send(Chunk("\r\n0\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")));
  bool closed = false;
  const std::string answer = conn.ReadAll(&closed);
  ASSERT_TRUE(absl::StartsWith(answer, "HTTP/1.1 413")) << "no 413 while the body was still "
                                                           "open; got: "
                                                        << answer.substr(0, 200);
  EXPECT_TRUE(closed) << "the connection stayed open after the 413";
  EXPECT_FALSE(absl::StrContains(answer, "\"object\":\"list\"")) << answer;
  const size_t body = answer.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  json e = ExpectErrorObject(answer.substr(body + 4), nullptr);
  EXPECT_TRUE(absl::StrContains(e.value("message", ""), "4096")) << e;
  // The server still answers.
  auto ok = PostJson("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 2}});
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200) << ok->body;
}

// A chunked body within the limit is read whole and served like any other.
TEST_F(HttpServerTest, ChunkedBodyWithinTheLimitIsServed) {
  const std::string body =
      json{{"prompt", "Once upon a time"}, {"max_tokens", 8}, {"temperature", 0}}.dump();
  auto res = client_->Post(
      "/v1/completions",
      [&body](size_t offset, httplib::DataSink& sink) {
        if (offset < body.size())
          return sink.write(body.data() + offset, std::min<size_t>(7, body.size() - offset));
        sink.done();
        return true;
      },
      kJson);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["choices"][0]["text"], EngineGreedyText("Once upon a time", 8));
}

// Deep nesting is refused before it is built (1.3M levels cost 0.6 GB): a 400 that names
// the limit, while nesting within it is still accepted.
TEST_F(HttpServerTest, DeeplyNestedJsonIs400NamingTheLimit) {
  auto nested = [](int depth) {  // {"prompt": ..., "x": [[...]]}: depth levels in all
    return absl::StrCat(R"({"prompt": "Once", "max_tokens": 1, "x": )", std::string(depth - 1, '['),
                        std::string(depth - 1, ']'), "}");
  };
  auto deep = client_->Post("/v1/completions", nested(1500), kJson);
  ASSERT_TRUE(deep) << httplib::to_string(deep.error());
  EXPECT_EQ(deep->status, 400) << deep->body;
  json e = ExpectErrorObject(deep->body, nullptr);
  EXPECT_TRUE(absl::StrContains(e.value("message", ""), "128")) << e;
  auto tokenize = client_->Post("/tokenize", nested(1500), kJson);
  ASSERT_TRUE(tokenize);
  EXPECT_EQ(tokenize->status, 400) << tokenize->body;

  auto within = client_->Post("/v1/completions", nested(128), kJson);
  ASSERT_TRUE(within);
  EXPECT_EQ(within->status, 200) << within->body;
}

TEST_F(HttpServerTest, ApiKeyIsRequiredWhenSet) {
  HttpServerOptions o = BaseOptions();
  o.api_key = "sekret-key";
  auto server = StartServer(engine_.get(), std::move(o));
  ASSERT_NE(server, nullptr);
  auto client = ClientFor(*server);
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 2}}.dump();

  auto anonymous = client->Post("/v1/completions", body, kJson);
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
  json e = ExpectErrorObject(anonymous->body, nullptr);
  EXPECT_EQ(e["type"], "authentication_error");
  EXPECT_EQ(e["code"], "invalid_api_key");

  auto wrong = client->Post("/v1/completions", httplib::Headers{{"Authorization", "Bearer not-it"}},
                            body, kJson);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto models = client->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 401);

  auto keyed = client->Post("/v1/completions",
                            httplib::Headers{{"Authorization", "Bearer sekret-key"}}, body, kJson);
  ASSERT_TRUE(keyed);
  EXPECT_EQ(keyed->status, 200) << keyed->body;
  // Probes stay open without the key.
  auto health = client->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  server->Stop();
}

// An engine whose loop is not started keeps every request queued, so with one batch
// slot and room for one request waiting beyond it, a request for n=3 completions
// deterministically overflows the queue.
TEST_F(HttpServerTest, QueueOverflowIs429WithRetryAfter) {
  std::unique_ptr<Engine> queued =
      MakeEngine(dir_, /*max_waiting_requests=*/1, /*max_batch_size=*/1);
  ASSERT_NE(queued, nullptr);
  auto server = StartServer(queued.get(), BaseOptions());
  ASSERT_NE(server, nullptr);
  auto client = ClientFor(*server);
  auto res = client->Post("/v1/completions",
                          json{{"prompt", "Once"}, {"max_tokens", 2}, {"n", 3}}.dump(), kJson);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "1");
  json e = ExpectErrorObject(res->body, nullptr);
  EXPECT_EQ(e["type"], "rate_limit_error");
  server->Stop();
  queued->Stop();
}

// The drain (orca serve on SIGTERM, docs/serving.md): after BeginShutdown() a stream
// admitted before goes on to its end and counts as open until then, while /ready and
// every new request answer 503 with Retry-After on a listener that still accepts.
TEST_F(HttpServerTest, BeginShutdownLetsAdmittedStreamsFinishAndRefusesNewRequests) {
  // The stream must still be open in the server when the drain begins; on a loaded
  // machine it can finish into the socket buffers before its first chunk is read (the
  // kernel grows them past anything a client can hold back), and such an attempt shows
  // nothing: it is made again on a fresh server.
  bool drained_while_open = false;
  for (int attempt = 0; attempt < 5 && !drained_while_open; ++attempt) {
    std::unique_ptr<HttpServer> server = StartServer(engine_.get(), BaseOptions());
    ASSERT_NE(server, nullptr);
    std::promise<void> first_chunk;
    std::promise<void> go_on;
    std::shared_future<void> go_on_future = go_on.get_future().share();
    std::string body;
    auto streaming = std::async(std::launch::async, [&] {
      auto c = ClientFor(*server);
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.body = json{
          {"prompt", "Once upon a time"},
          {"max_tokens", 480},
          {"ignore_eos", true},
          {"stream",
           true}}.dump();
      req.set_header("Content-Type", kJson);
      bool first = true;
      req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        body.append(data, n);
        if (std::exchange(first, false)) {
          first_chunk.set_value();
          go_on_future.wait();  // the stream stays open until the server drains
        }
        return true;
      };
      return c->send(req);
    });
    first_chunk.get_future().wait();

    server->BeginShutdown();
    drained_while_open = server->open_requests() == 1;
    auto ready = ClientFor(*server)->Get("/ready");
    ASSERT_TRUE(ready) << httplib::to_string(ready.error());
    EXPECT_EQ(ready->status, 503);
    auto refused = ClientFor(*server)->Post(
        "/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}}.dump(), kJson);
    ASSERT_TRUE(refused) << "the listener must stay open while draining: "
                         << httplib::to_string(refused.error());
    EXPECT_EQ(refused->status, 503);
    EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
    EXPECT_EQ(ExpectErrorObject(refused->body, nullptr)["type"], "service_unavailable_error");
    EXPECT_LE(server->open_requests(), 1);  // the refused one never counted

    go_on.set_value();
    httplib::Result res = streaming.get();
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_TRUE(absl::EndsWith(body, "data: [DONE]\n\n")) << body;
    EXPECT_TRUE(absl::StrContains(body, "\"finish_reason\":\"length\"")) << body;
    EXPECT_FALSE(absl::StrContains(body, "\"error\":")) << body;
    for (int i = 0; i < 500 && server->open_requests() > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(server->open_requests(), 0);
    server->Stop();
  }
  EXPECT_TRUE(drained_while_open) << "in 5 attempts the stream had always ended before the drain";
}

// HttpServerOptions::draining (the SIGTERM handler's flag) refuses at once, before
// BeginShutdown() is called.
TEST_F(HttpServerTest, DrainingFlagRefusesNewRequestsAtOnce) {
  std::atomic<bool> draining{false};
  HttpServerOptions o = BaseOptions();
  o.draining = [&draining] { return draining.load(); };
  std::unique_ptr<HttpServer> server = StartServer(engine_.get(), std::move(o));
  ASSERT_NE(server, nullptr);
  auto c = ClientFor(*server);
  auto ok = c->Post("/v1/completions", json{{"prompt", "hi"}, {"max_tokens", 2}}.dump(), kJson);
  ASSERT_TRUE(ok) << httplib::to_string(ok.error());
  EXPECT_EQ(ok->status, 200) << ok->body;
  draining = true;
  auto ready = c->Get("/ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  auto refused = ClientFor(*server)->Post("/v1/completions",
                                          json{{"prompt", "hi"}, {"max_tokens", 2}}.dump(), kJson);
  ASSERT_TRUE(refused) << httplib::to_string(refused.error());
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  server->Stop();
}

// HttpServer::Stop() right after Start() used to hang for ever: httplib::Server::stop()
// does nothing until the listener thread has set is_running_ (cpp-httplib issues #1371,
// #1645), and Start() returned before that thread ran. Start() now waits for it.
TEST_F(HttpServerTest, StopRightAfterStartReturns) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::unique_ptr<HttpServer> server = StartServer(engine_.get(), BaseOptions());
    ASSERT_NE(server, nullptr);
    auto stopped = std::make_shared<std::promise<void>>();
    std::future<void> done = stopped->get_future();
    // A server whose Stop() hangs is leaked with its thread.
    std::thread([s = server.release(), stopped] {
      s->Stop();
      delete s;
      stopped->set_value();
    }).detach();
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << "Stop() did not return within 10 s (attempt " << attempt << ")";
  }
}

}  // namespace
}  // namespace orca
