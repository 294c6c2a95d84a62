// Fuzzes the tool-call parsers (engine/chat/tool_calls.h), which read model output —
// text a prompt (anyone's) can steer: input = one byte choosing the parser, one byte
// seeding where the text is cut into chunks, then the text.
//
// The contract checked besides "no crash, no hang, no blow-up": streaming is
// invisible — the text fed whole and fed in chunks give the same content and calls, and
// the deltas of each add up to the parser's accumulated view; every call has a name and
// an id, and (but for the forced named parser, whose arguments are the raw output) its
// arguments parse as a JSON object — or, for a call that broke off, are a prefix of one.
// Besides, the JSON checker that streamed arguments go through (json_stream.h) agrees
// with nlohmann::json::accept on the text from its first '{' or '[' (to a NUL byte).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/json_stream.h"
#include "engine/chat/tool_calls.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::unique_ptr<orca::ToolCallParser> Make(uint8_t which) {
  switch (which % 5) {
    case 0:
      return orca::MakeToolCallParser(orca::ToolCallFormat::kHermes);
    case 1:
      return orca::MakeToolCallParser(orca::ToolCallFormat::kLlama3Json);
    case 2:
      return orca::MakeToolCallParser(orca::ToolCallFormat::kMistral);
    case 3:
      return orca::MakeForcedListParser();
    default:
      return orca::MakeForcedNamedParser("f");
  }
}

struct Seen {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;
};

// Feeds `chunks` and checks the deltas against the accumulated view.
Seen Run(orca::ToolCallParser& p, const std::vector<std::string>& chunks) {
  Seen seen;
  auto add = [&](const orca::ParsedDelta& d) {
    seen.content += d.content;
    for (const orca::ToolCallDelta& c : d.calls) {
      if (!c.id.empty()) {
        if (c.name.empty() || c.index != static_cast<int>(seen.calls.size())) __builtin_trap();
        seen.calls.emplace_back(c.name, "");
      }
      if (c.index + 1 != static_cast<int>(seen.calls.size())) __builtin_trap();
      seen.calls.back().second += c.arguments;
    }
  };
  for (const std::string& c : chunks) add(p.Feed(c));
  add(p.Finish());
  if (seen.content != p.content() || seen.calls.size() != p.calls().size()) __builtin_trap();
  for (size_t i = 0; i < seen.calls.size(); ++i) {
    if (seen.calls[i].first != p.calls()[i].name || seen.calls[i].second != p.calls()[i].arguments)
      __builtin_trap();
  }
  return seen;
}

// Whether every byte of `s` is read by a checker that is not done at the end.
bool IsJsonPrefix(const std::string& s) {
  orca::JsonStreamChecker checker(orca::kMaxToolJsonDepth);
  for (char c : s) {
    if (checker.Push(c) == orca::JsonStreamChecker::Byte::kBad) return false;
  }
  return !checker.done();
}

// The checker reads the text from its first bracket whole, ending with a value (blanks
// after it), exactly when nlohmann accepts that text; the value's significant bytes
// parse to the same value.
void CheckJsonStream(const std::string& text) {
  const size_t at = text.find_first_of("{[");
  if (at == std::string::npos) return;
  // nlohmann reads a NUL byte as the end of its input (a NUL in a string is refused by
  // both): the text is compared up to one.
  const std::string json = text.substr(at, text.find('\0', at) - at);
  if (orca::JsonNestsDeeperThan(json, orca::kMaxToolJsonDepth)) return;
  orca::JsonStreamChecker checker(orca::kMaxToolJsonDepth);
  std::string significant;
  bool read = true;
  for (char c : json) {
    const auto b = checker.Push(c);
    if (b == orca::JsonStreamChecker::Byte::kSignificant) {
      significant += c;
    } else if (b == orca::JsonStreamChecker::Byte::kBad &&
               !(checker.done() && (c == ' ' || c == '\t' || c == '\n' || c == '\r'))) {
      read = false;
      break;
    }
  }
  const bool accepted = read && checker.done();
  if (accepted != nlohmann::json::accept(json)) __builtin_trap();
  if (accepted && nlohmann::json::parse(significant) != nlohmann::json::parse(json)) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t which = data[0];
  std::mt19937 rng(data[1]);
  const std::string text = orca::fuzz::AsString(data + 2, size - 2);

  auto whole = Make(which);
  const Seen a = Run(*whole, {text});
  std::vector<std::string> chunks;
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = 1 + rng() % 7;
    chunks.push_back(text.substr(pos, n));
    pos += n;
  }
  auto split = Make(which);
  const Seen b = Run(*split, chunks);
  if (a.content != b.content || a.calls != b.calls) __builtin_trap();
  for (const orca::ToolCall& c : whole->calls()) {
    if (c.name.empty() || c.id.empty()) __builtin_trap();
    if (which % 5 == 4) continue;
    if (c.complete) {
      const nlohmann::json args = nlohmann::json::parse(c.arguments, nullptr, false);
      if (!args.is_object()) __builtin_trap();
    } else if (c.arguments.empty() || c.arguments[0] != '{' || !IsJsonPrefix(c.arguments)) {
      __builtin_trap();
    }
  }
  CheckJsonStream(text);
  return 0;
}
