#include "engine/chat/internal/py_string.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace orca::chat_internal {
namespace {

// Length of the UTF-8 sequence at s[i], or 0 when it is not valid.
size_t SequenceLength(std::string_view s, size_t i, char32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len = 0;
  char32_t value = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    value = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    value = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    value = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMin[len] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
  *cp = value;
  return len;
}

bool IsCased(char32_t cp) {
  return IsUpperCp(cp) || IsLowerCp(cp) || cp == 0x1C5 || cp == 0x1C8 || cp == 0x1CB || cp == 0x1F2;
}

bool InStripSet(char32_t cp, const std::optional<std::vector<char32_t>>& set) {
  if (!set) return IsPySpace(cp);
  for (char32_t c : *set) {
    if (c == cp) return true;
  }
  return false;
}

// Python's str.isprintable() for code points outside ASCII, approximately.
bool IsPrintableNonAscii(char32_t cp) {
  if (cp <= 0xA0 || cp == 0xAD) return false;
  if ((cp >= 0x600 && cp <= 0x605) || cp == 0x61C || cp == 0x6DD || cp == 0x70F) return false;
  if (cp == 0x1680 || cp == 0x180E) return false;
  if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F)) return false;
  if ((cp >= 0x205F && cp <= 0x206F) || cp == 0x3000) return false;
  if ((cp >= 0xD800 && cp <= 0xF8FF) || cp == 0xFEFF) return false;
  if ((cp >= 0xFFF9 && cp <= 0xFFFB) || cp == 0xFFFE || cp == 0xFFFF) return false;
  if (cp == 0xE0001 || (cp >= 0xE0020 && cp <= 0xE007F) || cp >= 0xF0000) return false;
  return true;
}

std::string Hex(char32_t cp, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%0*x", digits, static_cast<unsigned>(cp));
  return buf;
}

template <typename F>
std::string MapCodePoints(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : DecodeUtf8(s)) f(cp, &out);
  return out;
}

void AppendUpper(char32_t cp, std::string* out) {
  if (cp == 0xDF) {
    out->append("SS");
  } else {
    AppendUtf8(ToUpperCp(cp), out);
  }
}

// Titlecase: like upper case except for the ligatures and digraphs that have a distinct
// title form.
void AppendTitle(char32_t cp, std::string* out) {
  if (cp == 0xDF) {
    out->append("Ss");
  } else if (cp >= 0x1C4 && cp <= 0x1CC) {
    AppendUtf8(0x1C5 + 3 * ((cp - 0x1C4) / 3), out);
  } else if (cp >= 0x1F1 && cp <= 0x1F3) {
    AppendUtf8(0x1F2, out);
  } else {
    AppendUtf8(ToUpperCp(cp), out);
  }
}

void AppendLower(char32_t cp, std::string* out) {
  if (cp == 0x130) {
    out->append("i\xCC\x87");
  } else {
    AppendUtf8(ToLowerCp(cp), out);
  }
}

}  // namespace

std::vector<char32_t> DecodeUtf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t len = SequenceLength(s, i, &cp);
    if (len == 0) {
      out.push_back(static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

std::string EncodeUtf8(const std::vector<char32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < cps.size(); ++i) AppendUtf8(cps[i], &out);
  return out;
}

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    char32_t cp = 0;
    const size_t len = SequenceLength(s, i, &cp);
    i += len == 0 ? 1 : len;
  }
  return n;
}

bool IsPySpace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool IsPyDigit(char32_t cp) {
  return (cp >= '0' && cp <= '9') || (cp >= 0x660 && cp <= 0x669) || (cp >= 0xFF10 && cp <= 0xFF19);
}

bool IsPyAlpha(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if (cp == 0xAA || cp == 0xB5 || cp == 0xBA) return true;
  if (cp >= 0xC0 && cp <= 0x24F) return cp != 0xD7 && cp != 0xF7;
  if (cp >= 0x370 && cp <= 0x3FF)
    return cp != 0x375 && cp != 0x37E && cp != 0x384 && cp != 0x385 && cp != 0x387;
  if (cp >= 0x400 && cp <= 0x52F) return !(cp >= 0x482 && cp <= 0x489);
  if (cp >= 0x5D0 && cp <= 0x5EA) return true;
  if (cp >= 0x620 && cp <= 0x64A) return true;
  if (cp >= 0x3041 && cp <= 0x30FF) return cp != 0x30A0 && cp != 0x30FB;
  if (cp >= 0x3400 && cp <= 0x9FFF) return true;
  if (cp >= 0xAC00 && cp <= 0xD7A3) return true;
  if ((cp >= 0xFF21 && cp <= 0xFF3A) || (cp >= 0xFF41 && cp <= 0xFF5A)) return true;
  return false;
}

