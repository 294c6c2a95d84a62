#include "engine/chat/tool_calls.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace orca {
namespace {

using ojson = nlohmann::ordered_json;
constexpr size_t npos = std::string_view::npos;

bool StartsWith(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }
bool Contains(std::string_view s, std::string_view part) { return s.find(part) != npos; }

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipBlanks(std::string_view s, size_t p) {
  while (p < s.size() && IsBlank(s[p])) ++p;
  return p;
}

// The length of the longest proper suffix of s[from, end) that begins `marker`: text
// that may yet become the marker, so it is held back.
size_t PartialMarker(std::string_view s, size_t from, std::string_view marker) {
  const size_t avail = s.size() - from;
  for (size_t n = std::min(avail, marker.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

std::string RandomAlnum(size_t n) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<size_t> pick(0, sizeof(kChars) - 2);
  std::string out(n, ' ');
  for (char& c : out) c = kChars[pick(rng)];
  return out;
}

// A call object {"name": "...", "arguments" | "parameters": {...}}: its name and its
// arguments as compact JSON text. False when `v` is not one.
bool CallFromJson(const ojson& v, std::string* name, std::string* arguments) {
  if (!v.is_object()) return false;
  auto n = v.find("name");
  if (n == v.end() || !n->is_string() || n->get_ref<const std::string&>().empty()) return false;
  auto a = v.find("arguments");
  if (a == v.end()) a = v.find("parameters");
  if (a == v.end()) {
    *arguments = "{}";
  } else if (a->is_object()) {
    *arguments = a->dump();
  } else if (a->is_string()) {  // arguments already as JSON text
    const std::string& text = a->get_ref<const std::string&>();
    if (JsonNestsDeeperThan(text, kMaxToolJsonDepth)) return false;
    const ojson parsed = ojson::parse(text, nullptr, false);
    if (!parsed.is_object()) return false;
    *arguments = parsed.dump();
  } else {
    return false;
  }
  *name = n->get<std::string>();
  return true;
}

// Parses `text` as one call object or a list of them; returns the calls, or nothing
// when any part is not a call.
std::vector<std::pair<std::string, std::string>> CallsFromText(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  if (JsonNestsDeeperThan(text, kMaxToolJsonDepth)) return {};
  const ojson v = ojson::parse(text.begin(), text.end(), nullptr, false);
  if (v.is_discarded()) return {};
  const ojson list = v.is_array() ? v : ojson::array({v});
  for (const ojson& item : list) {
    std::string name, args;
    if (!CallFromJson(item, &name, &args)) return {};
    out.emplace_back(std::move(name), std::move(args));
  }
  return out;
}

// Hermes / Qwen: <tool_call>{json}</tool_call>, content around.
class HermesParser : public ToolCallParser {
  static constexpr std::string_view kOpen = "<tool_call>", kClose = "</tool_call>";
  bool in_call_ = false;   // pos_ is at a `<tool_call>` whose body is being read
  size_t skip_to_ = npos;  // the body's call is out: the rest up to `</tool_call>` is
                           // dropped, from here

  void Scan(bool final) override {
    while (pos_ < buffer_.size()) {
      if (!in_call_) {
        if (ContentUntil(kOpen, final) == npos) return;
        in_call_ = true;
      }
      const size_t open = pos_, body = open + kOpen.size();
      if (skip_to_ == npos) {
        const size_t p = SkipBlanks(buffer_, body);
        if (p < buffer_.size() && buffer_[p] == '{') {
          size_t end = 0;
          const Read read = StreamCall(p, final, &end);
          if (read == Read::kWait) return;
          if (read != Read::kNotStreamed) skip_to_ = end;
        }
      }
      const size_t close = buffer_.find(kClose, skip_to_ == npos ? body : skip_to_);
      if (close == npos && !final) return;
      const size_t end = close == npos ? buffer_.size() : close + kClose.size();
      if (skip_to_ == npos) {  // read whole
        const size_t body_end = close == npos ? buffer_.size() : close;
        if (!EmitCalls(std::string_view(buffer_).substr(body, body_end - body))) {
          EmitContent(std::string_view(buffer_).substr(open, end - open));
        }
      }
      pos_ = end;
      in_call_ = false;
      skip_to_ = npos;
    }
  }
};

// Llama 3.x JSON: the output is [<|python_tag|>]{call}[; {call}...] or plain content.
class Llama3JsonParser : public ToolCallParser {
  enum class Mode { kUnknown, kContent, kCalls, kEnded };
  Mode mode_ = Mode::kUnknown;

  void Scan(bool final) override {
    static constexpr std::string_view kTag = "<|python_tag|>";
    if (mode_ == Mode::kUnknown) {
      const size_t p = SkipBlanks(buffer_, pos_);
      const std::string_view rest = std::string_view(buffer_).substr(p);
      if (StartsWith(rest, kTag)) {
        mode_ = Mode::kCalls;
        pos_ = p + kTag.size();
      } else if (StartsWith(rest, "{")) {
        mode_ = Mode::kCalls;
        pos_ = p;
      } else if (!final && StartsWith(kTag, rest)) {
        return;  // blanks, or the start of the tag
      } else {
        mode_ = Mode::kContent;
      }
    }
    if (mode_ == Mode::kContent) {
      EmitContent(std::string_view(buffer_).substr(pos_));
      pos_ = buffer_.size();
      return;
    }
    while (mode_ == Mode::kCalls) {
      size_t p = pos_;
      while (p < buffer_.size() && (IsBlank(buffer_[p]) || buffer_[p] == ';')) ++p;
      if (p == buffer_.size()) {
        if (final) pos_ = p;
        return;
      }
      if (buffer_[p] == '{') {
        size_t end = 0;
        const Read read = StreamCall(p, final, &end);
        if (read == Read::kWait) return;
        if (read == Read::kBroke) mode_ = Mode::kEnded;
        if (read != Read::kNotStreamed) {
          pos_ = end;
          continue;
        }
      }
      const size_t end = JsonContainerEnd(buffer_, p);
      if (end == npos) {
        if (!final) return;
        EmitContent(std::string_view(buffer_).substr(pos_));
        pos_ = buffer_.size();
        return;
      }
      if (!EmitCalls(std::string_view(buffer_).substr(p, end - p))) {
        EmitContent(std::string_view(buffer_).substr(pos_, end - pos_));
      }
      pos_ = end;
    }
    pos_ = buffer_.size();  // kEnded: a call broke off; the rest is dropped
  }
};

// Mistral: [TOOL_CALLS][{call}, ...] (v3) or [TOOL_CALLS]name[ARGS]{args} (v11). What
// follows a marker and is not a call is content, the marker with it; scanning goes on
// after it, so a later marker may still start calls.
class MistralParser : public ToolCallParser {
  static constexpr std::string_view kMarker = "[TOOL_CALLS]", kArgs = "[ARGS]";
  bool in_calls_ = false;  // pos_ is past a marker
  bool in_list_ = false;   // inside a list whose first call streamed
  bool ended_ = false;     // a call broke off: the rest is dropped

  void Scan(bool final) override {
    while (pos_ < buffer_.size() && !ended_) {
      if (!in_calls_) {
        if (ContentUntil(kMarker, final) == npos) return;
        pos_ += kMarker.size();
        in_calls_ = true;
      }
      if (!(in_list_ ? ScanList(final) : ScanCalls(final))) return;
      in_calls_ = in_list_ = false;
    }
    if (ended_) pos_ = buffer_.size();
  }

  // Reads the calls after a marker (pos_ just past it). Returns false to wait for more
  // text; true once pos_ is past them, or past what is content instead.
  bool ScanCalls(bool final) {
    const size_t marker_at = pos_ - kMarker.size();
    const std::string_view text = buffer_;
    // Content from the marker to `stop` (not a call); scanning resumes there.
    auto not_a_call = [&](size_t stop) {
      EmitContent(text.substr(marker_at, stop - marker_at));
      pos_ = stop;
      return true;
    };
    const size_t p = SkipBlanks(text, pos_);
    if (p == text.size()) return false;  // a marker at the very end says nothing
    size_t json_at = p;
    if (text[p] == '[') {  // v3: a list, whose first call may stream
      const size_t first = SkipBlanks(text, p + 1);
      if (first < text.size() && text[first] == '{') {
        size_t end = 0;
        const Read read = StreamCall(first, final, &end);
        if (read == Read::kWait) return false;
        if (read != Read::kNotStreamed) {
          pos_ = end;
          ended_ = read == Read::kBroke;
          in_list_ = !ended_;
          return !in_list_ || ScanList(final);
        }
      }
    } else if (text[p] != '{') {  // v11: name[ARGS]{...}
      size_t q = p;
      while (q < text.size() &&
             (absl::ascii_isalnum(text[q]) || text[q] == '_' || text[q] == '-' || text[q] == '.')) {
        ++q;
      }
      const std::string_view after = text.substr(q);
      if (q == text.size() || (StartsWith(kArgs, after) && after.size() < kArgs.size())) {
        return final ? not_a_call(text.size()) : false;  // the name or [ARGS] still coming
      }
      if (q == p || !StartsWith(after, kArgs)) return not_a_call(q);
      json_at = SkipBlanks(text, q + kArgs.size());
      if (json_at == text.size()) return final ? not_a_call(text.size()) : false;
      if (text[json_at] != '{') return not_a_call(json_at);
      size_t end = 0;
      const Read read = StreamArguments(buffer_.substr(p, q - p), json_at, final, &end);
      if (read == Read::kWait) return false;
      pos_ = end;
      ended_ = read == Read::kBroke;
      return true;
    }
    // Read whole: a list whose first item does not stream, or a bare call object.
    const size_t end = JsonContainerEnd(text, json_at);
    if (end == npos) return final ? not_a_call(text.size()) : false;
    if (!EmitCalls(text.substr(json_at, end - json_at))) return not_a_call(end);
    pos_ = end;
    return true;
  }

  // Reads the rest of a list whose first call streamed (pos_ past the last call): more
  // calls, then `]`. Anything else ends the list and is content, from there on.
  bool ScanList(bool final) {
    while (true) {
      size_t p = pos_;
      while (p < buffer_.size() && (IsBlank(buffer_[p]) || buffer_[p] == ',')) ++p;
      if (p == buffer_.size()) {
        if (!final) return false;
        pos_ = p;
        return true;
      }
      if (buffer_[p] == ']') {
        pos_ = p + 1;
        return true;
      }
      if (buffer_[p] == '{') {
        size_t end = 0;
        const Read read = StreamCall(p, final, &end);
        if (read == Read::kWait) return false;
        if (read != Read::kNotStreamed) {
          pos_ = end;
          ended_ = read == Read::kBroke;
          if (ended_) return true;
          continue;
        }
        const size_t item_end = JsonContainerEnd(buffer_, p);
        if (item_end == npos && !final) return false;
        if (item_end != npos && EmitCalls(std::string_view(buffer_).substr(p, item_end - p))) {
          pos_ = item_end;
          continue;
        }
      }
      pos_ = p;
      return true;
    }
  }
};

// tool_choice naming a function: the output is its arguments.
class ForcedNamedParser : public ToolCallParser {
 public:
  explicit ForcedNamedParser(std::string name) : name_(std::move(name)) {}

 private:
  void Scan(bool final) override {
    if (!started_ && (final || pos_ < buffer_.size())) {
      EmitCall(name_, "");
      started_ = true;
    }
    EmitArguments(std::string_view(buffer_).substr(pos_));
    pos_ = buffer_.size();
  }
  std::string name_;
  bool started_ = false;
};

// tool_choice "required": [{"name": .., "arguments": {..}}, ...]. Nothing after the
// closing bracket counts (the guide ends the output there).
class ForcedListParser : public ToolCallParser {
  bool opened_ = false, closed_ = false, gave_content_ = false;

  void Scan(bool final) override {
    if (closed_) {
      pos_ = buffer_.size();
      return;
    }
    size_t p = SkipBlanks(buffer_, pos_);
    if (!opened_) {
      if (p == buffer_.size()) return;
      if (buffer_[p] != '[') {
        if (final) CutShort();
        return;
      }
      opened_ = true;
      pos_ = p + 1;
    }
    while (!closed_) {
      p = pos_;
      while (p < buffer_.size() && (IsBlank(buffer_[p]) || buffer_[p] == ',')) ++p;
      if (p < buffer_.size() && buffer_[p] == ']') {
        closed_ = true;
        break;
      }
      if (p < buffer_.size() && buffer_[p] == '{') {
        size_t end = 0;
        const Read read = StreamCall(p, final, &end);
        if (read == Read::kWait) return;
        closed_ = read == Read::kBroke;  // cut short by max_tokens: nothing follows
        if (read != Read::kNotStreamed) {
          pos_ = end;
          continue;
        }
      }
      const size_t end = p == buffer_.size() ? npos : JsonContainerEnd(buffer_, p);
      if (end == npos) {
        if (final) CutShort();
        return;
      }
      if (!EmitCalls(std::string_view(buffer_).substr(p, end - p))) {
        EmitContent(std::string_view(buffer_).substr(p, end - p));
        gave_content_ = true;
      }
      pos_ = end;
    }
    pos_ = buffer_.size();
  }

  // The output ended inside the list (max_tokens) where no call had begun: with nothing
  // returned yet the text is content, else the unfinished rest is dropped (it is the
  // guide's syntax, not prose; finish_reason says "length").
  void CutShort() {
    if (calls().empty() && !gave_content_) EmitContent(buffer_);
    pos_ = buffer_.size();
  }
};

}  // namespace

std::string_view ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3Json:
      return "llama3_json";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kNone:
      break;
  }
  return "none";
}

