// Chat templates: the Jinja2 programs Hugging Face checkpoints ship in
// tokenizer_config.json ("chat_template") to turn a list of messages into a prompt.
//
// ChatTemplate implements the subset of Jinja2 that chat templates use, with the
// semantics of the reference renderer, transformers' ImmutableSandboxedEnvironment(
// trim_blocks=True, lstrip_blocks=True) with its `tojson`, `raise_exception` and
// `strftime_now`: the output matches it byte for byte. Values follow Python: None, bool,
// int, float, str, list, tuple, dict, Jinja's Undefined, macros and namespaces.
//
// A ChatTemplate is immutable after Parse(); Render() is thread-safe and may run on many
// threads at once. Rendering is bounded so that hostile templates fail fast: output size
// (`max_output_bytes`, also the largest value a template may build), 5M evaluation steps
// (about a second), 32 nested macro calls, nesting depth checked at parse time; the
// deepest template the limits admit needs under 1 MiB of stack.
//
// Known differences from Jinja2: integers are 64-bit (Python's are unbounded; overflow
// is an error), range() returns a list, generators are evaluated eagerly, case mapping
// covers Latin, Greek and Cyrillic only, and {% include %}/{% extends %}/{% import %},
// recursive loops and a few filters (groupby, slice, truncate, wordwrap, urlize, ...)
// are not supported (errors). Dict order follows the context's objects, as Python dicts
// built by json.loads follow the document: pass a nlohmann::ordered_json parsed from the
// request (a nlohmann::json, converted implicitly, has its keys sorted).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca {
namespace chat_internal {
struct Stmt;
}  // namespace chat_internal

// A parsed Jinja2 chat template (the subset Hugging Face chat templates use).
// Immutable after Parse(); Render() is thread-safe.
class ChatTemplate {
 public:
  // Parses `source`; fails with InvalidArgument naming line/column and the problem.
  static absl::StatusOr<std::unique_ptr<ChatTemplate>> Parse(const std::string& source);
  // Renders with `context` as the global variables (e.g. {"messages": [...],
  // "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "tools": null}).
  // Template errors (raise_exception(...), type errors, undefined callables, runaway
  // loops or output over `max_output_bytes`) give InvalidArgument with the message.
  absl::StatusOr<std::string> Render(const nlohmann::ordered_json& context,
                                     size_t max_output_bytes = 1 << 20) const;

  // Frees the parsed template; renders still running on other threads must finish first.
  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

 private:
  ChatTemplate();

  std::string source_;  // normalized, for error positions
  std::vector<std::unique_ptr<chat_internal::Stmt>> body_;
};

}  // namespace orca
