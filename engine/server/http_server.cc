#include "engine/server/http_server.h"

#include <httplib.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <chrono>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/sched/request_limits.h"
#include "engine/server/api_error.h"
#include "engine/server/generation_service.h"
#include "engine/server/internal/http_listener.h"
#include "engine/server/internal/tls_sessions.h"
#include "engine/server/openai_request.h"
#include "engine/server/openai_response.h"

namespace orca {
namespace {

using json = nlohmann::json;

constexpr int kListenBacklog = 4096;
// File descriptors kept for everything but client connections (model files, gRPC,
// connections being closed).
constexpr rlim_t kFdReserve = 1536;
// How often a handler waiting for a non-streamed result checks that its client is there.
constexpr absl::Duration kClientCheckInterval = absl::Milliseconds(100);

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.http_status;
  if (e.http_status == 429 || e.http_status == 503) res.set_header("Retry-After", "1");
  res.set_content(e.ToJson(), "application/json");
}

ApiError ErrorFrom(const absl::Status& s) {
  std::string param;
  if (auto p = s.GetPayload(kParamPayload)) param = std::string(*p);
  return FromStatus(s, param);
}

std::string RandomId(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng()),
           static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Per-request state shared by the handler and its stream provider.
struct Generation {
  ResponseContext ctx;
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<ChoiceState> choices;
  std::vector<std::string> echo_prefix;
  std::vector<bool> started;
  bool include_usage = false;
  absl::Status error;  // the first choice's failure
  Engine* engine = nullptr;
  std::shared_ptr<void> open;  // counts the request as open until the answer is written

