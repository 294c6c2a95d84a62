// orca's own tokenizer.model loader versus libsentencepiece reading the same model: exact
// equality of the ids over the generated corpus (whitespace normalisation and invalid
// UTF-8 included), and of the decoded text. Models: stories260K's tokenizer.model, models
// trained by libsentencepiece's trainer with various normalizer and vocabulary options,
// and edited copies of those (UNUSED pieces, whitespace escaping off, a denormalizer).
//
// Text that spells a control or unknown piece ("<s>") is plain text to libsentencepiece
// but a token to orca, so the expected ids come from libsentencepiece on each piece
// between such texts, with their ids in between. The unknown id decodes to " ⁇ " in
// libsentencepiece and to nothing in orca (a special token): decoding comparisons leave
// it out.
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "engine/tokenizer/internal/sentencepiece_model_proto.h"
#include "engine/tokenizer/internal/sentencepiece_tokenizer.h"
#include "engine/tokenizer/internal/unicode.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/engine/tokenizer/model_proto_writer.h"
#include "tests/engine/tokenizer/sentencepiece_reference.h"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

using tokenizer_internal::IsValidUtf8;
using tokenizer_internal::ParseSentencePieceModelProto;
using tokenizer_internal::SentencePieceModelProto;
using tokenizer_internal::SentencePieceTokenizer;
using tokenizer_internal::TokenizerConfig;
using tokenizer_test::CorpusOptions;
using tokenizer_test::MakeCorpus;
using tokenizer_test::SentencePieceReference;

std::string Escaped(const std::string& s) { return absl::CHexEscape(s); }

// Both sides of one model.
struct ModelPair {
  std::unique_ptr<Tokenizer> orca;
  std::unique_ptr<SentencePieceReference> sp;
  std::vector<std::pair<std::string, int>> specials;  // control and unknown pieces
};

ModelPair LoadPair(const std::string& bytes) {
  ModelPair pair;
  auto t = SentencePieceTokenizer::Create(bytes, "tokenizer.model", TokenizerConfig{});
  EXPECT_TRUE(t.ok()) << t.status();
  if (t.ok()) pair.orca = std::move(*t);
  std::string error;
  pair.sp = SentencePieceReference::FromBytes(bytes, &error);
  EXPECT_NE(pair.sp, nullptr) << error;
  if (pair.sp == nullptr) return pair;
  for (int id = 0; id < pair.sp->vocab_size(); ++id) {
    if (pair.sp->IsControl(id) || pair.sp->IsUnknown(id)) {
      pair.specials.emplace_back(pair.sp->IdToPiece(id), id);
    }
  }
  return pair;
}

// libsentencepiece's ids for `text`, with special-piece text as its id (leftmost match,
// longest among those starting at the same byte, as orca's matcher).
std::vector<int32_t> ExpectedIds(const ModelPair& pair, const std::string& text) {
  std::vector<int32_t> ids;
  auto encode = [&](size_t begin, size_t end) {
    if (end <= begin) return;
    for (int id : pair.sp->Encode(std::string_view(text).substr(begin, end - begin))) {
      ids.push_back(id);
    }
  };
  size_t start = 0, pos = 0;
  while (pos < text.size()) {
    const std::pair<std::string, int>* found = nullptr;
    for (const auto& special : pair.specials) {
      if (text.compare(pos, special.first.size(), special.first) == 0 &&
          (found == nullptr || special.first.size() > found->first.size())) {
        found = &special;
      }
    }
    if (found == nullptr) {
      ++pos;
      continue;
    }
    encode(start, pos);
    ids.push_back(found->second);
    pos += found->first.size();
    start = pos;
  }
  encode(start, text.size());
  return ids;
}

std::vector<int> WithoutUnknown(const ModelPair& pair, const std::vector<int32_t>& ids) {
  std::vector<int> out;
  for (int32_t id : ids) {
    if (!pair.sp->IsUnknown(id)) out.push_back(id);
  }
  return out;
}

struct CorpusStats {
  int compared = 0;
  int with_specials = 0;
  int invalid_utf8 = 0;
  int with_unknown_or_bytes = 0;
};

// Compares encoding and decoding of every string of `corpus`.
CorpusStats ExpectMatchesOnCorpus(const ModelPair& pair, const std::vector<std::string>& corpus,
                                  const std::string& name) {
  CorpusStats stats;
  for (const std::string& text : corpus) {
    const std::vector<int32_t> expected = ExpectedIds(pair, text);
    const std::vector<int32_t> ids = pair.orca->Encode(text, false);
    EXPECT_EQ(ids, expected) << name << ": \"" << Escaped(text) << "\"";
    const std::vector<int> decodable = WithoutUnknown(pair, expected);
    const std::vector<int32_t> decodable32(decodable.begin(), decodable.end());
    EXPECT_EQ(pair.orca->Decode(decodable32, true), pair.sp->Decode(decodable))
        << name << ": \"" << Escaped(text) << "\"";
    ++stats.compared;
    for (const auto& special : pair.specials) {
      if (text.find(special.first) != std::string::npos) {
        ++stats.with_specials;
        break;
      }
    }
    stats.invalid_utf8 += !IsValidUtf8(text);
    for (int32_t id : expected) {
      if (pair.sp->IsUnknown(id) || pair.sp->IsByte(id)) {
        ++stats.with_unknown_or_bytes;
        break;
      }
    }
  }
  return stats;
}

