#include "engine/server/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/server/api_error.h"
#include "engine/server/authenticator.h"
#include "engine/server/generation_service.h"
#include "engine/server/openai_request.h"
#include "orca/v1/inference.grpc.pb.h"

namespace orca {
namespace {

void AddLogprob(int32_t token_id, float logprob, int32_t rank,
                const std::vector<std::pair<int32_t, float>>& top, v1::TokenLogprob* out) {
  out->set_token_id(token_id);
  out->set_logprob(logprob);
  out->set_rank(rank);
  for (const auto& [id, p] : top) {
    v1::TopLogprob* t = out->add_top();
    t->set_token_id(id);
    t->set_logprob(p);
  }
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(GrpcCode(s)), std::string(s.message()));
}

// The typed request of a GenerateRequest (the same one an HTTP body parses to), checked
// by the same validator.
absl::StatusOr<OpenAiRequest> FromProto(const v1::GenerateRequest& r) {
  OpenAiRequest o;
  o.model = r.model();
  if (r.has_token_ids()) {
    o.prompt_texts.emplace_back();
    o.prompt_ids.emplace_back(r.token_ids().ids().begin(), r.token_ids().ids().end());
    for (int32_t id : o.prompt_ids.back()) {
      if (id < 0) return absl::InvalidArgumentError("token ids must be non-negative");
    }
  } else {
    if (r.text().empty()) return absl::InvalidArgumentError("'prompt' must not be empty");
    o.prompt_texts.push_back(r.text());
    o.prompt_ids.emplace_back();
  }
  GenerateParams& p = o.params;
  p.max_tokens = r.max_tokens() != 0 ? r.max_tokens() : 16;
  p.min_tokens = r.min_tokens();
  p.stop.assign(r.stop().begin(), r.stop().end());
  p.stop_token_ids.assign(r.stop_token_ids().begin(), r.stop_token_ids().end());
  p.ignore_eos = r.ignore_eos();
  p.include_stop_str_in_output = r.include_stop_str_in_output();
  if (r.has_logprobs()) o.logprobs = r.logprobs();
  if (r.has_prompt_logprobs()) o.prompt_logprobs = r.prompt_logprobs();
  const v1::SamplingParameters& s = r.sampling();
  SamplingParams& sp = p.sampling;
  if (s.has_temperature()) sp.temperature = s.temperature();
  sp.top_k = s.top_k();
  if (s.has_top_p()) sp.top_p = s.top_p();
  sp.min_p = s.min_p();
  if (s.has_repetition_penalty()) sp.repetition_penalty = s.repetition_penalty();
  sp.presence_penalty = s.presence_penalty();
  sp.frequency_penalty = s.frequency_penalty();
  sp.logprobs = o.logprobs;
  sp.prompt_logprobs = EffectivePromptLogprobs(o);
  if (s.has_seed()) o.seed = static_cast<uint64_t>(s.seed());
  ORCA_RETURN_IF_ERROR(ValidateOpenAiRequest(o));
  return o;
}

v1::FinishReason ToProto(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return v1::FINISH_REASON_STOP;
    case FinishReason::kLength:
      return v1::FINISH_REASON_LENGTH;
    case FinishReason::kAbort:
      return v1::FINISH_REASON_ABORT;
    default:
      return v1::FINISH_REASON_UNSPECIFIED;
  }
}

}  // namespace

class GrpcServer::Service final : public v1::Inference::Service {
 public:
  Service(Engine* engine, GrpcServerOptions options)
      : engine_(engine),
        options_(std::move(options)),
        authenticator_(options_.api_key),
        service_(engine, GenerationService::Options{options_.served_model_name, options_.ready,
                                                    nullptr, options_.draining}) {}

  void BeginShutdown() { service_.StopAdmitting(); }
  int open_requests() const { return service_.open_requests(); }

