#include "engine/guided/utf8_ranges.h"

#include <algorithm>

namespace orca {

CodeRanges Normalize(CodeRanges r) {
  std::sort(r.begin(), r.end());
  CodeRanges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

CodeRanges Complement(const CodeRanges& r) {
  CodeRanges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : r) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

CodeRanges WithoutSurrogates(const CodeRanges& r) {
  CodeRanges out;
  for (const auto& [lo, hi] : r) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.emplace_back(lo, hi);
      continue;
    }
    if (lo < 0xD800) out.emplace_back(lo, 0xD7FF);
    if (hi > 0xDFFF) out.emplace_back(0xE000, hi);
  }
  return out;
}

std::string Utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteRanges>& out) {
  for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= max && hi > max) {
      Utf8Sequences(lo, max, out);
      Utf8Sequences(max + 1, hi, out);
      return;
    }
  }
  const size_t n = Utf8(lo).size();
  for (size_t i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8Sequences(lo, lo | m, out);
        Utf8Sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8Sequences(lo, (hi & ~m) - 1, out);
        Utf8Sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = Utf8(lo), b = Utf8(hi);
  ByteRanges seq;
  for (size_t i = 0; i < a.size(); ++i) {
    seq.emplace_back(static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
  }
  out.push_back(std::move(seq));
}

}  // namespace orca