  void AbortAll() {
    for (size_t i = 0; i < streams.size(); ++i) {
      if (!choices[i].finished) engine->Abort(streams[i]->id());
    }
  }
  // Applies an event to choice i; returns the index range of new tokens. A failed choice
  // sets `error`.
  std::pair<size_t, size_t> Apply(size_t i, StreamEvent& ev) {
    ChoiceState& c = choices[i];
    size_t from = c.samples.size();
    c.text += ev.text;
    c.ParseTools(ev.text, ev.finished);
    c.token_ids.insert(c.token_ids.end(), ev.token_ids.begin(), ev.token_ids.end());
    c.samples.insert(c.samples.end(), ev.samples.begin(), ev.samples.end());
    c.prompt_logprobs.insert(c.prompt_logprobs.end(), ev.prompt_logprobs.begin(),
                             ev.prompt_logprobs.end());
    c.prompt_tokens = ev.prompt_tokens;
    c.completion_tokens = ev.completion_tokens;
    c.cached_prompt_tokens = ev.cached_prompt_tokens;
    if (ev.finished) {
      c.finished = true;
      c.finish_reason = ev.finish_reason;
      // An abort with a status is the engine's (shutting down: Unavailable), not the
      // client's: the client gets the error (503, retriable), not a cut-short answer.
      const bool failed = ev.finish_reason == FinishReason::kError ||
                          (ev.finish_reason == FinishReason::kAbort && !ev.status.ok());
      if (failed && error.ok()) {
        error = ev.status.ok() ? absl::InternalError("generation failed") : ev.status;
      }
    }
    return {from, c.samples.size()};
  }
  bool AllFinished() const {
    for (const auto& c : choices) {
      if (!c.finished) return false;
    }
    return true;
  }
};

// Gives a chat choice the tool-call parser its request calls for: the forced choices'
// (the guide shapes the output), or with tool_choice auto the model's format's.
void AttachToolParser(const OpenAiRequest& r, ToolCallFormat format, ChoiceState& c) {
  if (!r.chat) return;
  switch (r.tool_choice) {
    case ToolChoice::kNone:
      return;
    case ToolChoice::kNamed:
      c.tools = MakeForcedNamedParser(r.tool_choice_name);
      c.forced_function = true;
      break;
    case ToolChoice::kRequired:
      c.tools = MakeForcedListParser();
      break;
    case ToolChoice::kAuto:
      c.tools = MakeToolCallParser(format);
      break;
  }
  if (c.tools != nullptr && format == ToolCallFormat::kMistral) c.tools->UseShortIds();
}

// Reads the request body into `body` through `reader`, at most `max_bytes` of it.
// Returns false once it has answered: 413 when the body passes the limit (checked as
// the bytes arrive, so a chunked body is refused before it is read whole; a declared
// Content-Length before anything is read), 400 when it cannot be read. Either way the
// connection is closed after the answer: the rest of the body is never parsed as a next
// request.
bool ReadBody(const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& reader, size_t max_bytes, std::string* body) {
  auto refuse = [&](int status, const std::string& message) {
    ApiError e;
    e.http_status = status;
    e.message = message;
    SendError(res, e);
    res.set_header("Connection", "close");
    HttpListener::CloseConnectionAfterResponse();
    return false;
  };
  const std::string too_large = absl::StrCat("The request body is larger than the limit of ",
                                             max_bytes, " bytes (--max-body-bytes).");
  if (req.has_header("Content-Length")) {
    uint64_t declared = 0;
    if (!absl::SimpleAtoi(req.get_header_value("Content-Length"), &declared)) {
      return refuse(400, "The Content-Length header is not a number.");
    }
    if (declared > max_bytes) return refuse(413, too_large);
    body->reserve(declared);
  }
  bool over = false;
  const bool complete = reader([&](const char* data, size_t n) {
    if (n > max_bytes - body->size()) {
      over = true;
      return false;  // stop reading here
    }
    body->append(data, n);
    return true;
  });
  if (over) return refuse(413, too_large);
  if (!complete) return refuse(400, "The request body could not be read.");
  return true;
}

bool WriteEvent(httplib::DataSink& sink, const std::string& data) {
  std::string frame = "data: " + data + "\n\n";
  return sink.write(frame.data(), frame.size());
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(Engine* engine,
                                                               HttpServerOptions options) {
  auto s = std::unique_ptr<HttpServer>(new HttpServer());
  s->engine_ = engine;
  s->options_ = std::move(options);
  if (!s->options_.render_chat) {
    return absl::InvalidArgumentError("HttpServerOptions.render_chat is required");
  }
  s->service_ = std::make_unique<GenerationService>(
      engine, GenerationService::Options{s->options_.served_model_name, s->options_.ready,
                                         s->options_.render_chat, s->options_.draining,
                                         s->options_.tool_call_format});
  s->authenticator_ = Authenticator(s->options_.api_key);
  HttpListenerOptions lo;
  lo.worker_threads = s->options_.num_threads;
  lo.max_connections = s->options_.max_connections;
  lo.header_timeout = s->options_.header_timeout;
  lo.idle_timeout = s->options_.idle_timeout;
  lo.busy_body = FromStatus(absl::UnavailableError(
                                "The server has too many open connections; retry the request."))
                     .ToJson();
  if (s->options_.tls) {
    ORCA_ASSIGN_OR_RETURN(std::unique_ptr<TlsSessions> tls,
                          TlsSessions::Create(s->options_.tls->cert_pem, s->options_.tls->key_pem));
    lo.tls = std::move(tls);
  }
  s->server_ = std::make_unique<HttpListener>(std::move(lo));
  s->server_->set_payload_max_length(s->options_.max_body_bytes);
  // What the Keep-Alive header advertises ("timeout=75, max=1000", as nginx allows).
  s->server_->set_keep_alive_timeout(std::max<time_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(s->options_.idle_timeout).count()));
  s->server_->set_keep_alive_max_count(1000);
  s->server_->set_read_timeout(30, 0);
  s->server_->set_write_timeout(30, 0);
  s->Routes();
  return s;
}

HttpServer::~HttpServer() { Stop(); }

int HttpServer::max_connections() const { return server_->max_connections(); }

absl::Status HttpServer::Start() {
  // Every connection holds a file descriptor: raise the soft RLIMIT_NOFILE to what the
  // cap needs (as Go's runtime does), or lower the cap to what the limit allows.
  const rlim_t needed = static_cast<rlim_t>(options_.max_connections) + kFdReserve;
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < needed) {
    rlimit raised = nofile;
    raised.rlim_cur = std::min(needed, nofile.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) nofile = raised;
    if (nofile.rlim_cur < needed) {
      const int cap = static_cast<int>(std::max<rlim_t>(64, nofile.rlim_cur / 2));
      server_->set_max_connections(std::min(options_.max_connections, cap));
      ORCA_LOG(WARNING) << "HTTP: the open-file limit is " << nofile.rlim_cur << "; at most "
                        << server_->max_connections() << " connections are served at once";
    }
  }
  // The packaged cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG is
  // compiled into the library): a burst of clients would overflow the accept queue and
  // hang in half-open connections. Keep the listening socket and raise the backlog.
  auto listen_fd = std::make_shared<std::atomic<int>>(-1);
  server_->set_socket_options([listen_fd](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd->store(sock);
  });
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
  } else {
    port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.host, ":", options_.port));
  }
  if (listen_fd->load() >= 0 && ::listen(listen_fd->load(), kListenBacklog) != 0) {
    ORCA_LOG(WARNING) << "could not raise the listen backlog: " << std::strerror(errno);
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() is a no-op until the listener runs: wait for it, so that Stop()
  // right after Start() cannot hang on a listener that goes on accepting.
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ORCA_LOG(INFO) << (options_.tls ? "HTTPS" : "HTTP") << " API on " << options_.host << ":" << port_
                 << " serving '" << options_.served_model_name << "'";
  return absl::OkStatus();
}

