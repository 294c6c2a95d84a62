// orca's own tokenizer.model loader without libsentencepiece: SentencePiece semantics on
// hand-made models, malformed files, and random or mutated bytes.
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/tokenizer/internal/sentencepiece_model_proto.h"
#include "engine/tokenizer/internal/sentencepiece_tokenizer.h"
#include "engine/tokenizer/internal/unicode.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/tokenizer/model_proto_writer.h"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

using ::testing::HasSubstr;
using tokenizer_internal::IsValidUtf8;
using tokenizer_internal::SentencePieceModelProto;
using tokenizer_internal::SentencePieceTokenizer;
using tokenizer_internal::TokenizerConfig;
using tokenizer_test::ProtoWriter;
using tokenizer_test::SerializeSentencePieceModel;
using tokenizer_test::TempDir;
using tokenizer_test::TinySentencePieceModel;
using Type = SentencePieceModelProto::PieceType;
using Ids = std::vector<int32_t>;

constexpr int32_t kByte0 = 3;  // id of <0x00> in the tiny model
constexpr int32_t kSpace = 259, kA = 260, kB = 261, kC = 262, kSpaceA = 265, kAb = 266,
                  kSpaceAb = 267, kSpaceAbcd = 269;

std::unique_ptr<Tokenizer> LoadModel(const SentencePieceModelProto& proto, TempDir& dir) {
  dir.Write("tokenizer.model", SerializeSentencePieceModel(proto));
  auto t = Tokenizer::FromDirectory(dir.path());
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

absl::Status LoadError(const std::string& bytes, const TempDir& dir) {
  dir.Write("tokenizer.model", bytes);
  return Tokenizer::FromDirectory(dir.path()).status();
}

TEST(SentencePieceModelTest, LoadsTinyModel) {
  TempDir dir;
  auto t = LoadModel(TinySentencePieceModel(), dir);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->vocab_size(), 270);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
  // Merges by score: ▁a (-6) before ab (-7), then ▁ab (-8), cd (-9), ▁abcd (-10).
  EXPECT_EQ(t->Encode("abcd ab", true), (Ids{1, kSpaceAbcd, kSpaceAb}));
  EXPECT_EQ(t->Encode("abcd ab", false), (Ids{kSpaceAbcd, kSpaceAb}));
  // remove_extra_whitespaces (on by default) drops leading, trailing and repeated spaces.
  EXPECT_EQ(t->Encode("  abcd   ab  ", false), t->Encode("abcd ab", false));
  EXPECT_EQ(t->Encode("", false), Ids{});
  EXPECT_EQ(t->Encode("   ", false), Ids{});
  // "é" is not a piece: byte fallback.
  EXPECT_EQ(t->Encode("é", false), (Ids{kSpace, kByte0 + 0xC3, kByte0 + 0xA9}));
  // Invalid UTF-8 becomes U+FFFD first, as in libsentencepiece.
  EXPECT_EQ(t->Encode("\xFF", false), (Ids{kSpace, kByte0 + 0xEF, kByte0 + 0xBF, kByte0 + 0xBD}));
  // Control-piece text maps to its id; each side gets its own dummy prefix.
  EXPECT_EQ(t->Encode("a</s>b", false), (Ids{kSpaceA, 2, kSpace, kB}));
  EXPECT_EQ(t->Decode({1, kSpaceAbcd, kSpaceAb, 2}, true), "abcd ab");
  EXPECT_EQ(t->Decode({1, kSpaceAbcd, kSpaceAb, 2}, false), "<s> abcd ab</s>");
  EXPECT_EQ(t->Decode({kByte0 + 0xC3, kByte0 + 0xA9, kSpaceA}, true), "é a");
  // An incomplete byte sequence: one U+FFFD for the maximal ill-formed subsequence.
  EXPECT_EQ(t->Decode({kByte0 + 0xE6, kByte0 + 0x97, kA}, true), "\uFFFDa");
  EXPECT_EQ(t->Decode({-1, 5000, kSpaceA}, true), "a");
  EXPECT_EQ(t->TokenToId("\xE2\x96\x81"
                         "abcd"),
            kSpaceAbcd);
  EXPECT_EQ(t->TokenToId("<0x41>"), kByte0 + 0x41);
  EXPECT_EQ(t->TokenToId("zzz"), std::nullopt);
  EXPECT_EQ(t->IdToToken(kSpaceAb),
            "\xE2\x96\x81"
            "ab");
  EXPECT_EQ(t->IdToToken(270), "");
  EXPECT_TRUE(t->IsSpecial(0));
  EXPECT_TRUE(t->IsSpecial(1));
  EXPECT_FALSE(t->IsSpecial(kA));
}

