// StreamingDetokenizer (declared in tokenizer.h): the prefix_offset / read_offset
// algorithm of vLLM and TGI. Each step decodes a short window twice, with and without
// the ids not yet emitted, and emits the difference once it no longer ends in U+FFFD
// (an incomplete character) — or, when it does, all but the ids of a character that
// may still complete. Decoding a window that starts at an already emitted id
// keeps context-dependent rules (SentencePiece's leading-space strip) consistent.
#include <algorithm>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace orca {
namespace {

bool EndsWithReplacement(std::string_view text) {
  return text.size() >= 3 && text.substr(text.size() - 3) == "\xEF\xBF\xBD";
}

// Returns the part of `new_text` after `prefix_text`. Should the two disagree (a
// decoder whose output for a prefix is not a prefix of its output), it returns the
// text after their longest common prefix that ends on a character boundary, so the
// result is still valid UTF-8.
std::string Delta(const std::string& prefix_text, const std::string& new_text) {
  size_t common = 0;
  const size_t limit = std::min(prefix_text.size(), new_text.size());
  while (common < limit && prefix_text[common] == new_text[common]) ++common;
  if (common < prefix_text.size()) {
    while (common > 0 && (static_cast<unsigned char>(new_text[common]) & 0xC0) == 0x80) --common;
  }
  return new_text.substr(common);
}

// Returns the length of the UTF-8 sequence `bytes` ends with when that sequence is
// incomplete but may still complete (a lead byte followed by fewer continuation bytes
// than it announces), else 0: the text ends on a character, or in bytes no later byte
// can make valid.
size_t IncompleteSuffixLength(std::string_view bytes) {
  for (size_t k = 1; k <= 3 && k <= bytes.size(); ++k) {
    const auto b = static_cast<unsigned char>(bytes[bytes.size() - k]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const size_t need = b >= 0xC2 && b <= 0xDF   ? 2
                        : b >= 0xE0 && b <= 0xEF ? 3
                        : b >= 0xF0 && b <= 0xF4 ? 4
                                                 : 0;
    return need > k ? k : 0;
  }
  return 0;
}

}  // namespace

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens,
                                           absl::Span<const int32_t> context)
    : tokenizer_(tokenizer),
      skip_special_tokens_(skip_special_tokens),
      ids_(context.begin(), context.end()),
      read_offset_(context.size()) {}

std::string StreamingDetokenizer::Push(int32_t id) {
  ids_.push_back(id);
  const absl::Span<const int32_t> all(ids_);
  const std::string prefix_text = tokenizer_.Decode(
      all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_tokens_);
  const std::string new_text = tokenizer_.Decode(all.subspan(prefix_offset_), skip_special_tokens_);
  if (new_text.size() <= prefix_text.size()) return "";
  if (!EndsWithReplacement(new_text)) {
    Advance(ids_.size());
    return Delta(prefix_text, new_text);
  }
  // Only the ids spelling an incomplete character wait for its next bytes; stray bytes
  // before them can never complete and go out now, as U+FFFD (otherwise a run of them,
  // e.g. a model repeating a lone lead byte, would hold the stream back to its end).
  const size_t end = ids_.size() - IdsOfIncompleteTail();
  if (end == ids_.size()) {
    Advance(end);
    return Delta(prefix_text, new_text);
  }
  if (end <= read_offset_) return "";
  const std::string text =
      tokenizer_.Decode(all.subspan(prefix_offset_, end - prefix_offset_), skip_special_tokens_);
  if (text.size() <= prefix_text.size()) return "";
  Advance(end);
  return Delta(prefix_text, text);
}

size_t StreamingDetokenizer::IdsOfIncompleteTail() const {
  // The last pending ids' raw bytes, enough of them to hold a character's first 3.
  std::vector<std::string> pieces;
  size_t bytes = 0;
  for (size_t i = ids_.size(); i > read_offset_ && bytes < 3; --i) {
    pieces.push_back(tokenizer_.DecodeBytes(absl::MakeConstSpan(&ids_[i - 1], 1)));
    bytes += pieces.back().size();
  }
  std::string tail;
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) tail += *it;
  size_t incomplete = IncompleteSuffixLength(tail);
  if (incomplete == 0) return 0;
  size_t n = 0;
  for (const std::string& piece : pieces) {  // last id first
    ++n;
    if (piece.size() >= incomplete) break;
    incomplete -= piece.size();
  }
  return n;
}

std::string StreamingDetokenizer::Flush() {
  const absl::Span<const int32_t> all(ids_);
  const std::string prefix_text = tokenizer_.Decode(
      all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_tokens_);
  const std::string new_text = tokenizer_.Decode(all.subspan(prefix_offset_), skip_special_tokens_);
  std::string out = new_text.size() > prefix_text.size() ? Delta(prefix_text, new_text) : "";
  if (EndsWithReplacement(new_text)) {
    // Bytes flushed as U+FFFD must not be decoded again with later ids.
    prefix_offset_ = read_offset_ = ids_.size();
  } else if (!out.empty()) {
    Advance(ids_.size());
  }
  return out;
}

void StreamingDetokenizer::Advance(size_t end) {
  // The next window starts at the first id just emitted, unless that id decodes to nothing
  // on its own (a skipped special token; a lone "▁", whose space SentencePiece drops at the
  // start of a text, and with remove_extra_whitespaces every leading space): the ids after
  // it would then decode as the start of a text, losing their spaces. The window then
  // keeps its start.
  const absl::Span<const int32_t> first = absl::Span<const int32_t>(ids_).subspan(read_offset_, 1);
  if (!tokenizer_.Decode(first, skip_special_tokens_).empty()) prefix_offset_ = read_offset_;
  read_offset_ = end;
}

}  // namespace orca