  // Every method starts with Admit: authentication, whether the server still admits, then
  // one of the client's places (held by the returned slot until the call ends).
  absl::StatusOr<ClientLimiter::Slot> Admit(const grpc::ServerContext& context) const {
    absl::string_view authorization;
    const auto& metadata = context.client_metadata();
    if (auto it = metadata.find("authorization"); it != metadata.end()) {
      authorization = absl::string_view(it->second.data(), it->second.size());
    }
    ORCA_RETURN_IF_ERROR(authenticator_.Check(authorization));
    if (service_.draining()) {
      return absl::UnavailableError("the server is shutting down; retry the call");
    }
    if (options_.client_limiter == nullptr) return ClientLimiter::Slot();
    return options_.client_limiter->Acquire(ClientKeyFromGrpcPeer(context.peer()));
  }

  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    absl::StatusOr<ClientLimiter::Slot> slot = Admit(*context);
    if (!slot.ok()) return ToGrpc(slot.status());
    if (request->prompt_case() == v1::GenerateRequest::PROMPT_NOT_SET) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "a prompt (text or token_ids) is required");
    }
    auto parsed = FromProto(*request);
    if (!parsed.ok()) return ToGrpc(parsed.status());
    auto started = service_.Start(*parsed);
    if (!started.ok()) return ToGrpc(started.status());
    const std::shared_ptr<RequestStream> stream = started->streams.front();  // n = 1
    while (true) {
      StreamEvent ev;
      if (!stream->Pop(&ev, absl::Milliseconds(100))) {
        if (context->IsCancelled()) {
          engine_->Abort(stream->id());
          return grpc::Status::CANCELLED;
        }
        continue;
      }
      // An abort with a status is the engine's (shutting down: UNAVAILABLE, retriable).
      if (ev.finish_reason == FinishReason::kError ||
          (ev.finish_reason == FinishReason::kAbort && !ev.status.ok())) {
        return ToGrpc(ev.status.ok() ? absl::InternalError("generation failed") : ev.status);
      }
      v1::GenerateResponse out;
      out.set_text(ev.text);
      for (int32_t t : ev.token_ids) out.add_token_ids(t);
      if (parsed->logprobs >= 0) {
        for (const SampledToken& s : ev.samples) {
          AddLogprob(s.token_id, s.logprob, 0, s.top_logprobs, out.add_logprobs());
        }
      }
      for (const PromptLogprob& p : ev.prompt_logprobs) {
        AddLogprob(p.token_id, p.logprob, p.rank, p.top_logprobs, out.add_prompt_logprobs());
      }
      if (ev.finished) {
        out.set_finish_reason(ToProto(ev.finish_reason));
        out.mutable_usage()->set_prompt_tokens(ev.prompt_tokens);
        out.mutable_usage()->set_completion_tokens(ev.completion_tokens);
        out.mutable_usage()->set_cached_prompt_tokens(ev.cached_prompt_tokens);
      }
      if (!writer->Write(out)) {  // the client went away
        engine_->Abort(stream->id());
        return grpc::Status::CANCELLED;
      }
      if (ev.finished) return grpc::Status::OK;
    }
  }

 private:
  Engine* engine_;
  GrpcServerOptions options_;
  Authenticator authenticator_;
  GenerationService service_;
};

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(Engine* engine,
                                                              GrpcServerOptions options) {
  auto s = std::unique_ptr<GrpcServer>(new GrpcServer());
  const std::string address = options.address;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  const bool tls = options.tls.has_value();
  if (tls) {
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_key_cert_pairs.push_back({options.tls->key_pem, options.tls->cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  s->service_ = std::make_unique<Service>(engine, std::move(options));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, credentials, &s->port_);
  builder.RegisterService(s->service_.get());
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 4);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", address));
  }
  ORCA_LOG(INFO) << "gRPC API (orca.v1.Inference) on port " << s->port_ << (tls ? " over TLS" : "");
  return s;
}

GrpcServer::~GrpcServer() { Stop(); }

void GrpcServer::BeginShutdown() {
  if (service_) service_->BeginShutdown();
}

int GrpcServer::open_requests() const { return service_ ? service_->open_requests() : 0; }

void GrpcServer::Stop() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
}

}  // namespace orca