// Decodes random id sequences (no unknown id; byte pieces as whole UTF-8 characters).
void ExpectDecodesRandomIdsLikeReference(const ModelPair& pair, uint32_t seed,
                                         const std::string& name) {
  std::mt19937 gen(seed);
  std::vector<int> plain;
  for (int id = 0; id < pair.sp->vocab_size(); ++id) {
    if (!pair.sp->IsUnknown(id) && !pair.sp->IsByte(id)) plain.push_back(id);
  }
  const bool has_bytes = pair.sp->PieceToId("<0x41>") >= 0;
  for (int i = 0; i < 1000; ++i) {
    std::vector<int> ids;
    const int n = static_cast<int>(gen() % 12);
    for (int k = 0; k < n; ++k) {
      if (has_bytes && gen() % 4 == 0) {
        std::string ch;
        tokenizer_internal::AppendUtf8(static_cast<char32_t>(0xA0 + gen() % 0x3000), &ch);
        for (char c : ch) {
          char piece[8];
          std::snprintf(piece, sizeof(piece), "<0x%02X>", static_cast<unsigned char>(c));
          ids.push_back(pair.sp->PieceToId(piece));
        }
      } else {
        ids.push_back(plain[gen() % plain.size()]);
      }
    }
    const std::vector<int32_t> ids32(ids.begin(), ids.end());
    EXPECT_EQ(pair.orca->Decode(ids32, true), pair.sp->Decode(ids)) << name << " case " << i;
  }
}

void ExpectSameVocabulary(const ModelPair& pair) {
  ASSERT_EQ(pair.orca->vocab_size(), pair.sp->vocab_size());
  EXPECT_EQ(pair.orca->bos_id().value_or(-1), pair.sp->bos_id());
  EXPECT_EQ(pair.orca->eos_id().value_or(-1), pair.sp->eos_id());
  for (int id = 0; id < pair.sp->vocab_size(); ++id) {
    ASSERT_EQ(pair.orca->IdToToken(id), pair.sp->IdToPiece(id)) << id;
    ASSERT_EQ(pair.orca->TokenToId(pair.sp->IdToPiece(id)).value_or(-1),
              pair.sp->PieceToId(pair.sp->IdToPiece(id)))
        << id;
    ASSERT_EQ(pair.orca->IsSpecial(id), pair.sp->IsControl(id) || pair.sp->IsUnknown(id)) << id;
  }
}

