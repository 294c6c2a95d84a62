// GenerationService: the one path from a typed request (OpenAiRequest, whichever
// transport parsed it: the HTTP body parser or the gRPC adapter) to the engine. It
// checks the served model name and that the serving group is ready, renders chat
// prompts through the chat template, tokenizes, fills max_tokens from the context for
// chat, derives each choice's seed, and submits n choices per prompt (prompt-major);
// when one submission fails, the ones before it are aborted. The transports only parse,
// call Start and stream the events back. It also counts the requests it started that
// are still open (their Started alive), for the drain on SIGTERM, and refuses new ones
// once StopAdmitting() was called. Thread-safe (the engine is).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/chat/tool_calls.h"
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
    // Returns true once the server drains (a signal arrived): Start then refuses as after
    // StopAdmitting(). Default: never. Read on every Start, so it may be a flag a signal
    // handler sets.
    std::function<bool()> draining;
    // How the served model writes tool calls (its chat template's format, or the
    // tool-call-parser setting): with tool_choice auto the output is parsed for them,
    // its special tokens kept (the markers of some formats are special tokens).
    ToolCallFormat tool_call_format = ToolCallFormat::kNone;
  };
  // `engine` must outlive the service.
  GenerationService(Engine* engine, Options options)
      : engine_(engine), options_(std::move(options)) {}

  // A started request: one stream per choice, each prompt's text for `echo` and its
  // token ids (for prompt logprobs). It counts as open (open_requests()) until it and
  // its moved-from copies are destroyed: keep it (or `open`) until the answer is written.
  struct Started {
    std::vector<std::shared_ptr<RequestStream>> streams;
    std::vector<std::string> echo_text;            // per prompt (completions)
    std::vector<std::vector<int32_t>> prompt_ids;  // per prompt, as submitted
    std::shared_ptr<void> open;                    // releases the count when the last copy goes
  };
  // Starts `r`. NotFound (param "model") for another model, Unavailable while the group is
  // not ready or after StopAdmitting(), InvalidArgument for what can never run (param
  // "messages" / "prompt"; a context-length error carries kContextLengthPayload),
  // ResourceExhausted when the queue is full.
  absl::StatusOr<Started> Start(const OpenAiRequest& r);
  // From now on Start fails with Unavailable (retriable): the server is shutting down.
  // Requests already started go on.
  void StopAdmitting() { admitting_ = false; }
  // Returns whether Start refuses new requests (StopAdmitting, or Options::draining).
  bool draining() const { return !admitting_ || (options_.draining && options_.draining()); }
  // Returns how many started requests are still open (see Started).
  int open_requests() const { return open_->load(); }
  // Aborts every choice of `started` (its client went away).
  void Abort(const Started& started);

  // NotFound (param "model") unless `model` is empty or the served model.
  absl::Status CheckModel(const std::string& model) const;
  // Renders `messages` with the chat template, `tools` (OpenAI tool objects) as its
  // `tools` when there are any (InvalidArgument, param "messages").
  absl::StatusOr<std::string> RenderChat(const nlohmann::ordered_json& messages,
                                         const nlohmann::ordered_json& tools,
                                         bool add_generation_prompt,
                                         const nlohmann::ordered_json& kwargs) const;
  const std::string& served_model_name() const { return options_.served_model_name; }
  ToolCallFormat tool_call_format() const { return options_.tool_call_format; }
  Engine& engine() const { return *engine_; }

 private:
  Engine* engine_;
  Options options_;
  std::atomic<bool> admitting_{true};
  // Shared with every Started's `open`, so a request may outlive the service.
  std::shared_ptr<std::atomic<int>> open_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace orca
