// The streaming client of the load generator: sends one request of a trace to an
// OpenAI-compatible /v1/completions endpoint with `stream: true`, timestamps every
// chunk and checks that the response carried exactly the requested number of tokens.
//
// The request body is
//   {"model", "prompt": [token ids], "max_tokens": output_len, "ignore_eos": true,
//    "stream": true, "stream_options": {"include_usage": true}, "temperature", "seed"}
// plus any extra fields given (with nest_prompt, "prompt": [[token ids]]). The number of tokens
// received is the final usage chunk's completion_tokens; a server that sends no usage is credited
// one token per output-carrying chunk. A request succeeds when the status is 200, the stream ends
// with `data: [DONE]`, carries no error object and reports output_len tokens.
//
// CompletionStreamParser is the pure part (bytes in, record out), unit-tested alone.
// SendCompletion may be called from many threads at once (one connection each).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/loadgen/stats.h"
#include "bench/loadgen/trace.h"

namespace orca::bench {

struct ClientOptions {
  std::string base_url = "http://127.0.0.1:8000";  // scheme://host:port
  std::string endpoint = "/v1/completions";
  std::string model;    // "model" field; empty: left out (orca serves one model)
  std::string api_key;  // sent as "Authorization: Bearer" when non-empty
  double temperature = 0;
  uint64_t seed = 1;  // request i is sent with seed + i
  double request_timeout_s = 600;
  // Send the prompt as [[ids]] (a batch of one token list) instead of [ids].
  bool nest_prompt = false;
  nlohmann::json extra_body = nlohmann::json::object();  // merged into every body
};

// Returns the JSON body for request `index` of a trace.
nlohmann::json CompletionBody(const ClientOptions& options, const TraceRequest& request,
                              int64_t index);

// Incremental parser of one SSE completion stream. Feed() takes bytes as they arrive
// with the time (seconds since the request was sent) they arrived at.
class CompletionStreamParser {
 public:
  void Feed(const char* data, size_t n, double now_s);
  // Finishes the stream at `end_s` with HTTP `status`, checks it against
  // `expected_tokens` and fills the outcome fields of `record` (ok, failure, error,
  // output_tokens, ttft_s, e2e_s, itl_s).
  void Finish(int status, double end_s, int32_t expected_tokens, RequestRecord* record);

  int32_t chunks_with_output() const { return chunks_; }
  bool done() const { return done_; }

 private:
  void HandleEvent(const std::string& payload, double now_s);

  std::string buffer_;
  std::string body_;  // a non-SSE body (errors), kept for the message
  bool done_ = false;
  std::string stream_error_;
  int32_t chunks_ = 0;
  int32_t usage_tokens_ = -1;
  std::string finish_reason_;
  double first_s_ = -1, last_s_ = -1;
  std::vector<double> gaps_;
};

// Sends request `index` of the trace and returns its record; `send_s` is stamped by
// the caller. Never throws; transport errors become failures ("connect", "timeout").
RequestRecord SendCompletion(const ClientOptions& options, const TraceRequest& request,
                             int64_t index);

}  // namespace orca::bench
