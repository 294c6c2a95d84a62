#include "controller/api/yaml.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/utf8.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace orca::controller {
namespace {

using nlohmann::json;

// The scalar forms this reader types and its writer leaves plain, matched by hand:
// libstdc++'s std::regex matches recursively, a stack frame per character, and a long
// scalar (a 100 kB value) overflowed the stack (tests/controller/yaml_test.cc).
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsDigit);
}
std::string_view WithoutSign(std::string_view s) {
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return s;
}

// [-+]?[0-9]+
bool IsIntLiteral(std::string_view s) { return AllDigits(WithoutSign(s)); }

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsFloatLiteral(std::string_view s) {
  s = WithoutSign(s);
  const size_t e = s.find_first_of("eE");
  if (e != std::string_view::npos && !AllDigits(WithoutSign(s.substr(e + 1)))) return false;
  const std::string_view mantissa = s.substr(0, e);
  const size_t dot = mantissa.find('.');
  if (dot == std::string_view::npos) return AllDigits(mantissa);
  const std::string_view whole = mantissa.substr(0, dot), fraction = mantissa.substr(dot + 1);
  if (whole.empty()) return AllDigits(fraction);
  return AllDigits(whole) && (fraction.empty() || AllDigits(fraction));
}

// [A-Za-z0-9_./][A-Za-z0-9_./:@=+ -]*
bool IsPlainSafe(std::string_view s) {
  auto first = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || IsDigit(c) || c == '_' || c == '.' ||
           c == '/';
  };
  auto rest = [&](char c) {
    return first(c) || c == ':' || c == '@' || c == '=' || c == '+' || c == ' ' || c == '-';
  };
  return !s.empty() && first(s[0]) && std::all_of(s.begin() + 1, s.end(), rest);
}

// Returns `s`, a string yaml-cpp decoded; throws when it is not UTF-8, which no JSON
// writer takes (an escape yaml-cpp decodes wrongly).
const std::string& CheckedUtf8(const std::string& s, const YAML::Mark& mark) {
  if (FindInvalidUtf8(s) != std::string_view::npos) {
    throw YAML::ParserException(mark, "a string decodes to bytes that are not UTF-8");
  }
  return s;
}

json ScalarToJson(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return s;  // quoted
  if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (IsIntLiteral(s)) {
    try {
      return std::stoll(s);
    } catch (const std::out_of_range&) {
      return s;
    }
  }
  if (IsFloatLiteral(s)) {
    try {
      return std::stod(s);
    } catch (const std::exception&) {
      return s;
    }
  }
  return s;
}

json NodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      CheckedUtf8(node.Scalar(), node.Mark());
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& item : node) arr.push_back(NodeToJson(item));
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : node) {
        obj[CheckedUtf8(kv.first.as<std::string>(), kv.first.Mark())] = NodeToJson(kv.second);
      }
      return obj;
    }
  }
  return nullptr;
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  if (!IsPlainSafe(s)) return true;
  // "..." at the start of a line ends a document (a top-level key or scalar starts one).
  if (s.back() == ' ' || s.back() == ':' || s.find(": ") != std::string::npos ||
      s.find(" #") != std::string::npos || s.rfind("...", 0) == 0) {
    return true;
  }
  json typed = ScalarToJson(YAML::Node(s));
  if (!typed.is_string()) return true;
  // YAML 1.1 readers (and Go's yaml) treat these as booleans.
  for (const char* boolean : {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On",
                              "ON", "off", "Off", "OFF"}) {
    if (s == boolean) return true;
  }
  return false;
}

void Indent(std::ostringstream& out, int n) {
  for (int i = 0; i < n; ++i) out << ' ';
}

// Returns `s` as a YAML double-quoted scalar. Unlike a JSON string it escapes every
// character YAML text may not hold raw (DEL, C1 controls, U+FFFE/FFFF: what
// ParseYamlDocuments refuses) as well as the C0 controls; bytes that are not UTF-8 become
// U+FFFD.
std::string DoubleQuoted(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0xFFFD;
    const size_t length = DecodeUtf8At(s, i, &cp);
    const std::string_view raw =
        length == 0 ? "\xEF\xBF\xBD" : std::string_view(s).substr(i, length);
    i += length == 0 ? 1 : length;
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (FindNonPrintableYaml(raw) != std::string_view::npos || cp == '\r' || cp == 0x85) {
      const auto code = static_cast<uint32_t>(cp);
      out += cp <= 0xFF ? absl::StrCat("\\x", absl::Hex(code, absl::kZeroPad2))
                        : absl::StrCat("\\u", absl::Hex(code, absl::kZeroPad4));
    } else {
      out += raw;
    }
  }
  return out + "\"";
}

void EmitScalar(std::ostringstream& out, const json& v, int indent) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    // A literal block holds its lines raw: only printable text without a carriage return
    // (a line break to a YAML reader) can go there.
    if (s.find('\n') != std::string::npos && s.back() == '\n' &&
        (s.size() < 2 || s[s.size() - 2] != '\n') && s.find("\n\n\n") == std::string::npos &&
        s.find('\t') == std::string::npos && s.front() != ' ' &&
        s.find('\r') == std::string::npos && FindNonPrintableYaml(s) == std::string_view::npos &&
        s.find("\xC2\x85") == std::string::npos) {
      out << "|\n";
      std::istringstream lines(s);
      std::string line;
      while (std::getline(lines, line)) {
        if (!line.empty()) Indent(out, indent);
        out << line << "\n";
      }
      return;
    }
    out << (NeedsQuotes(s) ? DoubleQuoted(s) : s) << "\n";
    return;
  }
  out << v.dump() << "\n";
}

