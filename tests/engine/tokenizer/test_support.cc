#include "tests/engine/tokenizer/test_support.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/tokenizer/internal/unicode.h"

namespace orca::tokenizer_test {
namespace {

namespace fs = std::filesystem;

using tokenizer_internal::AppendUtf8;

// Draws with raw mt19937 output (not <random> distributions, whose results differ
// between standard libraries) so the corpus is the same everywhere.
class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(gen_() % n); }
  uint32_t Between(uint32_t lo, uint32_t hi) { return lo + Below(hi - lo + 1); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(static_cast<uint32_t>(v.size()))];
  }

 private:
  std::mt19937 gen_;
};

const std::vector<std::string> kWords = {"the",
                                         "quick",
                                         "brown",
                                         "fox",
                                         "jumps",
                                         "over",
                                         "lazy",
                                         "dog",
                                         "Once",
                                         "upon",
                                         "a",
                                         "time",
                                         "there",
                                         "was",
                                         "little",
                                         "girl",
                                         "named",
                                         "Lily",
                                         "She",
                                         "loved",
                                         "to",
                                         "play",
                                         "outside",
                                         "in",
                                         "park",
                                         "One",
                                         "day",
                                         "saw",
                                         "big",
                                         "red",
                                         "ball",
                                         "Hello",
                                         "World",
                                         "tokenizer",
                                         "streaming",
                                         "HTTP",
                                         "JSON",
                                         "GPU",
                                         "iPhone",
                                         "McDonald",
                                         "unbelievable",
                                         "supercalifragilistic",
                                         "x",
                                         "I",
                                         "OK",
                                         "Mr",
                                         "e.g",
                                         "vs"};
const std::vector<std::string> kContractions = {
    "don't", "I'll",  "we've", "he'd",    "IT'S",        "they'Re", "'s", "'t", "you're",
    "I'M",   "can't", "'LL",   "o'clock", "rock'n'roll", "'",       "''", "' s"};
const std::vector<std::string> kAccented = {
    "café",       "naïve",        "über", "Ñandú",    "façade", "smörgåsbord", "résumé",
    "Ærøskøbing", "crème brûlée", "Łódź", "İstanbul", "ß",      "ǅ",           "ﬁ"};
const std::vector<std::string> kEmoji = {
    "😀", "🙂", "👍🏽", "👩‍💻", "🇫🇷",     "❤️", "🎉🎉", "👨‍👩‍👧‍👦",
    "✨", "🤖", "🌍",        "☕",           "1️⃣"};
const std::vector<std::string> kPunctuation = {
    "!", "?", ".",  ",", ";", ":", "-", "—", "–", "…", "\"", "(", ")", "[", "]",  "{", "}", "<",
    ">", "/", "\\", "|", "@", "#", "$", "%", "^", "&", "*",  "_", "+", "=", "~",  "`", "€", "£",
    "¥", "©", "®",  "°", "±", "×", "÷", "§", "¶", "•", "«",  "»", "¿", "¡", "。", "、"};
const std::vector<std::string> kCombining = {
    "e\u0301",     "a\u0308\u0304", "مرحبا بالعالم", "שָׁלוֹם",           "नमस्ते",       "สวัสดีครับ",
    "Привет, мир", "Γειά σου",      "안녕하세요",    "こんにちは世界", "你好，世界", "Tiếng Việt"};
const std::vector<std::string> kEdgeCases = {"",
                                             " ",
                                             "  ",
                                             "   ",
                                             "\t",
                                             "\n",
                                             "\r\n",
                                             "\n\n\n",
                                             " \n ",
                                             "a",
                                             "A",
                                             "'",
                                             "'s",
                                             "'S",
                                             "''s",
                                             "1",
                                             "12",
                                             "123",
                                             "1234",
                                             "12345678901234",
                                             "a1b2c3",
                                             "hello world",
                                             "hello  world",
                                             "  leading",
                                             "trailing  ",
                                             "Once upon a time",
                                             "\xE2\x96\x81",
                                             "\xE2\x96\x81\xE2\x96\x81x",
                                             "<0x41>",
                                             "<s>",
                                             "</s>",
                                             "<unk>",
                                             "<s><s>",
                                             "a<s>b",
                                             "<|endoftext|>",
                                             "x<|endoftext|>y",
                                             "<|endoftext",
                                             "\xC3\xA9",
                                             "日本語",
                                             "😀",
                                             "\xF0\x9F\x98",
                                             "\xFF",
                                             "\xC0\xAF",
                                             "\xED\xA0\x80",
                                             std::string("nul\0byte", 8),
                                             "tab\there",
                                             "CR\rLF\n",
                                             "\u00A0\u3000\u2003",
                                             "\u200B\u200D",
                                             "$$$",
                                             "...",
                                             "?!",
                                             "don't stop",
                                             "I'LL",
                                             "x  \n  y",
                                             " \t\n\r "};

