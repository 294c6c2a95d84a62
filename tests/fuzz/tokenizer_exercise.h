// What the tokenizer fuzzers do with a tokenizer that loaded: encode and decode fixed
// texts and ids, checking the Tokenizer contract (engine/tokenizer/tokenizer.h), so a
// file that loads but leaves the vocabulary, merges or added tokens inconsistent fails
// here rather than in a serving process.
#pragma once

#include "engine/tokenizer/tokenizer.h"

namespace orca::fuzz {

// Encodes texts (ASCII, Unicode, invalid UTF-8, special-token spellings, long runs) with
// and without special tokens, and decodes every id up to 1024 plus unknown and negative
// ones (the first 64 and the unknown ones also through a StreamingDetokenizer). Traps when an
// encoded id is outside [0, vocab_size()) or a decoded text is not valid UTF-8.
void ExerciseTokenizer(const Tokenizer& tokenizer);

}  // namespace orca::fuzz
