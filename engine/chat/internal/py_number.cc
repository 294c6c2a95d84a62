// Python's float repr() and int()/float() parsing (the number half of py_string.h).
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/chat/internal/py_string.h"

namespace orca::chat_internal {

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string sci(buf, result.ptr);
  // sci is "[-]d[.ddd]e[+-]xx": gather the digits and the decimal exponent.
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out.push_back('-');
    i = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e_pos; ++k) {
    if (sci[k] != '.') digits.push_back(sci[k]);
  }
  const int exponent = std::atoi(sci.c_str() + e_pos + 1);
  const int decpt = exponent + 1;
  const int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (n > 1) out.append("." + digits.substr(1));
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    out.append(exp_buf);
  } else if (decpt <= 0) {
    out.append("0." + std::string(-decpt, '0') + digits);
  } else if (decpt >= n) {
    out.append(digits + std::string(decpt - n, '0') + ".0");
  } else {
    out.append(digits.substr(0, decpt) + "." + digits.substr(decpt));
  }
  return out;
}

namespace {

// Removes Python's digit-group underscores ("1_000"); nullopt when misplaced.
std::optional<std::string> StripUnderscores(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      const bool ok = i > 0 && i + 1 < s.size() &&
                      std::isalnum(static_cast<unsigned char>(s[i - 1])) &&
                      std::isalnum(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::optional<int64_t> PyParseInt(std::string_view s, int base) {
  const std::string trimmed = PyStrip(s, std::nullopt, StripSide::kBoth);
  std::optional<std::string> text = StripUnderscores(trimmed);
  if (!text || text->empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if ((*text)[0] == '+' || (*text)[0] == '-') {
    negative = (*text)[0] == '-';
    i = 1;
  }
  if (i == text->size()) return std::nullopt;
  int64_t value = 0;
  const auto begin = text->data() + i;
  const auto end = text->data() + text->size();
  const auto result = std::from_chars(begin, end, value, base);
  if (result.ec != std::errc() || result.ptr != end) return std::nullopt;
  return negative ? -value : value;
}

std::optional<double> PyParseFloat(std::string_view s) {
  std::string text = PyStrip(s, std::nullopt, StripSide::kBoth);
  std::string lower = PyLower(text);
  size_t sign_len = (!lower.empty() && (lower[0] == '+' || lower[0] == '-')) ? 1 : 0;
  const std::string body = lower.substr(sign_len);
  const double sign = (sign_len == 1 && lower[0] == '-') ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") return sign * HUGE_VAL;
  if (body == "nan") return std::nan("");
  std::optional<std::string> cleaned = StripUnderscores(text);
  if (!cleaned || cleaned->empty()) return std::nullopt;
  for (char c : *cleaned) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
          c == '+' || c == '-')) {
      return std::nullopt;
    }
  }
  char* end = nullptr;
  const double value = std::strtod(cleaned->c_str(), &end);
  if (end != cleaned->c_str() + cleaned->size()) return std::nullopt;
  return value;
}

}  // namespace orca::chat_internal
