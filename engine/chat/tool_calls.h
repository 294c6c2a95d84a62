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
// start of a tool call is held back. A call object whose first members are its name and
// its arguments object (`{"name": "f", "arguments": {` — what every format's models
// write) is a call from there on: its id and name go out at once and its arguments as
// they are written, as OpenAI streams them — checked byte by byte (json_stream.h), blanks
// between tokens dropped, so they are always a prefix of a JSON object, and the whole
// object once it closes. A call that breaks off (a byte no JSON text could follow, or
// the output ending inside it: max_tokens) keeps the prefix it had and is marked
// incomplete; what follows it up to the end of its call markup (`</tool_call>`), or the
// rest of the output in the list formats, is dropped. Any other call text (keys in
// another order, arguments as a string) is returned once its JSON is complete, and is
// content if it is not a call. Concatenating the deltas of every Feed() and
// Finish() gives content() and calls(), the same as feeding the whole text at once.
// A parser is used by one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/json_stream.h"

namespace orca {

// The deepest JSON text the parsers and the history's tool-call arguments accept.
inline constexpr int kMaxToolJsonDepth = 64;

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
  // False when the call broke off: `arguments` is then a prefix of a JSON object.
  bool complete = true;
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
  // How reading a streamed call went.
  enum class Read {
    kWait,         // more text is needed: call again with the same position
    kNotStreamed,  // not a name and an arguments object: nothing was returned
    kDone,         // the call is out, *end past its object (or, when more members
                   // follow the arguments, at them: they are not read)
    kBroke,        // the call is out, cut short: *end is where it broke
  };
  // Reads the call object {"name": "..", "arguments" | "parameters": {..}, ..} that starts
  // at buffer_[at] ('{'), emitting the call as soon as its arguments object opens and its
  // arguments as they come.
  Read StreamCall(size_t at, bool final, size_t* end);
  // The same for the arguments object of `name` starting at buffer_[at] ('{').
  Read StreamArguments(std::string name, size_t at, bool final, size_t* end);
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
  // The call being streamed.
  struct Streaming {
    size_t at;          // where its object (or arguments object) starts
    size_t next;        // the next byte to read
    bool whole_object;  // at is the call object's '{', not the arguments'
    bool in_rest;       // the arguments are done; the object's '}' is next
    JsonStreamChecker arguments{kMaxToolJsonDepth};
  };
  Read ContinueStream(bool final, size_t* end);

  std::string content_;
  std::vector<ToolCall> calls_;
  std::optional<Streaming> streaming_;
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

}  // namespace orca