char32_t ToLowerCp(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp >= 0x1C4 && cp <= 0x1CC) return 0x1C6 + 3 * ((cp - 0x1C4) / 3);
  if (cp == 0x1F1 || cp == 0x1F2) return 0x1F3;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x130) return 'i';
  if (cp >= 0x100 && cp <= 0x137) return (cp % 2 == 0) ? cp + 1 : cp;
  if (cp >= 0x139 && cp <= 0x148) return (cp % 2 == 1) ? cp + 1 : cp;
  if (cp >= 0x14A && cp <= 0x177) return (cp % 2 == 0) ? cp + 1 : cp;
  if (cp == 0x178) return 0xFF;
  if (cp >= 0x179 && cp <= 0x17E) return (cp % 2 == 1) ? cp + 1 : cp;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0xFF21 && cp <= 0xFF3A) return cp + 32;
  return cp;
}

char32_t ToUpperCp(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  if (cp >= 0x1C4 && cp <= 0x1CC) return 0x1C4 + 3 * ((cp - 0x1C4) / 3);
  if (cp == 0x1F2 || cp == 0x1F3) return 0x1F1;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (cp == 0xB5) return 0x39C;
  if (cp == 0x131) return 'I';
  if (cp >= 0x100 && cp <= 0x137) return (cp % 2 == 1) ? cp - 1 : cp;
  if (cp >= 0x13A && cp <= 0x148) return (cp % 2 == 0) ? cp - 1 : cp;
  if (cp >= 0x14B && cp <= 0x177) return (cp % 2 == 1) ? cp - 1 : cp;
  if (cp >= 0x17A && cp <= 0x17E) return (cp % 2 == 0) ? cp - 1 : cp;
  if (cp == 0x17F) return 'S';
  if (cp == 0x3C2) return 0x3A3;
  if (cp >= 0x3B1 && cp <= 0x3C9) return cp - 32;
  if (cp == 0x3AC) return 0x386;
  if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
  if (cp == 0x3CC) return 0x38C;
  if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  if (cp >= 0xFF41 && cp <= 0xFF5A) return cp - 32;
  return cp;
}

namespace {
bool IsTitlecaseDigraph(char32_t cp) {
  return cp == 0x1C5 || cp == 0x1C8 || cp == 0x1CB || cp == 0x1F2;
}
}  // namespace

bool IsUpperCp(char32_t cp) { return ToLowerCp(cp) != cp && !IsTitlecaseDigraph(cp); }
bool IsLowerCp(char32_t cp) {
  if (IsTitlecaseDigraph(cp)) return false;
  return ToUpperCp(cp) != cp || cp == 0xDF || cp == 0x138 || cp == 0x149;
}

std::string PyUpper(std::string_view s) { return MapCodePoints(s, AppendUpper); }
std::string PyLower(std::string_view s) { return MapCodePoints(s, AppendLower); }

std::string PySwapcase(std::string_view s) {
  return MapCodePoints(s, [](char32_t cp, std::string* out) {
    if (IsUpperCp(cp)) {
      AppendLower(cp, out);
    } else if (IsLowerCp(cp)) {
      AppendUpper(cp, out);
    } else {
      AppendUtf8(cp, out);
    }
  });
}

std::string PyCapitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (char32_t cp : DecodeUtf8(s)) {
    if (first) {
      AppendTitle(cp, &out);
    } else {
      AppendLower(cp, &out);
    }
    first = false;
  }
  return out;
}

std::string PyTitle(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t cp : DecodeUtf8(s)) {
    if (previous_cased) {
      AppendLower(cp, &out);
    } else {
      AppendTitle(cp, &out);
    }
    previous_cased = IsCased(cp);
  }
  return out;
}

std::string JinjaTitle(std::string_view s) {
  // "".join(item[0].upper() + item[1:].lower() for item in re.split(r"([-\s({\[<]+)", s))
  auto is_separator = [](char32_t cp) {
    return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || IsPySpace(cp);
  };
  std::string out;
  bool at_item_start = true;
  bool in_separator = false;
  for (char32_t cp : DecodeUtf8(s)) {
    const bool sep = is_separator(cp);
    if (sep != in_separator) at_item_start = true;
    in_separator = sep;
    if (at_item_start) {
      AppendUpper(cp, &out);
    } else {
      AppendLower(cp, &out);
    }
    at_item_start = false;
  }
  return out;
}

std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  const std::vector<char32_t> cps = DecodeUtf8(s);
  std::optional<std::vector<char32_t>> set;
  if (chars) set = DecodeUtf8(*chars);
  size_t begin = 0;
  size_t end = cps.size();
  if (side != StripSide::kRight) {
    while (begin < end && InStripSet(cps[begin], set)) ++begin;
  }
  if (side != StripSide::kLeft) {
    while (end > begin && InStripSet(cps[end - 1], set)) --end;
  }
  return EncodeUtf8(cps, begin, end);
}

