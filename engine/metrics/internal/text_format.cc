#include "engine/metrics/internal/text_format.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace orca::metrics::internal {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAsciiLetter(c) || c == '_' || (i > 0 && IsAsciiDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((b0 & 0xE0) == 0xC0) {
      len = 2;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4;
      cp = b0 & 0x07;
    } else {
      return false;  // a continuation byte or 0xF8..0xFF where a sequence must start
    }
    if (i + len > s.size()) return false;
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len]) return false;       // overlong
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;  // UTF-16 surrogate
    if (cp > 0x10FFFF) return false;
    i += len;
  }
  return true;
}

absl::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), v);
  if (result.ec != std::errc()) return "NaN";  // unreachable: 64 bytes always suffice
  return std::string(buf, result.ptr);
}

void AppendEscapedHelp(absl::string_view help, std::string* out) {
  for (char c : help) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

void AppendEscapedLabelValue(absl::string_view value, std::string* out) {
  for (char c : value) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '"') {
      out->append("\\\"");
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

void AppendSample(absl::string_view name, const Labels& labels, const std::string* le,
                  absl::string_view value, std::string* out) {
  out->append(name.data(), name.size());
  if (!labels.empty() || le != nullptr) {
    out->push_back('{');
    bool first = true;
    for (const auto& [label_name, label_value] : labels) {
      if (!first) out->push_back(',');
      first = false;
      out->append(label_name);
      out->append("=\"");
      AppendEscapedLabelValue(label_value, out);
      out->push_back('"');
    }
    if (le != nullptr) {
      if (!first) out->push_back(',');
      out->append("le=\"");
      out->append(*le);
      out->push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(value.data(), value.size());
  out->push_back('\n');
}

}  // namespace orca::metrics::internal
