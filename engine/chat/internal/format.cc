#include "engine/chat/internal/format.h"

#include <cctype>
#include <cstdio>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/py_string.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

absl::Status FormatError(const std::string& message) { return absl::InvalidArgumentError(message); }

// snprintf into a std::string.
template <typename T>
std::string CFormat(const std::string& spec, T value) {
  const int n = std::snprintf(nullptr, 0, spec.c_str(), value);
  if (n <= 0) return "";
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), value);
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string PadTo(const std::string& body, size_t width, char align, const std::string& fill) {
  const size_t len = CodePointCount(body);
  if (width <= len) return body;
  const size_t total = width - len;
  size_t left = 0;
  if (align == '>') left = total;
  if (align == '^') left = total / 2;
  std::string out;
  for (size_t i = 0; i < left; ++i) out += fill;
  out += body;
  for (size_t i = 0; i < total - left; ++i) out += fill;
  return out;
}

struct Spec {
  std::string fill = " ";
  char align = 0;
  char sign = '-';
  bool zero = false;
  size_t width = 0;
  std::optional<int> precision;
  char type = 0;
};

absl::StatusOr<Spec> ParseSpec(const std::string& text) {
  Spec spec;
  const std::vector<char32_t> cps = DecodeUtf8(text);
  size_t i = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    spec.fill = EncodeUtf8(cps, 0, 1);
    spec.align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    spec.align = static_cast<char>(cps[0]);
    i = 1;
  }
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) {
    spec.sign = static_cast<char>(cps[i++]);
  }
  if (i < cps.size() && cps[i] == '0') {
    spec.zero = true;
    ++i;
  }
  while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
    spec.width = spec.width * 10 + (cps[i++] - '0');
    if (spec.width > 100000) return FormatError("format width too large");
  }
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    int p = 0;
    const size_t start = i;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
      p = p * 10 + static_cast<int>(cps[i++] - '0');
      if (p > 1000) return FormatError("format precision too large");
    }
    if (i == start) return FormatError("Format specifier missing precision");
    spec.precision = p;
  }
  if (i < cps.size()) spec.type = static_cast<char>(cps[i++]);
  if (i != cps.size()) return FormatError("Invalid format specifier");
  return spec;
}

std::string SignPrefix(bool negative, char sign) {
  if (negative) return "-";
  if (sign == '+') return "+";
  if (sign == ' ') return " ";
  return "";
}

// format(value, spec) for str, int and float.
absl::StatusOr<std::string> FormatValue(const Value& v, const std::string& spec_text) {
  if (spec_text.empty()) return ToStr(v);
  ORCA_ASSIGN_OR_RETURN(Spec spec, ParseSpec(spec_text));
  std::string body;
  std::string prefix;
  char default_align = '>';
  if (v.is_string()) {
    if (spec.type != 0 && spec.type != 's') return FormatError("Unknown format code for str");
    body = v.str();
    if (spec.precision) {
      const std::vector<char32_t> cps = DecodeUtf8(body);
      body = EncodeUtf8(cps, 0, static_cast<size_t>(*spec.precision));
    }
    default_align = '<';
  } else if (v.is_number() && (spec.type == 0 || spec.type == 'd') && !v.is_float() &&
             !spec.precision) {
    const int64_t i = v.as_int();
    prefix = SignPrefix(i < 0, spec.sign);
    body = std::to_string(i < 0 ? -static_cast<uint64_t>(i) : static_cast<uint64_t>(i));
  } else if (v.is_number() && (spec.type == 0 || std::strchr("eEfFgG%", spec.type) != nullptr)) {
    double d = v.as_float();
    prefix = SignPrefix(std::signbit(d) && !std::isnan(d), spec.sign);
    d = std::fabs(d);
    const int precision = spec.precision.value_or(6);
    if (spec.type == 0 && !spec.precision) {
      body = PyFloatRepr(d);
    } else if (spec.type == '%') {
      body = CFormat("%." + std::to_string(precision) + "f", d * 100) + "%";
    } else {
      const char type = spec.type == 0 ? 'g' : spec.type;
      body = CFormat("%." + std::to_string(precision) + std::string(1, type), d);
    }
  } else {
    return FormatError(
        absl::StrCat("unsupported format string passed to ", TypeName(v), ".__format__"));
  }
  const char align = spec.align != 0 ? spec.align : (spec.zero ? '=' : default_align);
  const std::string fill = spec.align == 0 && spec.zero ? "0" : spec.fill;
  if (align == '=') {
    const size_t len = CodePointCount(prefix + body);
    std::string pad;
    for (size_t i = len; i < spec.width; ++i) pad += fill;
    return prefix + pad + body;
  }
  return PadTo(prefix + body, spec.width, align, fill);
}

}  // namespace

