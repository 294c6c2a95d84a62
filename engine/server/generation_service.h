// GenerationService: the one path from a typed request (OpenAiRequest, whichever
// transport parsed it: the HTTP body parser or the gRPC adapter) to the engine. It
// checks the served model name and that the serving group is ready, renders chat
// prompts through the chat template, tokenizes, fills max_tokens from the context for
// chat, derives each choice's seed, and submits n choices per prompt (prompt-major);
// when one submission fails, the ones before it are aborted. The transports only parse,
// call Start and stream the events back. Thread-safe (the engine is).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/core/engine.h"
#include "engine/server/openai_request.h"

namespace orca {

class GenerationService {
 public:
  struct Options {
    std::string served_model_name;
    std::function<bool()> ready;  // default: always
    // Renders a chat-template context to the prompt text (chat requests only).
    std::function<absl::StatusOr<std::string>(const nlohmann::ordered_json&)> render_chat;
  };
  // `engine` must outlive the service.
  GenerationService(Engine* engine, Options options)
      : engine_(engine), options_(std::move(options)) {}

  // A started request: one stream per choice, and each prompt's text for `echo`.
  struct Started {
    std::vector<std::shared_ptr<RequestStream>> streams;
    std::vector<std::string> echo_text;  // per prompt (completions)
  };
  // Starts `r`. NotFound (param "model") for another model, Unavailable while the group is
  // not ready, InvalidArgument for what can never run (param "messages" / "prompt"; a
  // context-length error carries kContextLengthPayload), ResourceExhausted when the queue
  // is full.
  absl::StatusOr<Started> Start(const OpenAiRequest& r);
  // Aborts every choice of `started` (its client went away).
  void Abort(const Started& started);

  // NotFound (param "model") unless `model` is empty or the served model.
  absl::Status CheckModel(const std::string& model) const;
  // Renders `messages` with the chat template (InvalidArgument, param "messages").
  absl::StatusOr<std::string> RenderChat(const nlohmann::ordered_json& messages,
                                         bool add_generation_prompt,
                                         const nlohmann::ordered_json& kwargs) const;
  const std::string& served_model_name() const { return options_.served_model_name; }
  Engine& engine() const { return *engine_; }

 private:
  Engine* engine_;
  Options options_;
};

}  // namespace orca