void Emit(std::ostringstream& out, const json& v, int indent);

// Writes `key` and its ':'. YAML limits an implicit key to 1024 characters (7.4.2); a
// longer one is written as an explicit "? " key (tests/fuzz/manifest_yaml_fuzzer).
void EmitKey(std::ostringstream& out, const std::string& key, int indent) {
  const std::string text = NeedsQuotes(key) ? DoubleQuoted(key) : key;
  if (text.size() <= 1024) {
    out << text << ":";
    return;
  }
  out << "? " << text << "\n";
  Indent(out, indent);
  out << ":";
}

// Emits the value of a key or list item whose prefix has been written.
void EmitValue(std::ostringstream& out, const json& v, int indent) {
  if (v.is_object() && !v.empty()) {
    out << "\n";
    Emit(out, v, indent);
  } else if (v.is_array() && !v.empty()) {
    out << "\n";
    Emit(out, v, indent);
  } else if (v.is_object()) {
    out << "{}\n";
  } else if (v.is_array()) {
    out << "[]\n";
  } else {
    EmitScalar(out, v, indent);
  }
}

void Emit(std::ostringstream& out, const json& v, int indent) {
  if (v.is_object()) {
    for (const auto& [k, item] : v.items()) {
      Indent(out, indent);
      EmitKey(out, k, indent);
      if ((!item.is_object() && !item.is_array()) || item.empty()) out << " ";
      if (item.is_array() && !item.empty()) {
        // Sequences under a key are indented by two, as kubectl prints them.
        out << "\n";
        Emit(out, item, indent + 2);
      } else {
        EmitValue(out, item, indent + 2);
      }
    }
  } else if (v.is_array()) {
    for (const auto& item : v) {
      Indent(out, indent);
      out << "- ";
      if (item.is_object() && !item.empty()) {
        // The first key goes on the dash line.
        std::ostringstream inner;
        Emit(inner, item, indent + 2);
        std::string s = inner.str();
        out << s.substr(static_cast<size_t>(indent) + 2);
      } else if (item.is_array() && !item.empty()) {
        out << "\n";
        Emit(out, item, indent + 2);
      } else {
        EmitValue(out, item, indent + 2);
      }
    }
  } else {
    Indent(out, indent);
    EmitScalar(out, v, indent);
  }
}

// Records where each document of a stream starts; ignores everything else.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { start_ = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  const YAML::Mark& start() const { return start_; }

 private:
  YAML::Mark start_;
};

// Throws YAML::ParserException where YAML::LoadAll would never return: yaml-cpp 0.7
// starts a new empty document at a stray token after a document (a ',' after a flow
// node, or alone) without consuming it, and loops allocating until memory runs out
// (jbeder/yaml-cpp#1040, fixed upstream after 0.8; tests/fuzz/inference_deployment_fuzzer).
// A document that starts where the previous one started has consumed nothing.
void CheckDocumentsAdvance(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts events;
  int previous = -1;
  while (parser.HandleNextDocument(events)) {
    if (events.start().pos == previous) {
      throw YAML::ParserException(events.start(), "unexpected token after the document");
    }
    previous = events.start().pos;
  }
}

}  // namespace

absl::StatusOr<std::vector<json>> ParseYamlDocuments(std::string_view text,
                                                     std::string_view source) {
  // YAML text is UTF-8 without control characters; yaml-cpp passes other bytes through
  // (and mangles NUL) into strings that no JSON writer, and no API server, takes
  // (tests/fuzz/manifest_yaml_fuzzer).
  if (size_t bad = FindNonPrintableYaml(text); bad != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(source), ": line ", 1 + std::count(text.begin(), text.begin() + bad, '\n'),
        ": not UTF-8 or a control character (byte ", bad,
        "); YAML text is UTF-8 and spells control characters as escapes"));
  }
  std::vector<json> docs;
  try {
    CheckDocumentsAdvance(std::string(text));
    for (const YAML::Node& node : YAML::LoadAll(std::string(text))) {
      json doc = NodeToJson(node);
      if (!doc.is_null()) docs.push_back(std::move(doc));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ": malformed YAML at line ",
                                                   e.mark.line + 1, ": ", e.msg));
  }
  return docs;
}

absl::StatusOr<std::vector<json>> ReadYamlFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseYamlDocuments(buf.str(), path);
}

std::string ToYaml(const json& value) {
  std::ostringstream out;
  if (value.is_object() || value.is_array()) {
    if (value.empty()) return value.is_object() ? "{}\n" : "[]\n";
    Emit(out, value, 0);
  } else {
    // Indented: a block scalar's lines at column 0 read back as an empty document
    // (found by tests/fuzz/manifest_yaml_fuzzer).
    EmitScalar(out, value, 2);
  }
  return out.str();
}

std::string ToYamlDocuments(const std::vector<json>& docs) {
  std::string out;
  for (const json& d : docs) absl::StrAppend(&out, "---\n", ToYaml(d));
  return out;
}

}  // namespace orca::controller
