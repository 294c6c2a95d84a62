#include "controller/api/yaml.h"

#include <fstream>
#include <regex>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace orca::controller {
namespace {

using nlohmann::json;

const std::regex& IntPattern() {
  static const std::regex re("[-+]?[0-9]+");
  return re;
}
const std::regex& FloatPattern() {
  static const std::regex re("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?");
  return re;
}

json ScalarToJson(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return s;  // quoted
  if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (std::regex_match(s, IntPattern())) {
    try {
      return std::stoll(s);
    } catch (const std::out_of_range&) {
      return s;
    }
  }
  if (std::regex_match(s, FloatPattern())) {
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
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& item : node) arr.push_back(NodeToJson(item));
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : node) obj[kv.first.as<std::string>()] = NodeToJson(kv.second);
      return obj;
    }
  }
  return nullptr;
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const std::regex plain("[A-Za-z0-9_./][A-Za-z0-9_./:@=+ -]*");
  if (!std::regex_match(s, plain)) return true;
  if (s.back() == ' ' || s.back() == ':' || s.find(": ") != std::string::npos ||
      s.find(" #") != std::string::npos) {
    return true;
  }
  json typed = ScalarToJson(YAML::Node(s));
  if (!typed.is_string()) return true;
  // YAML 1.1 readers (and Go's yaml) treat these as booleans.
  static const std::regex yaml11("y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF");
  return std::regex_match(s, yaml11);
}

void Indent(std::ostringstream& out, int n) {
  for (int i = 0; i < n; ++i) out << ' ';
}

void EmitScalar(std::ostringstream& out, const json& v, int indent) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.find('\n') != std::string::npos && s.back() == '\n' &&
        (s.size() < 2 || s[s.size() - 2] != '\n') && s.find("\n\n\n") == std::string::npos &&
        s.find('\t') == std::string::npos && s.front() != ' ') {
      out << "|\n";
      std::istringstream lines(s);
      std::string line;
      while (std::getline(lines, line)) {
        if (!line.empty()) Indent(out, indent);
        out << line << "\n";
      }
      return;
    }
    out << (NeedsQuotes(s) ? v.dump() : s) << "\n";
    return;
  }
  out << v.dump() << "\n";
}

void Emit(std::ostringstream& out, const json& v, int indent);

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
      out << (NeedsQuotes(k) ? json(k).dump() : k) << ":";
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

}  // namespace

absl::StatusOr<std::vector<json>> ParseYamlDocuments(std::string_view text,
                                                     std::string_view source) {
  std::vector<json> docs;
  try {
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
    EmitScalar(out, value, 0);
  }
  return out.str();
}

std::string ToYamlDocuments(const std::vector<json>& docs) {
  std::string out;
  for (const json& d : docs) absl::StrAppend(&out, "---\n", ToYaml(d));
  return out;
}

}  // namespace orca::controller