std::string RandomFromRange(Rng& rng, char32_t lo, char32_t hi, int min_len, int max_len) {
  std::string s;
  const int n = static_cast<int>(rng.Between(min_len, max_len));
  for (int i = 0; i < n; ++i) AppendUtf8(lo + rng.Below(hi - lo + 1), &s);
  return s;
}

std::string Whitespace(Rng& rng, bool js_safe) {
  static const std::vector<std::string> kSpaces = {
      " ", " ", " ", "\t", "\n", "\r\n", "\r", "\u00A0", "\u3000", "\u2003", "\v", "\f", "\u2028"};
  std::string s;
  const int n = static_cast<int>(rng.Between(1, 6));
  for (int i = 0; i < n; ++i) s += rng.Pick(kSpaces);
  if (!js_safe && rng.Below(8) == 0) s += rng.Below(2) ? "\u0085" : "\uFEFF";
  return s;
}

std::string Fragment(Rng& rng, const CorpusOptions& options) {
  switch (rng.Below(14)) {
    case 0:
    case 1: {
      std::string s;
      const int n = static_cast<int>(rng.Between(1, 8));
      for (int i = 0; i < n; ++i) {
        if (i > 0) s += " ";
        s += rng.Pick(kWords);
      }
      if (rng.Below(2)) s += rng.Pick(kPunctuation);
      return s;
    }
    case 2:
      return rng.Pick(kContractions);
    case 3:
      return rng.Below(2) ? rng.Pick(kAccented) : RandomFromRange(rng, 0xC0, 0x17F, 1, 6);
    case 4:
      return rng.Below(2) ? RandomFromRange(rng, 0x391, 0x3C9, 1, 6)
                          : RandomFromRange(rng, 0x410, 0x44F, 1, 8);
    case 5:
      switch (rng.Below(3)) {
        case 0:
          return RandomFromRange(rng, 0x4E00, 0x9FA5, 1, 6);
        case 1:
          return RandomFromRange(rng, 0x3041, 0x3096, 1, 6);
        default:
          return RandomFromRange(rng, 0xAC00, 0xD7A3, 1, 4);
      }
    case 6: {
      std::string s;
      const int n = static_cast<int>(rng.Between(1, 3));
      for (int i = 0; i < n; ++i) {
        s += rng.Below(3) ? rng.Pick(kEmoji) : RandomFromRange(rng, 0x1F600, 0x1F64F, 1, 1);
      }
      return s;
    }
    case 7:
      return Whitespace(rng, options.js_safe_whitespace);
    case 8: {
      switch (rng.Below(5)) {
        case 0:
          return std::to_string(rng.Below(1000000000)) + std::to_string(rng.Below(1000));
        case 1:
          return std::to_string(rng.Below(1000)) + "." + std::to_string(rng.Below(100));
        case 2:
          return RandomFromRange(rng, 0x660, 0x669, 1, 5);  // Arabic-Indic digits
        case 3:
          return RandomFromRange(rng, 0xFF10, 0xFF19, 1, 4);  // fullwidth digits
        default:
          return rng.Below(2) ? "²³½" : "Ⅻ ⅷ";  // No and Nl
      }
    }
    case 9: {
      std::string s;
      const int n = static_cast<int>(rng.Between(1, 4));
      for (int i = 0; i < n; ++i) s += rng.Pick(kPunctuation);
      return s;
    }
    case 10:
      return rng.Pick(kCombining);
    case 11: {
      if (options.special_texts.empty()) return rng.Pick(kWords);
      return rng.Pick(options.special_texts);
    }
    case 12: {
      // Control characters and format characters.
      std::string s;
      const int n = static_cast<int>(rng.Between(1, 3));
      for (int i = 0; i < n; ++i) {
        const uint32_t pick = rng.Below(4);
        if (pick == 0) {
          s.push_back(static_cast<char>(rng.Below(0x20)));
        } else if (pick == 1) {
          s += "\x7F";
        } else if (pick == 2) {
          s += "\u200B";
        } else {
          s += "\u00AD";
        }
      }
      return s;
    }
    default: {
      if (!options.invalid_utf8) return rng.Pick(kAccented);
      std::string s;
      const int n = static_cast<int>(rng.Between(1, 6));
      for (int i = 0; i < n; ++i) {
        switch (rng.Below(3)) {
          case 0:
            s.push_back(static_cast<char>(rng.Below(256)));
            break;
          case 1:
            s += std::string("\xE6\x97\xA5").substr(0, rng.Between(1, 2));  // truncated
            break;
          default:
            s.push_back(static_cast<char>(0x80 + rng.Below(0x40)));  // stray continuation
        }
      }
      return s;
    }
  }
}

}  // namespace

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::string SourceDir() {
  const char* dir = std::getenv("ORCA_SOURCE_DIR");
  return dir != nullptr ? std::string(dir) : fs::current_path().string();
}