ToolCallFormat DetectToolCallFormat(std::string_view t) {
  if (Contains(t, "[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  if (Contains(t, "<tool_call>")) return ToolCallFormat::kHermes;
  if (Contains(t, "<function=")) return ToolCallFormat::kNone;  // Functionary's own
  if (Contains(t, "<|python_tag|>") || Contains(t, "ipython")) {
    return ToolCallFormat::kLlama3Json;
  }
  return ToolCallFormat::kNone;
}

namespace {

// Walks the JSON text from s[p] (an opening bracket) and calls `at_depth(depth, i)`
// after each bracket; stops where that returns true (returns that index) or at the end.
template <typename F>
size_t WalkBrackets(std::string_view s, size_t p, F at_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (; p < s.size(); ++p) {
    const char c = s[p];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else {
      continue;
    }
    if (at_depth(depth, p)) return p;
  }
  return npos;
}

}  // namespace

size_t JsonContainerEnd(std::string_view s, size_t pos) {
  const size_t p = SkipBlanks(s, pos);
  if (p == s.size() || (s[p] != '{' && s[p] != '[')) return npos;
  const size_t close = WalkBrackets(s, p, [](int depth, size_t) { return depth == 0; });
  return close == npos ? npos : close + 1;
}

bool JsonNestsDeeperThan(std::string_view s, int depth) {
  return WalkBrackets(s, 0, [depth](int d, size_t) { return d > depth; }) != npos;
}

ParsedDelta ToolCallParser::Feed(std::string_view text) {
  buffer_.append(text);
  Scan(/*final=*/false);
  return std::exchange(pending_, {});
}

ParsedDelta ToolCallParser::Finish() {
  Scan(/*final=*/true);
  // Blanks at the end of the content are kept back in case a call follows; with calls
  // they only separated them.
  if (calls_.empty() && !held_blanks_.empty()) {
    content_ += held_blanks_;
    pending_.content += held_blanks_;
  }
  held_blanks_.clear();
  return std::exchange(pending_, {});
}

size_t ToolCallParser::ContentUntil(std::string_view marker, bool final) {
  const size_t at = buffer_.find(marker, pos_);
  const size_t keep = at != npos || final ? 0 : PartialMarker(buffer_, pos_, marker);
  const size_t stop = at != npos ? at : buffer_.size() - keep;
  EmitContent(std::string_view(buffer_).substr(pos_, stop - pos_));
  pos_ = stop;
  return at;
}

bool ToolCallParser::EmitCalls(std::string_view text) {
  auto calls = CallsFromText(text);
  for (auto& [name, args] : calls) EmitCall(std::move(name), std::move(args));
  return !calls.empty();
}

void ToolCallParser::EmitContent(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && IsBlank(text[end - 1])) --end;
  if (end == 0) {
    held_blanks_.append(text);
    return;
  }
  std::string out = std::exchange(held_blanks_, "");
  out.append(text.substr(0, end));
  held_blanks_.assign(text.substr(end));
  content_ += out;
  pending_.content += out;
}

void ToolCallParser::EmitCall(std::string name, std::string arguments) {
  ToolCall call{short_ids_ ? RandomAlnum(9) : absl::StrCat("call_", RandomAlnum(24)),
                std::move(name), std::move(arguments)};
  pending_.calls.push_back(
      ToolCallDelta{static_cast<int>(calls_.size()), call.id, call.name, call.arguments});
  calls_.push_back(std::move(call));
}

void ToolCallParser::EmitArguments(std::string_view more) {
  if (more.empty() || calls_.empty()) return;
  calls_.back().arguments.append(more);
  const int index = static_cast<int>(calls_.size()) - 1;
  if (pending_.calls.empty() || pending_.calls.back().index != index) {
    pending_.calls.push_back(ToolCallDelta{index, "", "", ""});
  }
  pending_.calls.back().arguments.append(more);
}

namespace {

enum class Header { kPrefix, kOther, kMatch };

// Reads the JSON string token at v[*p] into *out, *p past it.
Header ReadString(std::string_view v, size_t* p, std::string* out) {
  if (v[*p] != '"') return Header::kOther;
  size_t q = *p + 1;
  for (bool escaped = false; q < v.size(); ++q) {
    if (escaped) {
      escaped = false;
    } else if (v[q] == '\\') {
      escaped = true;
    } else if (v[q] == '"') {
      break;
    }
  }
  if (q == v.size()) return Header::kPrefix;
  const ojson s = ojson::parse(v.substr(*p, q + 1 - *p), nullptr, false);
  if (!s.is_string()) return Header::kOther;
  *out = s.get<std::string>();
  *p = q + 1;
  return Header::kMatch;
}

// Whether s[at..] begins `{"name": "<name>", "arguments" | "parameters": {` (blanks
// between the tokens allowed); *args_at is where the arguments' '{' is. kPrefix while
// the text may still become one. Headers are short: one longer than 1,024 bytes is not
// one (so re-reading a header as it grows stays cheap).
Header ReadCallHeader(std::string_view s, size_t at, std::string* name, size_t* args_at) {
  constexpr size_t kMaxHeader = 1024;
  const std::string_view v = s.substr(0, std::min(s.size(), at + kMaxHeader));
  const Header ran_out = v.size() < s.size() ? Header::kOther : Header::kPrefix;
  size_t p = at + 1;  // past the '{'
  // The tokens after the '{': the key "name", ':', the name, ',', the key "arguments" or
  // "parameters", ':', '{' (bytes where kBytes has one, else strings), blanks between.
  static constexpr char kBytes[] = {0, ':', 0, ',', 0, ':', '{'};
  std::string text;
  for (int step = 0; step < static_cast<int>(sizeof(kBytes)); ++step) {
    p = SkipBlanks(v, p);
    if (p == v.size()) return ran_out;
    if (kBytes[step] != 0) {
      if (v[p] != kBytes[step]) return Header::kOther;
      if (step == 6) *args_at = p;
      ++p;
      continue;
    }
    const Header h = ReadString(v, &p, &text);
    if (h != Header::kMatch) return h == Header::kPrefix ? ran_out : h;
    const bool wanted = step == 0   ? text == "name"
                        : step == 2 ? !text.empty()
                                    : text == "arguments" || text == "parameters";
    if (!wanted) return Header::kOther;
    if (step == 2) *name = text;
  }
  return Header::kMatch;
}

}  // namespace

ToolCallParser::Read ToolCallParser::StreamCall(size_t at, bool final, size_t* end) {
  if (!streaming_ || streaming_->at != at) {
    std::string name;
    size_t args_at = 0;
    switch (ReadCallHeader(buffer_, at, &name, &args_at)) {
      case Header::kPrefix:
        if (!final) return Read::kWait;
        [[fallthrough]];
      case Header::kOther:
        return Read::kNotStreamed;
      case Header::kMatch:
        break;
    }
    EmitCall(std::move(name), "");
    streaming_.emplace(
        Streaming{.at = at, .next = args_at, .whole_object = true, .in_rest = false});
  }
  return ContinueStream(final, end);
}

ToolCallParser::Read ToolCallParser::StreamArguments(std::string name, size_t at, bool final,
                                                     size_t* end) {
  if (!streaming_ || streaming_->at != at) {
    EmitCall(std::move(name), "");
    streaming_.emplace(Streaming{.at = at, .next = at, .whole_object = false, .in_rest = false});
  }
  return ContinueStream(final, end);
}

ToolCallParser::Read ToolCallParser::ContinueStream(bool final, size_t* end) {
  Streaming& s = *streaming_;
  auto finish = [&](Read read, size_t at) {
    if (read == Read::kBroke) calls_.back().complete = false;
    *end = at;
    streaming_.reset();
    return read;
  };
  if (!s.in_rest) {
    std::string out;
    while (s.next < buffer_.size() && !s.arguments.done()) {
      const JsonStreamChecker::Byte b = s.arguments.Push(buffer_[s.next]);
      if (b == JsonStreamChecker::Byte::kBad) break;
      if (b == JsonStreamChecker::Byte::kSignificant) out += buffer_[s.next];
      ++s.next;
    }
    EmitArguments(out);
    if (s.arguments.broken()) return finish(Read::kBroke, s.next);
    if (!s.arguments.done()) return final ? finish(Read::kBroke, s.next) : Read::kWait;
    if (!s.whole_object) return finish(Read::kDone, s.next);
    s.in_rest = true;
  }
  // The call object's '}'. Anything else there (more members) is not read: the call
  // ends before it, and the format's parser takes it as what follows a call.
  const size_t p = SkipBlanks(buffer_, s.next);
  if (p == buffer_.size()) return final ? finish(Read::kDone, p) : Read::kWait;
  return finish(Read::kDone, buffer_[p] == '}' ? p + 1 : p);
}

std::unique_ptr<ToolCallParser> MakeToolCallParser(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return std::make_unique<HermesParser>();
    case ToolCallFormat::kLlama3Json:
      return std::make_unique<Llama3JsonParser>();
    case ToolCallFormat::kMistral: {
      auto p = std::make_unique<MistralParser>();
      p->UseShortIds();
      return p;
    }
    case ToolCallFormat::kNone:
      break;
  }
  return nullptr;
}