void HttpServer::BeginShutdown() {
  // The listener stays open while the server drains: probes see /ready 503 and clients
  // that still route here get a retriable 503 rather than a refused connection.
  if (service_) service_->StopAdmitting();
}

int HttpServer::open_requests() const { return service_ ? service_->open_requests() : 0; }

void HttpServer::Stop() {
  BeginShutdown();
  // Closes the listening socket (new connections are refused); idle keep-alive
  // connections end, busy ones after their current request.
  if (server_ && !std::exchange(stopped_, true)) server_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpServer::Routes() {
  httplib::Server& srv = *server_;
  const std::string model_name = options_.served_model_name;

  srv.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string& p = req.path;
    const bool probe = p == "/health" || p == "/ready" || p == "/metrics" || p == "/version";
    if (!probe && service_->draining()) {
      SendError(res, FromStatus(absl::UnavailableError(
                         "The server is shutting down; retry the request (on another replica).")));
      res.set_header("Connection", "close");
      HttpListener::CloseConnectionAfterResponse();  // the body, if any, is not read
      return httplib::Server::HandlerResponse::Handled;
    }
    if (probe) return httplib::Server::HandlerResponse::Unhandled;
    if (absl::Status s = authenticator_.Check(req.get_header_value("Authorization")); !s.ok()) {
      SendError(res, FromStatus(s));
      // The body is not read: the connection ends with this answer, and says so (a
      // keep-alive client would otherwise send its next request into the closed socket).
      if (req.method == "POST") {
        res.set_header("Connection", "close");
        HttpListener::CloseConnectionAfterResponse();
      }
      return httplib::Server::HandlerResponse::Handled;
    }
    if (ClientLimiter* limiter = options_.client_limiter.get(); limiter && limiter->enabled()) {
      auto slot = limiter->Acquire(ClientKeyFromAddress(req.remote_addr));
      if (!slot.ok()) {
        SendError(res, FromStatus(slot.status()));  // 429, rate_limit_error, Retry-After
        if (req.method == "POST") {                 // the body is not read, as above
          res.set_header("Connection", "close");
          HttpListener::CloseConnectionAfterResponse();
        }
        return httplib::Server::HandlerResponse::Handled;
      }
      HttpListener::HoldUntilResponseWritten(
          std::make_shared<ClientLimiter::Slot>(std::move(*slot)));
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  srv.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e;
    e.http_status = res.status;
    if (res.status == 404) {
      e.type = "not_found_error";
      e.message = absl::StrCat("Not found: ", req.method, " ", req.path);
    } else if (res.status == 413) {
      e.message = "The request body is too large.";
    } else if (res.status == 400) {
      e.message = "The request is malformed.";
    } else {
      e.message = absl::StrCat("HTTP ", res.status);
      e.type = res.status >= 500 ? "internal_error" : "invalid_request_error";
    }
    res.set_content(e.ToJson(), "application/json");
  });
  srv.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        ApiError e;
        e.http_status = 500;
        e.type = "internal_error";
        e.message = "internal error";
        SendError(res, e);
      });

  srv.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  srv.Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    bool ready = !service_->draining() && (!options_.ready || options_.ready());
    res.status = ready ? 200 : 503;
    res.set_content(ready ? R"({"status":"ready"})" : R"({"status":"not ready"})",
                    "application/json");
  });
  srv.Get("/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(json{{"version", ORCA_VERSION_STRING}}.dump(), "application/json");
  });
  srv.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(options_.metrics_text ? options_.metrics_text() : "",
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  srv.Get("/v1/models", [this, model_name](const httplib::Request&, httplib::Response& res) {
    json m = {{"id", model_name},     {"object", "model"},
              {"created", UnixNow()}, {"owned_by", "orca"},
              {"root", model_name},   {"max_model_len", engine_->max_model_len()}};
    res.set_content(json{{"object", "list"}, {"data", json::array({m})}}.dump(),
                    "application/json");
  });

  // POST handlers get the body read by ReadBody (the limit holds for every encoding).
  using BodyHandler = std::function<void(const std::string& body, httplib::Response& res)>;
  auto with_body = [this](BodyHandler handler) {
    return [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                                const httplib::ContentReader& reader) {
      std::string body;
      if (ReadBody(req, res, reader, options_.max_body_bytes, &body)) handler(body, res);
    };
  };

  auto tokenize = [this](const std::string& body, httplib::Response& res) {
    auto t = ParseTokenizeRequest(body);
    if (!t.ok()) return SendError(res, ErrorFrom(t.status()));
    if (auto s = service_->CheckModel(t->model); !s.ok()) return SendError(res, ErrorFrom(s));
    std::vector<int32_t> ids;
    if (!t->messages.is_null()) {
      auto text = service_->RenderChat(t->messages, t->tools, t->add_generation_prompt,
                                       nlohmann::ordered_json::object());
      if (!text.ok()) return SendError(res, ErrorFrom(text.status()));
      ids = engine_->tokenizer().Encode(*text, false);
    } else {
      ids = engine_->tokenizer().Encode(t->prompt, t->add_special_tokens);
    }
    res.set_content(
        json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", engine_->max_model_len()}}
            .dump(),
        "application/json");
  };
  auto detokenize = [this](const std::string& body, httplib::Response& res) {
    std::string model;
    auto ids = ParseDetokenizeRequest(body, &model);
    if (!ids.ok()) return SendError(res, ErrorFrom(ids.status()));
    if (auto s = service_->CheckModel(model); !s.ok()) return SendError(res, ErrorFrom(s));
    for (int32_t t : *ids) {
      if (t >= engine_->model_config().vocab_size) {
        return SendError(
            res,
            InvalidRequest(absl::StrCat("token id ", t, " is outside the vocabulary"), "tokens"));
      }
    }
    res.set_content(Dump(json{{"prompt", engine_->tokenizer().Decode(*ids, false)}}),
                    "application/json");
  };
  srv.Post("/tokenize", with_body(tokenize));
  srv.Post("/detokenize", with_body(detokenize));

  auto generate = [this, model_name, with_body](bool chat) {
    return with_body([=, this](const std::string& body, httplib::Response& res) {
      auto parsed = ParseOpenAiRequest(body, chat);
      if (!parsed.ok()) return SendError(res, ErrorFrom(parsed.status()));
      const OpenAiRequest& r = *parsed;
      auto started = service_->Start(r);
      if (!started.ok()) {
        ApiError e = ErrorFrom(started.status());
        if (auto c = GetContextLengthError(started.status())) {  // OpenAI's wording
          const char* what = chat ? "messages" : "prompt";
          e.code = "context_length_exceeded";
          e.message = absl::StrCat("This model's maximum context length is ", c->max_model_len,
                                   " tokens. However, you requested ", c->prompt + c->completion,
                                   " tokens (", c->prompt, " in the ", what, ", ", c->completion,
                                   " in the completion). Please reduce the length of the ", what,
                                   " or completion.");
        }
        return SendError(res, e);
      }
      auto gen = std::make_shared<Generation>();
      gen->engine = engine_;
      gen->ctx.chat = chat;
      gen->ctx.id = RandomId(chat ? "chatcmpl-" : "cmpl-");
      gen->ctx.created = UnixNow();
      gen->ctx.model = model_name;
      gen->ctx.logprobs = r.logprobs;
      gen->ctx.echo_logprobs = !chat && r.echo && r.logprobs >= 0;
      gen->ctx.prompt_logprobs = r.prompt_logprobs;
      gen->ctx.tokenizer = &engine_->tokenizer();
      gen->include_usage = r.include_usage;
      gen->streams = std::move(started->streams);
      gen->open = std::move(started->open);
      for (size_t k = 0; k < gen->streams.size(); ++k) {
        const size_t prompt = k / static_cast<size_t>(r.n);
        ChoiceState c;
        c.index = static_cast<int32_t>(k);
        c.counts_prompt = k % static_cast<size_t>(r.n) == 0;
        if (gen->ctx.wants_prompt_scores() && prompt < started->prompt_ids.size()) {
          c.prompt_token_ids = started->prompt_ids[prompt];
        }
        AttachToolParser(r, service_->tool_call_format(), c);
        gen->choices.push_back(c);
        gen->started.push_back(false);
        gen->echo_prefix.push_back(
            r.echo && prompt < started->echo_text.size() ? started->echo_text[prompt] : "");
      }

      if (!r.stream) {
        // Waits for every choice; a client that went away meanwhile aborts them all (a
        // non-streamed request otherwise runs to its max_tokens for nobody).
        absl::Time next_check = absl::Now() + kClientCheckInterval;
        for (size_t i = 0; i < gen->streams.size(); ++i) {
          StreamEvent ev;
          while (!gen->choices[i].finished) {
            if (gen->streams[i]->Pop(&ev, kClientCheckInterval)) gen->Apply(i, ev);
            if (absl::Now() < next_check) continue;
            next_check = absl::Now() + kClientCheckInterval;
            if (HttpListener::ClientGone()) {
              gen->AbortAll();
              res.status = 499;  // nginx's "client closed request"; nobody reads it
              res.set_header("Connection", "close");
              return;
            }
          }
        }
        if (!gen->error.ok()) return SendError(res, FromStatus(gen->error));
        res.set_content(Dump(FullResponse(gen->ctx, gen->choices, gen->echo_prefix)),
                        "application/json");
        return;
      }

      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");  // tell nginx-style proxies not to buffer SSE
      res.set_chunked_content_provider("text/event-stream", [gen](size_t, httplib::DataSink& sink) {
        // A choice starts with its echoed prompt (completions' `echo`), which carries what
        // was asked about the prompt; without echo the first token's chunk carries it.
        // Either waits until the prompt is scored, when its scores are asked for.
        auto echo = [&](size_t i) {
          const ChoiceState& c = gen->choices[i];
          json chunk = StreamChunk(gen->ctx, c, gen->echo_prefix[i], 0, 0, true, false);
          AttachPromptScores(gen->ctx, c, 0, chunk["choices"][0]);
          gen->started[i] = true;
          return WriteEvent(sink, Dump(chunk));
        };
        for (size_t i = 0; i < gen->choices.size(); ++i) {
          if (gen->echo_prefix[i].empty() || !gen->choices[i].prompt_scored()) continue;
          if (!echo(i)) {
            gen->AbortAll();
            return false;
          }
        }
        while (!gen->AllFinished()) {
          const absl::Duration wait =
              gen->streams.size() == 1 ? absl::Milliseconds(500) : absl::Milliseconds(5);
          for (size_t i = 0; i < gen->streams.size(); ++i) {
            if (gen->choices[i].finished) continue;
            StreamEvent ev;
            if (!gen->streams[i]->Pop(&ev, wait)) continue;
            auto [from, to] = gen->Apply(i, ev);
            if (!gen->error.ok()) {
              WriteEvent(sink, FromStatus(gen->error).ToJson());
              WriteEvent(sink, "[DONE]");
              gen->AbortAll();
              sink.done();
              return true;
            }
            const ChoiceState& c = gen->choices[i];
            if (!gen->started[i] && !c.prompt_scored() && !c.finished) continue;
            if (!gen->started[i] && !gen->echo_prefix[i].empty() && !echo(i)) {
              gen->AbortAll();
              return false;
            }
            const bool first = !gen->started[i];
            const bool no_text = c.tools != nullptr ? c.unsent.empty() : ev.text.empty();
            // Nothing to say: no text and no logprobs (tokens held back by the
            // detokenizer or the tool-call parser).
            const bool no_logprobs = from == to || gen->ctx.logprobs < 0;
            if (no_text && no_logprobs && !c.finished && !first) continue;
            gen->started[i] = true;
            // A first chunk that waited for the prompt's scores carries all so far.
            json chunk = StreamChunk(gen->ctx, c, first ? c.text : ev.text, first ? 0 : from, to,
                                     first && gen->ctx.chat, false);
            if (first && gen->ctx.prompt_logprobs >= 0) {
              chunk["choices"][0]["prompt_logprobs"] = PromptLogprobsJson(gen->ctx, c);
            }
            bool ok = WriteEvent(sink, Dump(chunk));
            gen->choices[i].unsent = ParsedDelta();
            if (ok && c.finished)
              ok = WriteEvent(sink, Dump(StreamChunk(gen->ctx, c, "", to, to, false, true)));
            if (!ok) {  // the client went away
              gen->AbortAll();
              return false;
            }
          }
        }
        if (gen->include_usage && !WriteEvent(sink, Dump(UsageChunk(gen->ctx, gen->choices))))
          return false;
        WriteEvent(sink, "[DONE]");
        sink.done();
        return true;
      });
    });
  };
  srv.Post("/v1/completions", generate(false));
  srv.Post("/v1/chat/completions", generate(true));
}

}  // namespace orca