std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep,
                                 int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (!from_right) {
      size_t start = 0;
      while (maxsplit-- > 0) {
        const size_t pos = s.find(*sep, start);
        if (pos == std::string_view::npos) break;
        parts.emplace_back(s.substr(start, pos - start));
        start = pos + sep->size();
      }
      parts.emplace_back(s.substr(start));
      return parts;
    }
    size_t end = s.size();
    while (maxsplit-- > 0 && end >= sep->size()) {
      const size_t pos = s.rfind(*sep, end - sep->size());
      if (pos == std::string_view::npos) break;
      parts.emplace_back(s.substr(pos + sep->size(), end - pos - sep->size()));
      end = pos;
    }
    parts.emplace_back(s.substr(0, end));
    return {parts.rbegin(), parts.rend()};
  }
  const std::vector<char32_t> cps = DecodeUtf8(s);
  const size_t n = cps.size();
  if (!from_right) {
    size_t i = 0;
    while (maxsplit-- > 0) {
      while (i < n && IsPySpace(cps[i])) ++i;
      if (i == n) break;
      const size_t j = i;
      while (i < n && !IsPySpace(cps[i])) ++i;
      parts.push_back(EncodeUtf8(cps, j, i));
    }
    while (i < n && IsPySpace(cps[i])) ++i;
    if (i < n) parts.push_back(EncodeUtf8(cps, i, n));
    return parts;
  }
  size_t i = n;
  while (maxsplit-- > 0) {
    while (i > 0 && IsPySpace(cps[i - 1])) --i;
    if (i == 0) break;
    const size_t j = i;
    while (i > 0 && !IsPySpace(cps[i - 1])) --i;
    parts.push_back(EncodeUtf8(cps, i, j));
  }
  while (i > 0 && IsPySpace(cps[i - 1])) --i;
  if (i > 0) parts.push_back(EncodeUtf8(cps, 0, i));
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> PySplitLines(std::string_view s, bool keepends) {
  const std::vector<char32_t> cps = DecodeUtf8(s);
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
           c == 0x85 || c == 0x2028 || c == 0x2029;
  };
  std::vector<std::string> lines;
  size_t i = 0;
  const size_t n = cps.size();
  while (i < n) {
    const size_t start = i;
    while (i < n && !is_break(cps[i])) ++i;
    size_t eol = i;
    if (i < n) {
      if (cps[i] == '\r' && i + 1 < n && cps[i + 1] == '\n') {
        i += 2;
      } else {
        ++i;
      }
      if (keepends) eol = i;
    }
    lines.push_back(EncodeUtf8(cps, start, eol));
  }
  return lines;
}

std::string PyReplace(std::string_view s, std::string_view old_sub, std::string_view new_sub,
                      int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  if (old_sub.empty()) {
    const std::vector<char32_t> cps = DecodeUtf8(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count > 0) {
        out.append(new_sub);
        --count;
      }
      if (i < cps.size()) AppendUtf8(cps[i], &out);
    }
    return out;
  }
  size_t start = 0;
  while (count-- > 0) {
    const size_t pos = s.find(old_sub, start);
    if (pos == std::string_view::npos) break;
    out.append(s.substr(start, pos - start));
    out.append(new_sub);
    start = pos + old_sub.size();
  }
  out.append(s.substr(start));
  return out;
}

int64_t PyFind(std::string_view s, std::string_view sub, bool from_right) {
  const size_t pos = from_right ? s.rfind(sub) : s.find(sub);
  if (pos == std::string_view::npos) return -1;
  return static_cast<int64_t>(CodePointCount(s.substr(0, pos)));
}

int64_t PyCount(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(CodePointCount(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos;
       pos = s.find(sub, pos + sub.size())) {
    ++n;
  }
  return n;
}

std::string PyReprString(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : DecodeUtf8(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out.append("\\t");
    } else if (cp == '\n') {
      out.append("\\n");
    } else if (cp == '\r') {
      out.append("\\r");
    } else if (cp < 0x20 || cp == 0x7F) {
      out.append("\\x" + Hex(cp, 2));
    } else if (cp < 0x80 || IsPrintableNonAscii(cp)) {
      AppendUtf8(cp, &out);
    } else if (cp <= 0xFF) {
      out.append("\\x" + Hex(cp, 2));
    } else if (cp <= 0xFFFF) {
      out.append("\\u" + Hex(cp, 4));
    } else {
      out.append("\\U" + Hex(cp, 8));
    }
  }
  out.push_back(quote);
  return out;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '\'':
        out.append("&#39;");
        break;
      case '"':
        out.append("&#34;");
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace orca::chat_internal