absl::StatusOr<std::string> PercentFormat(Interpreter& interp, const std::string& format,
                                          const Value& args) {
  std::vector<Value> positional;
  const Value* mapping = nullptr;
  // Python's PyUnicode_Format: anything with __getitem__ but a tuple or a str counts as
  // a mapping, and with a mapping, unused arguments are not an error.
  bool mapping_like = false;
  if (args.is_seq() && args.seq().kind == SeqKind::kTuple) {
    positional = args.seq().items;
  } else {
    if (args.is_dict()) mapping = &args;
    mapping_like = args.is_dict() || args.is_undefined() ||
                   (args.is_seq() && args.seq().kind == SeqKind::kList);
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out.push_back(format[i]);
      continue;
    }
    if (++i >= format.size()) return FormatError("incomplete format");
    const Value* arg = nullptr;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string::npos) return FormatError("incomplete format key");
      if (mapping == nullptr) return FormatError("format requires a mapping");
      const Value* v = mapping->dict().FindString(format.substr(i + 1, close - i - 1));
      if (v == nullptr) return FormatError("key not found in format mapping");
      arg = v;
      i = close + 1;
    }
    std::string flags;
    while (i < format.size() && std::strchr("-+ #0", format[i]) != nullptr) flags += format[i++];
    std::string width;
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])))
      width += format[i++];
    std::string precision;
    if (i < format.size() && format[i] == '.') {
      precision = ".";
      ++i;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
        precision += format[i++];
      }
    }
    while (i < format.size() && std::strchr("hlL", format[i]) != nullptr) ++i;
    if (i >= format.size()) return FormatError("incomplete format");
    const char type = format[i];
    if (type == '%') {
      out.push_back('%');
      continue;
    }
    if (arg == nullptr) {
      if (next >= positional.size()) return FormatError("not enough arguments for format string");
      arg = &positional[next++];
    }
    if (width.size() > 6 || precision.size() > 5) return FormatError("format width too large");
    const std::string spec = "%" + flags + width + precision;
    if (type == 's' || type == 'r' || type == 'a') {
      const std::string text = type == 's' ? ToStr(*arg) : Repr(*arg);
      out += CFormat(spec + "s", text.c_str());
    } else if (std::strchr("diuxXoc", type) != nullptr) {
      if (!arg->is_number() || (arg->is_float() && std::strchr("xXoc", type) != nullptr)) {
        return FormatError(absl::StrCat(
            "%", std::string(1, type), " format: a real number is required, not ", TypeName(*arg)));
      }
      const auto value = arg->is_float() ? static_cast<long long>(arg->as_float())
                                         : static_cast<long long>(arg->as_int());
      if (type == 'c') {
        std::string ch;
        AppendUtf8(static_cast<char32_t>(value), &ch);
        out += CFormat(spec + "s", ch.c_str());
      } else {
        out +=
            CFormat(spec + "ll" + std::string(1, type == 'u' || type == 'i' ? 'd' : type), value);
      }
    } else if (std::strchr("eEfFgG", type) != nullptr) {
      if (!arg->is_number()) {
        return FormatError(absl::StrCat("must be real number, not ", TypeName(*arg)));
      }
      out += CFormat(spec + std::string(1, type), arg->as_float());
    } else {
      return FormatError(absl::StrCat("unsupported format character '", std::string(1, type), "'"));
    }
    ORCA_RETURN_IF_ERROR(interp.CheckSize(out.size()));
  }
  ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
  if (!mapping_like && next < positional.size()) {
    return FormatError("not all arguments converted during string formatting");
  }
  return out;
}