TEST(SentencePieceModelTest, NormalizerFlags) {
  SentencePieceModelProto proto = TinySentencePieceModel();
  proto.normalizer.remove_extra_whitespaces = false;
  TempDir keep_spaces;
  auto t = LoadModel(proto, keep_spaces);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Encode(" a  b ", false), (Ids{kSpace, kSpaceA, kSpace, kSpace, kB, kSpace}));
  // Only the dummy prefix's space is stripped when decoding.
  EXPECT_EQ(t->Decode(t->Encode(" a  b ", true), true), " a  b ");

  proto.normalizer.add_dummy_prefix = false;
  TempDir no_prefix;
  t = LoadModel(proto, no_prefix);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Encode("ab a", false), (Ids{kAb, kSpaceA}));
  EXPECT_EQ(t->Decode(t->Encode(" ab", false), true), " ab");

  proto.treat_whitespace_as_suffix = true;
  proto.normalizer.add_dummy_prefix = true;
  TempDir suffix;
  t = LoadModel(proto, suffix);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Encode("ab", false), (Ids{kAb, kSpace}));
}

TEST(SentencePieceModelTest, UserDefinedAndUnusedPieces) {
  SentencePieceModelProto proto = TinySentencePieceModel();
  proto.pieces.push_back({"<tool>", 0, Type::kUserDefined});  // id 270
  proto.pieces.push_back({"bc", -11, Type::kNormal});         // id 271
  proto.pieces[kSpaceAb].type = Type::kUnused;
  TempDir dir;
  auto t = LoadModel(proto, dir);
  ASSERT_NE(t, nullptr);
  // A user-defined piece is matched whole and never merged.
  EXPECT_EQ(t->Encode("a<tool>b", false), (Ids{kSpaceA, 270, kB}));
  EXPECT_FALSE(t->IsSpecial(270));
  EXPECT_EQ(t->Decode({kSpaceA, 270, kB}, true), "a<tool>b");
  // ▁ab is UNUSED: it merges, then splits back into ▁a + b ...
  EXPECT_EQ(t->Encode("ab", false), (Ids{kSpaceA, kB}));
  // ... but still builds ▁abcd.
  EXPECT_EQ(t->Encode("abcd", false), (Ids{kSpaceAbcd}));
  // b c (bc = -11) loses to ▁a b (▁ab = -8): ▁ab c, then no ▁abc.
  EXPECT_EQ(t->Encode("abc", false), (Ids{kSpaceA, kB, kC}));
}

TEST(SentencePieceModelTest, UnknownWithoutByteFallback) {
  SentencePieceModelProto proto;
  proto.model_type = SentencePieceModelProto::ModelType::kBpe;
  proto.pieces = {{"<unk>", 0, Type::kUnknown},
                  {"<s>", 0, Type::kControl},
                  {"</s>", 0, Type::kControl},
                  {"\xE2\x96\x81", 0, Type::kNormal},
                  {"a", 0, Type::kNormal},
                  {"\xE2\x96\x81"
                   "a",
                   -1, Type::kNormal}};
  TempDir dir;
  auto t = LoadModel(proto, dir);
  ASSERT_NE(t, nullptr);
  // A run of unknown characters becomes one <unk>.
  EXPECT_EQ(t->Encode("a xyz a", false), (Ids{5, 3, 0, 5}));
  EXPECT_EQ(t->Decode({5, 3, 0, 5}, true), "a  a");
  EXPECT_EQ(t->Decode({5, 3, 0, 5}, false), "a <unk> a");
}

