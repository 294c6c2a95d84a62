#include "engine/server/grpc_server.h"

#include <grpcpp/grpcpp.h>


#include "absl/strings/str_cat.h"
#include "engine/common/log.h"
#include "engine/server/api_error.h"
#include "engine/server/openai_request.h"
#include "orca/v1/inference.grpc.pb.h"

namespace orca {
namespace {

using json = nlohmann::json;

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(GrpcCode(s)), std::string(s.message()));
}

// The equivalent /v1/completions body, so both APIs share one validator.
json ToCompletionBody(const v1::GenerateRequest& r) {
  json j = json::object();
  if (!r.model().empty()) j["model"] = r.model();
  if (r.has_token_ids()) {
    j["prompt"] =
        json(std::vector<int32_t>(r.token_ids().ids().begin(), r.token_ids().ids().end()));
  } else {
    j["prompt"] = r.text();
  }
  if (r.max_tokens() != 0) j["max_tokens"] = r.max_tokens();
  if (r.min_tokens() != 0) j["min_tokens"] = r.min_tokens();
  if (r.stop_size() > 0)
    j["stop"] = json(std::vector<std::string>(r.stop().begin(), r.stop().end()));
  if (r.stop_token_ids_size() > 0) {
    j["stop_token_ids"] =
        json(std::vector<int32_t>(r.stop_token_ids().begin(), r.stop_token_ids().end()));
  }
  j["ignore_eos"] = r.ignore_eos();
  j["include_stop_str_in_output"] = r.include_stop_str_in_output();
  if (r.has_logprobs()) j["logprobs"] = r.logprobs();
  const v1::SamplingParameters& s = r.sampling();
  if (s.has_temperature()) j["temperature"] = s.temperature();
  if (s.top_k() != 0) j["top_k"] = s.top_k();
  if (s.has_top_p()) j["top_p"] = s.top_p();
  if (s.min_p() != 0) j["min_p"] = s.min_p();
  if (s.has_repetition_penalty()) j["repetition_penalty"] = s.repetition_penalty();
  if (s.presence_penalty() != 0) j["presence_penalty"] = s.presence_penalty();
  if (s.frequency_penalty() != 0) j["frequency_penalty"] = s.frequency_penalty();
  if (s.has_seed()) j["seed"] = s.seed();
  return j;
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
      : engine_(engine), options_(std::move(options)) {}

  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    if (request->prompt_case() == v1::GenerateRequest::PROMPT_NOT_SET) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "a prompt (text or token_ids) is required");
    }
    auto parsed = ParseOpenAiRequest(ToCompletionBody(*request).dump(), /*chat=*/false);
    if (!parsed.ok()) return ToGrpc(parsed.status());
    if (!parsed->model.empty() && parsed->model != options_.served_model_name) {
      return ToGrpc(absl::NotFoundError(absl::StrCat("The model `", parsed->model, "` does not exist.")));
    }
    if (options_.ready && !options_.ready()) {
      return ToGrpc(absl::UnavailableError("the serving group is not ready; retry shortly"));
    }
    GenerateParams params = parsed->params;
    params.prompt_tokens =
        parsed->prompt_ids[0].empty()
            ? engine_->tokenizer().Encode(parsed->prompt_texts[0], /*add_special_tokens=*/true)
            : parsed->prompt_ids[0];
    params.seed = parsed->seed;
    auto stream = engine_->Submit(std::move(params));
    if (!stream.ok()) return ToGrpc(stream.status());
    while (true) {
      StreamEvent ev;
      if (!(*stream)->Pop(&ev, absl::Milliseconds(100))) {
        if (context->IsCancelled()) {
          engine_->Abort((*stream)->id());
          return grpc::Status::CANCELLED;
        }
        continue;
      }
      if (ev.finish_reason == FinishReason::kError) return ToGrpc(ev.status);
      v1::GenerateResponse out;
      out.set_text(ev.text);
      for (int32_t t : ev.token_ids) out.add_token_ids(t);
      if (parsed->logprobs >= 0) {
        for (const SampledToken& s : ev.samples) {
          v1::TokenLogprob* lp = out.add_logprobs();
          lp->set_token_id(s.token_id);
          lp->set_logprob(s.logprob);
          for (const auto& [id, p] : s.top_logprobs) {
            v1::TopLogprob* top = lp->add_top();
            top->set_token_id(id);
            top->set_logprob(p);
          }
        }
      }
      if (ev.finished) {
        out.set_finish_reason(ToProto(ev.finish_reason));
        out.mutable_usage()->set_prompt_tokens(ev.prompt_tokens);
        out.mutable_usage()->set_completion_tokens(ev.completion_tokens);
        out.mutable_usage()->set_cached_prompt_tokens(ev.cached_prompt_tokens);
      }
      if (!writer->Write(out)) {  // the client went away
        engine_->Abort((*stream)->id());
        return grpc::Status::CANCELLED;
      }
      if (ev.finished) return grpc::Status::OK;
    }
  }

 private:
  Engine* engine_;
  GrpcServerOptions options_;
};

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(Engine* engine,
                                                              GrpcServerOptions options) {
  auto s = std::unique_ptr<GrpcServer>(new GrpcServer());
  const std::string address = options.address;
  s->service_ = std::make_unique<Service>(engine, std::move(options));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &s->port_);
  builder.RegisterService(s->service_.get());
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 4);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", address));
  }
  ORCA_LOG(INFO) << "gRPC API (orca.v1.Inference) on port " << s->port_;
  return s;
}

GrpcServer::~GrpcServer() { Stop(); }

void GrpcServer::Stop() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
}

}  // namespace orca