std::unique_ptr<ToolCallParser> MakeForcedNamedParser(std::string name) {
  return std::make_unique<ForcedNamedParser>(std::move(name));
}

std::unique_ptr<ToolCallParser> MakeForcedListParser() {
  return std::make_unique<ForcedListParser>();
}

namespace {

// Points a tool's `$ref`s at where ToolListSchema moves what they name: "#" (the
// parameters themselves) to "#/$defs/<prefix>", "#/$defs/x" and "#/definitions/x" to
// "#/$defs/<prefix>-x".
void MoveRefs(ojson& s, const std::string& prefix) {
  if (s.is_array()) {
    for (ojson& v : s) MoveRefs(v, prefix);
    return;
  }
  if (!s.is_object()) return;
  for (auto& [k, v] : s.items()) {
    if (k == "$ref" && v.is_string()) {
      const std::string ref = v.get<std::string>();
      if (ref == "#") {
        v = "#/$defs/" + prefix;
      } else {
        for (const char* section : {"#/$defs/", "#/definitions/"}) {
          if (ref.starts_with(section)) {
            v = "#/$defs/" + prefix + "-" + ref.substr(std::string_view(section).size());
          }
        }
      }
    } else {
      MoveRefs(v, prefix);
    }
  }
}

}  // namespace

