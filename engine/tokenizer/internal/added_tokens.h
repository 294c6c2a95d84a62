// Added tokens (tokenizer.json "added_tokens"): strings matched in the input before any
// normalisation and mapped straight to their ids. Immutable and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orca::tokenizer_internal {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;       // the match absorbs whitespace on its left
  bool rstrip = false;       // the match absorbs whitespace on its right
  bool single_word = false;  // match only between non-word characters
};

// A piece of input: either text for the model, or one added token.
struct Segment {
  std::string_view text;  // the text, or the matched token with absorbed whitespace
  size_t offset = 0;      // byte offset of `text` in the input
  int32_t added_id = -1;  // >= 0 for an added token
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  // Splits `text` at added tokens, leftmost match first and the longest among those
  // starting at the same byte. Adjacent text segments are never empty.
  std::vector<Segment> Split(std::string_view text) const;

 private:
  std::vector<AddedToken> tokens_;
  // Indices into tokens_ by first byte, longest content first.
  std::array<std::vector<int>, 256> by_first_byte_;
};

}  // namespace orca::tokenizer_internal