std::string Stories260KDir() { return SourceDir() + "/models/stories260K"; }

bool Stories260KAvailable() {
  return fs::exists(Stories260KDir() + "/tokenizer.json") &&
         fs::exists(Stories260KDir() + "/tokenizer.model");
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = (fs::temp_directory_path() /
           ("orca_tokenizer_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++)))
              .string();
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  const std::string path = path_ + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out << contents;
  return path;
}

std::vector<std::string> MakeCorpus(uint32_t seed, size_t count, const CorpusOptions& options) {
  static const std::vector<std::string> kAllSpecials = {"<s>", "</s>", "<unk>", "<|endoftext|>"};
  std::vector<std::string> excluded_specials;
  for (const std::string& special : kAllSpecials) {
    bool allowed = false;
    for (const std::string& a : options.special_texts) allowed = allowed || a == special;
    if (!allowed) excluded_specials.push_back(special);
  }
  auto accept = [&](const std::string& s) {
    if (!options.invalid_utf8 && !tokenizer_internal::IsValidUtf8(s)) return false;
    if (options.js_safe_whitespace && ContainsAny(s, {"\u0085", "\uFEFF"})) return false;
    return !ContainsAny(s, excluded_specials);
  };
  std::vector<std::string> corpus;
  for (const std::string& s : kEdgeCases) {
    if (corpus.size() < count && accept(s)) corpus.push_back(s);
  }
  static const std::vector<std::string> kSeparators = {"", " ", " ", " ", "\n", "  ", "\t"};
  Rng rng(seed);
  while (corpus.size() < count) {
    std::string s;
    const int fragments = static_cast<int>(rng.Between(1, 6));
    for (int i = 0; i < fragments; ++i) {
      if (i > 0) s += rng.Pick(kSeparators);
      s += Fragment(rng, options);
    }
    if (accept(s)) corpus.push_back(std::move(s));
  }
  return corpus;
}

bool ContainsAny(const std::string& s, const std::vector<std::string>& needles) {
  for (const std::string& n : needles) {
    if (!n.empty() && s.find(n) != std::string::npos) return true;
  }
  return false;
}

std::string TinySentencePieceStyleJson() {
  return R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true, "lstrip": false, "rstrip": false,
     "normalized": false, "single_word": false},
    {"id": 1, "content": "<s>", "special": true},
    {"id": 2, "content": "</s>", "special": true}
  ],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "▁"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "fuse_unk": true,
    "byte_fallback": true, "ignore_merges": false,
    "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, )" +
         [] {
           std::string bytes;
           char buf[32];
           for (int b = 0; b < 256; ++b) {
             std::snprintf(buf, sizeof(buf), "\"<0x%02X>\": %d, ", b, 3 + b);
             bytes += buf;
           }
           return bytes;
         }() +
         R"("▁": 259, "a": 260, "b": 261, "c": 262, "d": 263, "e": 264,
              "▁a": 265, "ab": 266, "▁ab": 267, "cd": 268, "▁abcd": 269},
    "merges": ["▁ a", "a b", "▁a b", "c d", ["▁ab", "cd"]]}
})";
}

}  // namespace orca::tokenizer_test