ojson ToolListSchema(const ojson& tools, bool parallel) {
  ojson any = ojson::array();
  ojson defs = ojson::object();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& fn = tools[i]["function"];
    ojson params = fn.contains("parameters")
                       ? fn["parameters"]
                       : ojson{{"type", "object"}, {"properties", ojson::object()}};
    // Each tool's parameters and definitions move to the list's $defs, their $refs
    // following them, so that "#" still means the parameters.
    const std::string prefix = "tool" + std::to_string(i);
    MoveRefs(params, prefix);
    if (params.is_object()) {
      for (const char* section : {"$defs", "definitions"}) {
        if (!params.contains(section)) continue;
        if (params[section].is_object()) {
          for (auto& [name, def] : params[section].items()) defs[prefix + "-" + name] = def;
        }
        params.erase(section);
      }
    }
    defs[prefix] = std::move(params);
    any.push_back(
        ojson{{"type", "object"},
              {"properties",
               {{"name", {{"const", fn["name"]}}}, {"arguments", {{"$ref", "#/$defs/" + prefix}}}}},
              {"required", {"name", "arguments"}},
              {"additionalProperties", false}});
  }
  ojson schema{{"type", "array"}, {"items", {{"anyOf", std::move(any)}}}, {"minItems", 1}};
  schema["$defs"] = std::move(defs);
  if (!parallel) schema["maxItems"] = 1;
  return schema;
}

}  // namespace orca
