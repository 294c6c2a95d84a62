// Python's json.dumps, byte for byte, for the values a template can hold.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/py_string.h"
#include "engine/chat/internal/value.h"
#include "engine/common/status_macros.h"

namespace orca::chat_internal {
namespace {

void AppendEscapedCodeUnit(uint32_t unit, std::string* out) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\u%04x", unit & 0xFFFFu);
  out->append(buf);
}

// The two-character escapes of json.dumps, or null.
const char* ShortEscape(char32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    default:
      return nullptr;
  }
}

void AppendJsonString(const std::string& s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (char32_t cp : DecodeUtf8(s)) {
    if (const char* escape = ShortEscape(cp)) {
      out->append(escape);
      continue;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
      if (cp >= 0x10000) {
        const char32_t v = cp - 0x10000;
        AppendEscapedCodeUnit(0xD800 | (v >> 10), out);
        AppendEscapedCodeUnit(0xDC00 | (v & 0x3FF), out);
      } else {
        AppendEscapedCodeUnit(cp, out);
      }
      continue;
    }
    AppendUtf8(cp, out);
  }
  out->push_back('"');
}

std::string JsonFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return PyFloatRepr(d);
}

absl::Status NotSerializable(const Value& v) {
  return absl::InvalidArgumentError(
      absl::StrCat("Object of type ", TypeName(v), " is not JSON serializable"));
}

class Encoder {
 public:
  explicit Encoder(const JsonDumpOptions& options) : options_(options) {}

  absl::Status Encode(const Value& v, int level, std::string* out) {
    switch (v.type()) {
      case Value::Type::kNone:
        out->append("null");
        return absl::OkStatus();
      case Value::Type::kBool:
        out->append(v.as_bool() ? "true" : "false");
        return absl::OkStatus();
      case Value::Type::kInt:
        out->append(std::to_string(v.as_int()));
        return absl::OkStatus();
      case Value::Type::kFloat:
        out->append(JsonFloat(v.as_float()));
        return absl::OkStatus();
      case Value::Type::kString:
        AppendJsonString(v.str(), options_.ensure_ascii, out);
        return absl::OkStatus();
      case Value::Type::kSeq:
        if (!v.is_indexable_seq()) return NotSerializable(v);
        return EncodeList(v.seq().items, level, out);
      case Value::Type::kDict:
        return EncodeDict(v.dict(), level, out);
      default:
        return NotSerializable(v);
    }
  }

 private:
  std::string NewlineIndent(int level) const {
    std::string s = "\n";
    for (int i = 0; i < level; ++i) s += options_.indent;
    return s;
  }

  absl::Status EncodeList(const std::vector<Value>& items, int level, std::string* out) {
    if (items.empty()) {
      out->append("[]");
      return absl::OkStatus();
    }
    out->push_back('[');
    std::string separator = options_.item_separator;
    if (options_.has_indent) {
      separator += NewlineIndent(level + 1);
      out->append(NewlineIndent(level + 1));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out->append(separator);
      ORCA_RETURN_IF_ERROR(Encode(items[i], level + 1, out));
    }
    if (options_.has_indent) out->append(NewlineIndent(level));
    out->push_back(']');
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Key(const Value& key) {
    switch (key.type()) {
      case Value::Type::kString:
        return key.str();
      case Value::Type::kFloat:
        return JsonFloat(key.as_float());
      case Value::Type::kBool:
        return std::string(key.as_bool() ? "true" : "false");
      case Value::Type::kNone:
        return std::string("null");
      case Value::Type::kInt:
        return std::to_string(key.as_int());
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("keys must be str, int, float, bool or None, not ", TypeName(key)));
    }
  }

  absl::Status EncodeDict(const DictData& dict, int level, std::string* out) {
    if (dict.items.empty()) {
      out->append("{}");
      return absl::OkStatus();
    }
    std::vector<const std::pair<Value, Value>*> items;
    for (const auto& item : dict.items) items.push_back(&item);
    if (options_.sort_keys) {
      absl::Status error;
      std::stable_sort(items.begin(), items.end(), [&error](const auto* a, const auto* b) {
        absl::StatusOr<bool> less = Less(a->first, b->first);
        if (!less.ok()) {
          error.Update(less.status());
          return false;
        }
        return *less;
      });
      ORCA_RETURN_IF_ERROR(error);
    }
    out->push_back('{');
    std::string separator = options_.item_separator;
    if (options_.has_indent) {
      separator += NewlineIndent(level + 1);
      out->append(NewlineIndent(level + 1));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out->append(separator);
      ORCA_ASSIGN_OR_RETURN(std::string key, Key(items[i]->first));
      AppendJsonString(key, options_.ensure_ascii, out);
      out->append(options_.key_separator);
      ORCA_RETURN_IF_ERROR(Encode(items[i]->second, level + 1, out));
    }
    if (options_.has_indent) out->append(NewlineIndent(level));
    out->push_back('}');
    return absl::OkStatus();
  }

  const JsonDumpOptions& options_;
};

}  // namespace

absl::StatusOr<std::string> JsonDumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Encoder encoder(options);
  ORCA_RETURN_IF_ERROR(encoder.Encode(v, 0, &out));
  return out;
}

}  // namespace orca::chat_internal
