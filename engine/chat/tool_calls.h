// Tool calls in a chat model's output: the formats models write them in, and parsers
// that split generated text into message content and OpenAI `tool_calls`, as the text
// streams in.
//
// Formats (ToolCallFormat), chosen by `--tool-call-parser` (server.tool_call_parser) or
// detected from the chat template (DetectToolCallFormat):
//   hermes       Hermes 2 Pro, Qwen 2/2.5/3: `<tool_call>{"name": .., "arguments": {..}}
//                </tool_call>`, any number, content before them.
//   llama3_json  Llama 3.1/3.2/3.3: the whole output is `{"name": .., "parameters": {..}}`
//                (optionally after `<|python_tag|>`; several separated by `;`), else content.
//   mistral      Mistral v0.3 / Nemo / Small: `[TOOL_CALLS][{"name": .., "arguments": {..}}]`,
//                or the v11 form `[TOOL_CALLS]name[ARGS]{..}` (repeated), content before.
// Besides, two parsers for outputs that a guide forces (tool_choice "required" or a named
// function; the model's own format plays no part there):
//   ForcedNamedParser  the whole output is the arguments object of one named function.
//   ForcedListParser   the output is `[{"name": .., "arguments": {..}}, ...]`
//                      (ToolListSchema builds the JSON schema that forces it).
//
// Streaming contract: Feed() returns only what is certain — content up to a possible
// start of a tool call is held back, and a tool call is returned once its JSON is
// complete (ForcedNamedParser streams the arguments as they come). Concatenating the
// deltas of every Feed() and Finish() gives content() and calls(), the same as feeding
// the whole text at once. Text that looks like a call but does not parse is content.
// A parser is used by one thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace orca {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json, kMistral };

std::string_view ToolCallFormatName(ToolCallFormat format);
// The format a chat template asks its model for, from the markers it writes
// (`<tool_call>`, `<|python_tag|>` / `ipython`, `[TOOL_CALLS]`); kNone when it renders no
// tools.
ToolCallFormat DetectToolCallFormat(std::string_view template_source);

// A complete tool call: `arguments` is JSON text (an object), as OpenAI sends it.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

// Part of a tool call, as a stream chunk's `delta.tool_calls[]` carries it: the first
// delta of a call has its id and name; later ones only more `arguments`.
struct ToolCallDelta {
  int index = 0;
  std::string id;    // first delta only
  std::string name;  // first delta only
  std::string arguments;
};

struct ParsedDelta {
  std::string content;
  std::vector<ToolCallDelta> calls;
  bool empty() const { return content.empty() && calls.empty(); }
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  // Takes newly generated text; returns the content and tool-call parts now certain.
  ParsedDelta Feed(std::string_view text);
  // The output is complete: returns what was held back.
  ParsedDelta Finish();
  // Everything returned so far, accumulated.
  const std::string& content() const { return content_; }
  const std::vector<ToolCall>& calls() const { return calls_; }
  // New calls get 9 alphanumerics as id (Mistral's templates insist) instead of
  // "call_" and 24.
  void UseShortIds() { short_ids_ = true; }

 protected:
  // Consumes what it can of buffer_ from pos_ (to the end when `final`), reporting
  // through EmitContent / EmitCall / EmitArguments.
  virtual void Scan(bool final) = 0;
  void EmitContent(std::string_view text);
  // A new call; `arguments` may be completed later with EmitArguments.
  void EmitCall(std::string name, std::string arguments);
  void EmitArguments(std::string_view more);
  // Returns content up to the next `marker` and where the marker starts (pos_ there);
  // npos when none has come yet: content up to what may be its start is returned, the
  // rest held back (all of it when `final`).
  size_t ContentUntil(std::string_view marker, bool final);
  // Emits the calls `text` holds (one call object or a list of them); false, emitting
  // nothing, when any part is not a call.
  bool EmitCalls(std::string_view text);

  std::string buffer_;  // all text fed so far
  size_t pos_ = 0;      // buffer_[0, pos_) is consumed

 private:
  std::string content_;
  std::vector<ToolCall> calls_;
  ParsedDelta pending_;      // returned by the running Feed / Finish
  std::string held_blanks_;  // blanks ending the content so far, not yet returned
  bool short_ids_ = false;
};

// A parser for `format` (null for kNone).
std::unique_ptr<ToolCallParser> MakeToolCallParser(ToolCallFormat format);
// The whole output is the arguments of `name`.
std::unique_ptr<ToolCallParser> MakeForcedNamedParser(std::string name);
// The output is a JSON list of {"name", "arguments"} objects (ToolListSchema).
std::unique_ptr<ToolCallParser> MakeForcedListParser();

// The JSON schema of a list of calls to `tools` (OpenAI tool objects, validated): each
// item {"name": <a tool's name>, "arguments": <its parameters>}; at least one item, at
// most one unless `parallel`. Tool i's parameters are `$defs` "tool<i>" and its own
// definitions "tool<i>-<name>", its `$ref`s rewritten to match (recursion included).
nlohmann::ordered_json ToolListSchema(const nlohmann::ordered_json& tools, bool parallel);

// Returns where the JSON object or array starting at s[pos] (after blanks) ends, one
// past its closing bracket; npos when `s` ends first or s[pos] starts neither.
size_t JsonContainerEnd(std::string_view s, size_t pos);

// Whether JSON text `s` nests arrays and objects more than `depth` levels (checked
// before parsing text from outside, whose parse and destruction recurse per level).
bool JsonNestsDeeperThan(std::string_view s, int depth);

// The deepest JSON text the parsers and the history's tool-call arguments accept.
inline constexpr int kMaxToolJsonDepth = 64;

}  // namespace orca