TEST(SentencePieceModelTest, ConfigOverridesBosAndEos) {
  TempDir dir;
  dir.Write("tokenizer.model", SerializeSentencePieceModel(TinySentencePieceModel()));
  dir.Write("tokenizer_config.json",
            R"({"add_bos_token": false, "add_eos_token": true, "eos_token": "<s>",
                "chat_template": "T"})");
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->eos_id(), 1);
  EXPECT_EQ((*t)->Encode("a", true), (Ids{kSpaceA, 1}));
  EXPECT_EQ((*t)->chat_template(), "T");
}

// Streams `ids` and checks every increment is valid UTF-8 and the whole equals Decode.
void ExpectStreamsLikeDecode(const Tokenizer& t, const Ids& ids, const std::string& context) {
  for (bool skip : {true, false}) {
    StreamingDetokenizer stream(t, skip);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = stream.Push(id);
      ASSERT_TRUE(IsValidUtf8(piece)) << context;
      streamed += piece;
    }
    streamed += stream.Flush();
    EXPECT_EQ(streamed, t.Decode(ids, skip)) << context;
  }
}

TEST(SentencePieceModelTest, StreamsLikeDecode) {
  TempDir tiny_dir;
  auto tiny = LoadModel(TinySentencePieceModel(), tiny_dir);
  ASSERT_NE(tiny, nullptr);
  for (const std::string& s : tokenizer_test::MakeCorpus(12, 500, {})) {
    ExpectStreamsLikeDecode(*tiny, tiny->Encode(s, true), "tiny: " + s);
  }
  if (!tokenizer_test::Stories260KAvailable()) {
    ORCA_SKIP_OR_FAIL("stories260K not found at " << tokenizer_test::Stories260KDir());
  }
  auto stories = SentencePieceTokenizer::Load(tokenizer_test::Stories260KDir());
  ASSERT_TRUE(stories.ok()) << stories.status();
  for (const std::string& s : tokenizer_test::MakeCorpus(13, 1000, {})) {
    ExpectStreamsLikeDecode(**stories, (*stories)->Encode(s, true), "stories260K: " + s);
  }
}

struct MalformedCase {
  const char* name;
  std::string bytes;
  absl::StatusCode code;
  const char* expected;  // substring of the message
};

std::string TinyEdited(const std::function<void(SentencePieceModelProto&)>& edit) {
  SentencePieceModelProto proto = TinySentencePieceModel();
  edit(proto);
  return SerializeSentencePieceModel(proto);
}

// kMaxSentencePieces + 1 empty pieces: 8 MB.
std::string TooManyPieces() {
  std::string bytes;
  for (size_t i = 0; i <= tokenizer_internal::kMaxSentencePieces; ++i) {
    bytes.append("\x0A\x00", 2);
  }
  return bytes;
}