absl::StatusOr<std::string> BraceFormat(Interpreter& interp, const std::string& format,
                                        const CallArgs& args) {
  std::string out;
  int auto_index = 0;
  bool manual = false;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      return FormatError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string::npos) return FormatError("Single '{' encountered in format string");
    const std::string field = format.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string::npos)
      return FormatError("nested format fields are not supported");
    i = close;
    std::string name = field;
    std::string spec;
    char conversion = 0;
    const size_t colon = name.find(':');
    if (colon != std::string::npos) {
      spec = name.substr(colon + 1);
      name = name.substr(0, colon);
    }
    const size_t bang = name.find('!');
    if (bang != std::string::npos) {
      if (bang + 2 != name.size()) return FormatError("expected ':' after conversion specifier");
      conversion = name[bang + 1];
      name = name.substr(0, bang);
    }
    size_t end = 0;
    while (end < name.size() && name[end] != '.' && name[end] != '[') ++end;
    const std::string head = name.substr(0, end);
    Value value;
    if (head.empty() || std::isdigit(static_cast<unsigned char>(head[0]))) {
      size_t index = 0;
      if (head.empty()) {
        if (manual)
          return FormatError(
              "cannot switch from manual field specification to automatic field numbering");
        index = static_cast<size_t>(auto_index++);
      } else {
        if (auto_index > 0)
          return FormatError(
              "cannot switch from automatic field numbering to manual field specification");
        manual = true;
        index = static_cast<size_t>(std::stoul(head));
      }
      if (index >= args.positional.size()) {
        return FormatError(absl::StrCat("Replacement index ", index, " out of range"));
      }
      value = args.positional[index];
    } else {
      bool found = false;
      for (const auto& [k, v] : args.keyword) {
        if (k == head) {
          value = v;
          found = true;
        }
      }
      if (!found) return FormatError(absl::StrCat("KeyError: '", head, "'"));
    }
    while (end < name.size()) {
      if (name[end] == '.') {
        size_t next = end + 1;
        while (next < name.size() && name[next] != '.' && name[next] != '[') ++next;
        ORCA_ASSIGN_OR_RETURN(value, interp.GetAttr(value, name.substr(end + 1, next - end - 1)));
        end = next;
      } else {
        const size_t rb = name.find(']', end);
        if (rb == std::string::npos) return FormatError("Missing ']' in format string");
        const std::string key = name.substr(end + 1, rb - end - 1);
        const bool numeric =
            !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        const Value k = numeric ? Value::Int(std::stoll(key)) : Value::String(key);
        ORCA_ASSIGN_OR_RETURN(value, interp.GetItem(value, k));
        end = rb + 1;
      }
    }
    if (value.is_undefined()) return UndefinedError(value);
    if (conversion == 'r' || conversion == 'a') {
      value = Value::String(Repr(value));
    } else if (conversion == 's') {
      value = Value::String(ToStr(value));
    } else if (conversion != 0) {
      return FormatError("Unknown conversion specifier");
    }
    ORCA_ASSIGN_OR_RETURN(std::string piece, FormatValue(value, spec));
    out += piece;
    ORCA_RETURN_IF_ERROR(interp.CheckSize(out.size()));
  }
  ORCA_RETURN_IF_ERROR(interp.Allocate(out.size()));
  return out;
}

}  // namespace orca::chat_internal
