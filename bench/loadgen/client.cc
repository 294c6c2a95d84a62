#include "bench/loadgen/client.h"

#include <httplib.h>

#include <chrono>

#include "absl/strings/str_cat.h"

namespace orca::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Returns the output text of a completions or chat chunk's choice (empty if none).
std::string ChoiceText(const nlohmann::json& choice) {
  if (auto it = choice.find("text"); it != choice.end() && it->is_string()) {
    return it->get<std::string>();
  }
  if (auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
    if (auto c = d->find("content"); c != d->end() && c->is_string()) return c->get<std::string>();
  }
  return "";
}

}  // namespace

nlohmann::json CompletionBody(const ClientOptions& o, const TraceRequest& r, int64_t index) {
  nlohmann::json body = {
      {"prompt", o.nest_prompt ? nlohmann::json::array({r.prompt}) : nlohmann::json(r.prompt)},
      {"max_tokens", r.output_len},
      {"ignore_eos", true},
      {"stream", true},
      {"stream_options", {{"include_usage", true}}},
      {"temperature", o.temperature},
      {"seed", o.seed + static_cast<uint64_t>(index)}};
  if (!o.model.empty()) body["model"] = o.model;
  if (o.extra_body.is_object()) body.update(o.extra_body);
  return body;
}

void CompletionStreamParser::Feed(const char* data, size_t n, double now_s) {
  for (size_t i = 0; i < n; ++i) {
    if (data[i] != '\r') buffer_.push_back(data[i]);
  }
  size_t end;
  while ((end = buffer_.find("\n\n")) != std::string::npos) {
    std::string event = buffer_.substr(0, end);
    buffer_.erase(0, end + 2);
    std::string payload;
    size_t pos = 0;
    bool any_data = false;
    while (pos <= event.size()) {
      size_t nl = event.find('\n', pos);
      if (nl == std::string::npos) nl = event.size();
      std::string line = event.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.rfind("data:", 0) != 0) continue;
      std::string value = line.substr(5);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      if (any_data) payload.push_back('\n');
      payload += value;
      any_data = true;
    }
    if (any_data) {
      HandleEvent(payload, now_s);
    } else if (body_.size() < 4096) {
      body_ += event;  // no data lines: an SSE comment, or part of a plain error body
    }
  }
}

void CompletionStreamParser::HandleEvent(const std::string& payload, double now_s) {
  if (payload == "[DONE]") {
    done_ = true;
    return;
  }
  nlohmann::json j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    if (stream_error_.empty())
      stream_error_ = absl::StrCat("unparsable chunk: ", payload.substr(0, 200));
    return;
  }
  if (auto e = j.find("error"); e != j.end()) {
    if (stream_error_.empty()) stream_error_ = e->dump().substr(0, 300);
    return;
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer()) {
      usage_tokens_ = c->get<int32_t>();
    }
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array()) return;
  for (const auto& choice : *choices) {
    const bool finished = choice.contains("finish_reason") && !choice["finish_reason"].is_null();
    if (finished && choice["finish_reason"].is_string()) {
      finish_reason_ = choice["finish_reason"].get<std::string>();
    }
    // A chunk carries output unless it is a bare finish marker (empty text + reason).
    if (!ChoiceText(choice).empty() || !finished) {
      ++chunks_;
      if (first_s_ < 0) {
        first_s_ = now_s;
      } else {
        gaps_.push_back(now_s - last_s_);
      }
      last_s_ = now_s;
    }
  }
}

void CompletionStreamParser::Finish(int status, double end_s, int32_t expected, RequestRecord* r) {
  r->e2e_s = end_s;
  r->ttft_s = first_s_ >= 0 ? first_s_ : end_s;
  r->itl_s = gaps_;
  r->output_tokens = usage_tokens_ >= 0 ? usage_tokens_ : chunks_;
  r->ok = false;
  if (status != 200) {
    r->failure = absl::StrCat("http_", status);
    r->error = (body_ + buffer_).substr(0, 300);  // an error body is plain JSON
  } else if (!stream_error_.empty()) {
    r->failure = "stream_error";
    r->error = stream_error_;
  } else if (!done_) {
    r->failure = "no_done";
    r->error = "the stream ended without data: [DONE]";
  } else if (r->output_tokens != expected) {
    r->failure = "token_count";
    r->error = absl::StrCat("asked for ", expected, " tokens, received ", r->output_tokens);
  } else if (!finish_reason_.empty() && finish_reason_ != "length") {
    r->failure = "finish_reason";
    r->error = absl::StrCat("finish_reason ", finish_reason_, " (expected length)");
  } else {
    r->ok = true;
  }
}

RequestRecord SendCompletion(const ClientOptions& o, const TraceRequest& request, int64_t index) {
  RequestRecord rec;
  rec.index = index;
  rec.input_len = request.input_len;
  rec.expected_output = request.output_len;
  httplib::Client cli(o.base_url);
  const auto timeout = std::chrono::duration<double>(o.request_timeout_s);
  cli.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(
      std::min(timeout, std::chrono::duration<double>(30))));
  cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  cli.set_write_timeout(std::chrono::seconds(30));
  httplib::Request req;
  req.method = "POST";
  req.path = o.endpoint;
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  if (!o.api_key.empty()) req.set_header("Authorization", "Bearer " + o.api_key);
  req.body = CompletionBody(o, request, index).dump();
  CompletionStreamParser parser;
  int status = 0;
  const auto t0 = Clock::now();
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  bool timed_out = false;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const double now = Since(t0);
    parser.Feed(data, n, now);
    if (now > o.request_timeout_s) {
      timed_out = true;
      return false;
    }
    return true;
  };
  httplib::Result res = cli.send(req);
  const double end = Since(t0);
  if (!res || timed_out) {
    rec.e2e_s = end;
    const auto err = res ? httplib::Error::Canceled : res.error();
    rec.failure = (timed_out || err == httplib::Error::Read) ? "timeout" : "connect";
    rec.error = timed_out ? "request timeout" : httplib::to_string(err);
    return rec;
  }
  parser.Finish(status, end, request.output_len, &rec);
  return rec;
}

}  // namespace orca::bench