TEST(SentencePieceModelTest, MalformedModelsNameTheFile) {
  const std::string tiny = SerializeSentencePieceModel(TinySentencePieceModel());
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const std::vector<MalformedCase> cases = {
      {"empty", "", kInvalid, "no pieces"},
      {"not a protobuf", "this is not a protobuf", kInvalid, "wire type"},
      {"truncated", tiny.substr(0, tiny.size() - 3), kInvalid, "bytes remain"},
      {"truncated varint", "\x0A\xFF", kInvalid, "truncated varint at byte 1"},
      {"bad varint", "\x18" + std::string(10, '\xFF') + "\x01", kInvalid, "bad varint"},
      {"field number 0", std::string("\x02\x00", 2), kInvalid, "invalid field number 0"},
      {"group", "\x0B", kInvalid, "unsupported wire type 3"},
      {"wire type 7", "\x0F", kInvalid, "unsupported wire type 7"},
      {"truncated fixed32", tiny + ProtoWriter().Raw("\x1D\x01\x02").data(), kInvalid,
       "truncated fixed32"},
      {"absurd length", "\x0A" + ProtoWriter::EncodeVarint(uint64_t{1} << 40), kInvalid,
       "has length 1099511627776 but only 0 bytes remain"},
      {"too many pieces", TooManyPieces(), kInvalid, "pieces: more than 4194304"},
      {"pieces as varint", ProtoWriter().Varint(1, 5).data(), kInvalid,
       "pieces: field 1 has wire type varint, expected length-delimited"},
      {"score as varint", ProtoWriter().Message(1, ProtoWriter().Varint(2, 1)).data(), kInvalid,
       "pieces[0].score: field 2 has wire type varint, expected fixed32"},
      {"piece type out of range", ProtoWriter().Message(1, ProtoWriter().Varint(3, 9)).data(),
       kInvalid, "pieces[0].type: 9 is not a known value"},
      {"trainer_spec not a message", tiny + ProtoWriter().Fixed32(2, 0).data(), kInvalid,
       "trainer_spec: field 2 has wire type fixed32"},
      {"broken nested message", tiny + ProtoWriter().Bytes(3, "\x08").data(), kInvalid,
       "normalizer_spec: truncated varint"},
      {"NaN score", TinyEdited([](auto& p) { p.pieces[269].score = std::nanf(""); }), kInvalid,
       "pieces[269].score: NaN"},
      {"unigram",
       TinyEdited([](auto& p) { p.model_type = SentencePieceModelProto::ModelType::kUnigram; }),
       absl::StatusCode::kUnimplemented, "model type UNIGRAM is not supported"},
      {"char",
       TinyEdited([](auto& p) { p.model_type = SentencePieceModelProto::ModelType::kChar; }),
       absl::StatusCode::kUnimplemented, "model type CHAR"},
      {"bos out of range", TinyEdited([](auto& p) { p.bos_id = 270; }), kInvalid,
       "trainer_spec.bos_id 270 is out of range for a vocabulary of 270 pieces"},
      {"unk out of range", TinyEdited([](auto& p) { p.unk_id = -7; }), kInvalid,
       "trainer_spec.unk_id -7 is out of range"},
      {"empty piece", TinyEdited([](auto& p) { p.pieces[260].piece = ""; }), kInvalid,
       "pieces[260] is empty"},
      {"duplicate piece", TinyEdited([](auto& p) { p.pieces[261].piece = "a"; }), kInvalid,
       "pieces[261] \"a\" duplicates pieces[260]"},
      {"no unknown piece", TinyEdited([](auto& p) { p.pieces[0].type = Type::kControl; }), kInvalid,
       "no piece of type UNKNOWN"},
      {"two unknown pieces", TinyEdited([](auto& p) { p.pieces[1].type = Type::kUnknown; }),
       kInvalid, "second UNKNOWN piece"},
      {"byte piece without byte_fallback", TinyEdited([](auto& p) { p.byte_fallback = false; }),
       kInvalid, "is a BYTE piece but trainer_spec.byte_fallback is off"},
      {"missing byte piece", TinyEdited([](auto& p) { p.pieces[3 + 0x41].type = Type::kNormal; }),
       kInvalid, "piece <0x41> is missing"},
      {"malformed byte piece", TinyEdited([](auto& p) { p.pieces[4].piece = "<0xzz>"; }), kInvalid,
       "\"<0xzz>\" is not a <0xNN> piece"},
      {"charsmap longer than its blob", TinyEdited([](auto& p) {
         p.normalizer.precompiled_charsmap = std::string("\xFF\0\0\0abcd", 8);
       }),
       kInvalid, "normalizer_spec.precompiled_charsmap: trie of 255 bytes in a blob of 8"},
      {"charsmap header only",
       TinyEdited([](auto& p) { p.normalizer.precompiled_charsmap = "\x04"; }), kInvalid,
       "shorter than its header"},
      {"denormalizer charsmap", TinyEdited([](auto& p) {
         p.denormalizer.emplace();
         p.denormalizer->precompiled_charsmap = std::string("\x03\0\0\0abcd", 8);
       }),
       kInvalid, "denormalizer_spec.precompiled_charsmap: trie size 3"},
  };
  for (const MalformedCase& c : cases) {
    TempDir dir;
    const absl::Status s = LoadError(c.bytes, dir);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(dir.path() + "/tokenizer.model")) << c.name;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.expected)) << c.name;
  }
}