std::string ReadStoriesModel() {
  std::ifstream in(tokenizer_test::Stories260KDir() + "/tokenizer.model", std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(SentencePieceReferenceTest, Stories260KMatchesLibSentencePiece) {
  if (!tokenizer_test::Stories260KAvailable()) {
    ORCA_SKIP_OR_FAIL("stories260K not found at " << tokenizer_test::Stories260KDir());
  }
  const ModelPair pair = LoadPair(ReadStoriesModel());
  ASSERT_NE(pair.orca, nullptr);
  ASSERT_NE(pair.sp, nullptr);
  ExpectSameVocabulary(pair);
  const CorpusStats stats =
      ExpectMatchesOnCorpus(pair, MakeCorpus(2024, 3000, CorpusOptions{}), "stories260K");
  EXPECT_GE(stats.compared, 2000);
  EXPECT_GT(stats.with_specials, 50);
  EXPECT_GT(stats.invalid_utf8, 50);
  EXPECT_GT(stats.with_unknown_or_bytes, 500);
  ExpectDecodesRandomIdsLikeReference(pair, 1, "stories260K");
}

TEST(SentencePieceReferenceTest, Stories260KRoundTrip) {
  if (!tokenizer_test::Stories260KAvailable()) {
    ORCA_SKIP_OR_FAIL("stories260K not found at " << tokenizer_test::Stories260KDir());
  }
  auto t = SentencePieceTokenizer::Load(tokenizer_test::Stories260KDir());
  ASSERT_TRUE(t.ok()) << t.status();
  std::string error;
  auto sp =
      SentencePieceReference::Load(tokenizer_test::Stories260KDir() + "/tokenizer.model", &error);
  ASSERT_NE(sp, nullptr) << error;
  int compared = 0;
  for (const std::string& text : MakeCorpus(99, 2500, CorpusOptions{})) {
    if (tokenizer_test::ContainsAny(text, {"<s>", "</s>", "<unk>"})) continue;
    // BOS and EOS around the text; both are invisible when decoding.
    const std::vector<int32_t> ids = (*t)->Encode(text, true);
    EXPECT_EQ((*t)->Decode(ids, true), sp->Decode(sp->Encode(text))) << Escaped(text);
    ++compared;
  }
  EXPECT_GE(compared, 2000);
}

// Training sentences: the corpus without invalid UTF-8 (the trainer rejects it).
const std::vector<std::string>& TrainingSentences() {
  static const auto* sentences = [] {
    CorpusOptions options;
    options.invalid_utf8 = false;
    auto* s = new std::vector<std::string>(MakeCorpus(5, 4000, options));
    for (std::string& line : *s) {
      for (char& c : line) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';  // one sentence per line
      }
    }
    return s;
  }();
  return *sentences;
}

std::string Train(const std::string& args) {
  std::string error;
  const std::string model = tokenizer_test::TrainSentencePieceModel(
      "--model_type=bpe --minloglevel=2 --num_threads=1 --hard_vocab_limit=false "
      "--character_coverage=0.98 " +
          args,
      TrainingSentences(), &error);
  EXPECT_FALSE(model.empty()) << args << ": " << error;
  return model;
}

struct Variant {
  const char* name;
  const char* args;
};

class TrainedModelTest : public ::testing::TestWithParam<Variant> {};

TEST_P(TrainedModelTest, MatchesLibSentencePiece) {
  const std::string bytes = Train(GetParam().args);
  ASSERT_FALSE(bytes.empty());
  const ModelPair pair = LoadPair(bytes);
  ASSERT_NE(pair.orca, nullptr);
  ASSERT_NE(pair.sp, nullptr);
  ExpectSameVocabulary(pair);
  const CorpusStats stats =
      ExpectMatchesOnCorpus(pair, MakeCorpus(2024, 2000, CorpusOptions{}), GetParam().name);
  EXPECT_EQ(stats.compared, 2000);
  ExpectDecodesRandomIdsLikeReference(pair, 2, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, TrainedModelTest,
    ::testing::Values(
        // Default normalizer (nmt_nfkc character map), unknown characters without byte
        // fallback.
        Variant{"NfkcUnknowns", "--vocab_size=1000"},
        Variant{"NfkcCaseFoldBytes",
                "--vocab_size=1500 --normalization_rule_name=nmt_nfkc_cf --byte_fallback=true"},
        Variant{"IdentityKeepSpaces",
                "--vocab_size=1500 --normalization_rule_name=identity "
                "--remove_extra_whitespaces=false --byte_fallback=true"},
        Variant{"NoDummyPrefixUserDefined",
                "--vocab_size=1500 --add_dummy_prefix=false --split_by_whitespace=false "
                "--user_defined_symbols=<tool>,@@,\xE2\x96\x81the,\xE2\x96\x81\xE2\x96\x81 "
                "--control_symbols=<ctrl> --byte_fallback=true"},
        Variant{"WhitespaceAsSuffix",
                "--vocab_size=1500 --treat_whitespace_as_suffix=true --byte_fallback=true"}),
    [](const ::testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

// Edits a trained model through orca's parser and the test serializer; both sides load
// the edited bytes.
std::string Edited(const std::string& bytes,
                   const std::function<void(SentencePieceModelProto&)>& edit) {
  auto proto = ParseSentencePieceModelProto(bytes, "trained");
  EXPECT_TRUE(proto.ok()) << proto.status();
  if (!proto.ok()) return "";
  edit(*proto);
  return tokenizer_test::SerializeSentencePieceModel(*proto);
}

TEST(SentencePieceReferenceTest, EditedModelsMatchLibSentencePiece) {
  const std::string nfkc = Train("--vocab_size=1500 --byte_fallback=true");
  ASSERT_FALSE(nfkc.empty());
  using Type = SentencePieceModelProto::PieceType;
  const std::vector<std::pair<std::string, std::string>> models = {
      {"unused pieces", Edited(nfkc,
                               [](SentencePieceModelProto& p) {
                                 for (size_t i = 0; i < p.pieces.size(); i += 5) {
                                   if (p.pieces[i].type == Type::kNormal &&
                                       p.pieces[i].piece.size() > 1) {
                                     p.pieces[i].type = Type::kUnused;
                                   }
                                 }
                               })},
      {"no whitespace escaping",
       Edited(nfkc, [](SentencePieceModelProto& p) { p.normalizer.escape_whitespaces = false; })},
      {"denormalizer", Edited(nfkc,
                              [](SentencePieceModelProto& p) {
                                p.denormalizer = p.normalizer;
                                p.denormalizer->add_dummy_prefix = false;
                                p.denormalizer->remove_extra_whitespaces = false;
                                p.denormalizer->escape_whitespaces = false;
                              })},
      {"equal scores", Edited(nfkc,
                              [](SentencePieceModelProto& p) {
                                for (auto& piece : p.pieces) piece.score = 0;
                              })},
  };
  for (const auto& [name, bytes] : models) {
    const ModelPair pair = LoadPair(bytes);
    ASSERT_NE(pair.orca, nullptr) << name;
    ASSERT_NE(pair.sp, nullptr) << name;
    ExpectSameVocabulary(pair);
    ExpectMatchesOnCorpus(pair, MakeCorpus(31, 1000, CorpusOptions{}), name);
    ExpectDecodesRandomIdsLikeReference(pair, 3, name);
  }
}

}  // namespace
}  // namespace orca
