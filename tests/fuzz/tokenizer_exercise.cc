#include "tests/fuzz/tokenizer_exercise.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/tokenizer/internal/unicode.h"

namespace orca::fuzz {
namespace {

[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "tokenizer contract broken: %s\n", what);
  __builtin_trap();
}

void CheckDecoded(const std::string& text) {
  if (!tokenizer_internal::IsValidUtf8(text)) Broken("decoded text is not valid UTF-8");
}

const std::vector<std::string>& Texts() {
  static const std::vector<std::string> texts = {
      "",
      "Once upon a time, there was a little girl named Lily.",
      "  leading and  double   spaces\n\ttabs\r\n",
      "<s>Hello</s> <unk> <|im_start|>user<|im_end|> [INST] x [/INST]",
      "caf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80 \xE2\x96\x81word \xCE\xA9",
      "bad utf-8: \xFF\xFE \xC3 \xE2\x82 \xF0\x9F\x98 \xED\xA0\x80 \xC0\xAF",
      std::string(300, 'a'),
      std::string(64, ' ') + "x",
      "1234567890 3.14159 -42 'quoted' \"double\" it's don't",
  };
  return texts;
}

}  // namespace

void ExerciseTokenizer(const Tokenizer& tokenizer) {
  const int32_t vocab = tokenizer.vocab_size();
  for (const std::string& text : Texts()) {
    for (bool special : {false, true}) {
      const std::vector<int32_t> ids = tokenizer.Encode(text, special);
      for (int32_t id : ids) {
        if (id < 0 || id >= vocab) Broken("encoded id outside [0, vocab_size)");
      }
      CheckDecoded(tokenizer.Decode(ids, /*skip_special_tokens=*/false));
      CheckDecoded(tokenizer.Decode(ids, /*skip_special_tokens=*/true));
    }
  }
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < std::min(vocab, 1024); ++id) ids.push_back(id);
  for (int32_t id : {-1, vocab, vocab + 1, INT32_MAX, INT32_MIN}) ids.push_back(id);
  CheckDecoded(tokenizer.Decode(ids, /*skip_special_tokens=*/false));
  for (int32_t id : ids) {
    (void)tokenizer.IdToToken(id);
    (void)tokenizer.IsSpecial(id);
  }
  // Streaming: the first ids (specials and byte tokens sit there) and the unknown ones.
  StreamingDetokenizer stream(tokenizer, /*skip_special_tokens=*/true);
  for (size_t i = 0; i < ids.size(); i = i < 64 ? i + 1 : std::max(i + 1, ids.size() - 5)) {
    CheckDecoded(stream.Push(ids[i]));
  }
  CheckDecoded(stream.Flush());
  for (const char* token : {"<s>", "</s>", "<unk>", "\xE2\x96\x81", "a"}) {
    if (auto id = tokenizer.TokenToId(token); id && (*id < 0 || *id >= vocab)) {
      Broken("TokenToId outside [0, vocab_size)");
    }
  }
}

}  // namespace orca::fuzz