// Loads `bytes`; when that succeeds, encodes and decodes random text.
void LoadAndUse(const std::string& bytes, std::mt19937& gen) {
  const std::string file = "/fuzz/tokenizer.model";
  auto t = SentencePieceTokenizer::Create(bytes, file, TokenizerConfig{});
  if (!t.ok()) {
    ASSERT_THAT(std::string(t.status().message()), HasSubstr(file));
    return;
  }
  for (int i = 0; i < 4; ++i) {
    std::string text(gen() % 24, '\0');
    for (char& c : text) c = static_cast<char>(gen() % 4 == 0 ? gen() % 256 : 'a' + gen() % 6);
    const Ids ids = (*t)->Encode(text, true);
    for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < (*t)->vocab_size());
    ASSERT_TRUE(IsValidUtf8((*t)->Decode(ids, i % 2 == 0)));
  }
  Ids random_ids(gen() % 12);
  for (int32_t& id : random_ids) id = static_cast<int32_t>(gen() % ((*t)->vocab_size() + 4)) - 2;
  ASSERT_TRUE(IsValidUtf8((*t)->Decode(random_ids, false)));
}

std::string Mutate(std::string bytes, std::mt19937& gen) {
  const int edits = 1 + static_cast<int>(gen() % 4);
  for (int e = 0; e < edits && !bytes.empty(); ++e) {
    const size_t pos = gen() % bytes.size();
    switch (gen() % 5) {
      case 0:
        bytes[pos] = static_cast<char>(gen() % 256);
        break;
      case 1:
        bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (gen() % 8)));
        break;
      case 2:
        bytes.erase(pos, 1 + gen() % 8);
        break;
      case 3:
        bytes.insert(pos, 1, static_cast<char>(gen() % 256));
        break;
      default:
        bytes.resize(pos);
        break;
    }
  }
  return bytes;
}

TEST(SentencePieceModelTest, RandomAndMutatedBytesNeverCrash) {
  std::mt19937 gen(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(gen() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(gen() % 256);
    LoadAndUse(bytes, gen);
  }
  SentencePieceModelProto proto = TinySentencePieceModel();
  proto.pieces.push_back({"<tool>", 0, Type::kUserDefined});
  proto.pieces[kSpaceAb].type = Type::kUnused;
  const std::string tiny = SerializeSentencePieceModel(proto);
  int loaded = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string bytes = Mutate(tiny, gen);
    LoadAndUse(bytes, gen);
    loaded += SentencePieceTokenizer::Create(bytes, "m", TokenizerConfig{}).ok();
  }
  EXPECT_GT(loaded, 50);  // some mutations (of scores, of normal pieces) keep it valid
  if (tokenizer_test::Stories260KAvailable()) {
    std::ifstream in(tokenizer_test::Stories260KDir() + "/tokenizer.model", std::ios::binary);
    std::stringstream stories;
    stories << in.rdbuf();
    for (int i = 0; i < 300; ++i) LoadAndUse(Mutate(stories.str(), gen), gen);
  }
}

}  // namespace
}  // namespace orca
