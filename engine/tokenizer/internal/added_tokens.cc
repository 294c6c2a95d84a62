#include "engine/tokenizer/internal/added_tokens.h"

#include <algorithm>

#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_internal {
namespace {

// Returns the character that ends just before `end`, for boundary checks.
Utf8Char CharBefore(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
    --start;
  }
  Utf8Char c = DecodeUtf8(text, start);
  if (start + c.length != end) return {kReplacementChar, 1, false};
  return c;
}

bool IsWordChar(const Utf8Char& c) {
  return c.valid && (IsLetter(c.code_point) || IsNumber(c.code_point) || c.code_point == '_');
}

bool IsSpaceChar(const Utf8Char& c) { return c.valid && IsWhitespace(c.code_point); }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  for (const AddedToken& t : tokens) {
    if (!t.content.empty()) tokens_.push_back(t);
  }
  for (int i = 0; i < static_cast<int>(tokens_.size()); ++i) {
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](int a, int b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

std::vector<Segment> AddedTokenMatcher::Split(std::string_view text) const {
  std::vector<Segment> segments;
  size_t text_start = 0;  // start of the pending text segment
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* match = nullptr;
    for (int index : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      const AddedToken& t = tokens_[index];
      if (text.compare(pos, t.content.size(), t.content) != 0) continue;
      if (t.single_word) {
        const size_t end = pos + t.content.size();
        if ((pos > 0 && IsWordChar(CharBefore(text, pos))) ||
            (end < text.size() && IsWordChar(DecodeUtf8(text, end)))) {
          continue;
        }
      }
      match = &t;
      break;
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos;
    size_t end = pos + match->content.size();
    if (match->lstrip) {
      while (begin > text_start && IsSpaceChar(CharBefore(text, begin))) {
        begin -= CharBefore(text, begin).length;
      }
    }
    if (match->rstrip) {
      while (end < text.size()) {
        const Utf8Char c = DecodeUtf8(text, end);
        if (!IsSpaceChar(c)) break;
        end += c.length;
      }
    }
    if (begin > text_start) {
      segments.push_back({text.substr(text_start, begin - text_start), text_start, -1});
    }
    segments.push_back({text.substr(begin, end - begin), begin, match->id});
    text_start = pos = end;
  }
  if (text_start < text.size()) {
    segments.push_back({text.substr(text_start), text_start, -1});
  }
  return segments;
}

}  // namespace orca::tokenizer_internal
