// Loading tokenizers from files: dispatch, configuration and malformed input.
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/tokenizer/test_support.h"

namespace orca {
namespace {

using ::testing::HasSubstr;
using tokenizer_test::TempDir;
using tokenizer_test::TinySentencePieceStyleJson;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// Returns the tiny tokenizer.json with `edit` applied.
template <typename Edit>
std::string EditedJson(Edit edit) {
  nlohmann::json j = nlohmann::json::parse(TinySentencePieceStyleJson());
  edit(j);
  return j.dump();
}

absl::Status LoadError(const TempDir& dir) {
  auto t = Tokenizer::FromDirectory(dir.path());
  return t.status();
}

TEST(TokenizerFilesTest, LoadsTinySentencePieceStyleTokenizer) {
  TempDir dir;
  dir.Write("tokenizer.json", TinySentencePieceStyleJson());
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->vocab_size(), 270);
  EXPECT_EQ((*t)->bos_id(), 1);  // from the post-processor template
  EXPECT_EQ((*t)->eos_id(), std::nullopt);
  // "abcd ab": ▁abcd ▁ab
  EXPECT_EQ((*t)->Encode("abcd ab", true), (std::vector<int32_t>{1, 269, 267}));
  EXPECT_EQ((*t)->Encode("abcd ab", false), (std::vector<int32_t>{269, 267}));
  // "é" is not in the vocabulary: byte fallback <0xC3> <0xA9>.
  EXPECT_EQ((*t)->Encode("é", false), (std::vector<int32_t>{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ((*t)->Decode((*t)->Encode(" ab é\tcd", true), true), " ab é\tcd");
  EXPECT_EQ((*t)->Decode({1, 265}, false), "<s> a");
  EXPECT_TRUE((*t)->IsSpecial(0));
  EXPECT_FALSE((*t)->IsSpecial(260));
  EXPECT_EQ((*t)->TokenToId("▁abcd"), 269);
  EXPECT_EQ((*t)->IdToToken(269), "▁abcd");
  EXPECT_EQ((*t)->IdToToken(100000), "");
  EXPECT_EQ((*t)->Decode({-5, 100000, 265}, true), "a");
  EXPECT_EQ((*t)->chat_template(), "");
}

TEST(TokenizerFilesTest, SpecialTokenTextMapsToIds) {
  TempDir dir;
  dir.Write("tokenizer.json", TinySentencePieceStyleJson());
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  // Each piece between special tokens is normalized on its own (gets its own ▁).
  EXPECT_EQ((*t)->Encode("a</s>b", false), (std::vector<int32_t>{265, 2, 259, 261}));
}

TEST(TokenizerFilesTest, ConfigOverridesTemplateAndReadsTokens) {
  TempDir dir;
  dir.Write("tokenizer.json", TinySentencePieceStyleJson());
  dir.Write("tokenizer_config.json", R"({"add_bos_token": false, "add_eos_token": true,
      "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
      "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->bos_id(), 1);
  EXPECT_EQ((*t)->eos_id(), 2);
  EXPECT_EQ((*t)->Encode("a", true), (std::vector<int32_t>{265, 2}));
  EXPECT_EQ((*t)->chat_template(), "D");
}

TEST(TokenizerFilesTest, ChatTemplateFromJinjaFile) {
  TempDir dir;
  dir.Write("tokenizer.json", TinySentencePieceStyleJson());
  dir.Write("chat_template.jinja", "{{ messages }}");
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->chat_template(), "{{ messages }}");
}

TEST(TokenizerFilesTest, MissingFilesNameTheFile) {
  TempDir dir;
  const absl::Status s = LoadError(dir);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(s), HasSubstr(dir.path() + "/tokenizer.json"));
  EXPECT_THAT(Message(s), HasSubstr("tokenizer.model"));
  EXPECT_FALSE(Tokenizer::FromDirectory(dir.path() + "/no/such/dir").ok());
}

TEST(TokenizerFilesTest, InvalidJsonNamesTheFile) {
  TempDir dir;
  dir.Write("tokenizer.json", "{\"model\": ");
  const absl::Status s = LoadError(dir);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr(dir.path() + "/tokenizer.json"));
  EXPECT_THAT(Message(s), HasSubstr("invalid JSON"));
}

TEST(TokenizerFilesTest, InvalidConfigNamesTheFile) {
  TempDir dir;
  dir.Write("tokenizer.json", TinySentencePieceStyleJson());
  dir.Write("tokenizer_config.json", "[1, 2");
  EXPECT_THAT(Message(LoadError(dir)), HasSubstr("tokenizer_config.json: invalid JSON"));
  dir.Write("tokenizer_config.json", R"({"bos_token": 7})");
  EXPECT_THAT(Message(LoadError(dir)), HasSubstr("tokenizer_config.json: \"bos_token\""));
  dir.Write("tokenizer_config.json", R"({"add_bos_token": "yes"})");
  EXPECT_THAT(Message(LoadError(dir)), HasSubstr("\"add_bos_token\" is not a bool"));
}

struct MalformedCase {
  const char* name;
  std::string json;
  absl::StatusCode code;
  const char* expected;  // substring of the message
};

TEST(TokenizerFilesTest, MalformedTokenizerJsonIsRejected) {
  using nlohmann::json;
  const std::vector<MalformedCase> cases = {
      {"not an object", "[1]", absl::StatusCode::kInvalidArgument, "not an object"},
      {"no model", R"({"added_tokens": []})", absl::StatusCode::kInvalidArgument,
       "\"model\" is missing"},
      {"unigram", EditedJson([](json& j) { j["model"]["type"] = "Unigram"; }),
       absl::StatusCode::kUnimplemented, "model type \"Unigram\""},
      {"wordpiece", EditedJson([](json& j) { j["model"]["type"] = "WordPiece"; }),
       absl::StatusCode::kUnimplemented, "WordPiece"},
      {"vocab not object", EditedJson([](json& j) { j["model"]["vocab"] = json::array(); }),
       absl::StatusCode::kInvalidArgument, "model.vocab"},
      {"negative id", EditedJson([](json& j) { j["model"]["vocab"]["zz"] = -3; }),
       absl::StatusCode::kInvalidArgument, "\"zz\"] is not a valid id"},
      {"sparse ids", EditedJson([](json& j) { j["model"]["vocab"]["zz"] = 100000000; }),
       absl::StatusCode::kInvalidArgument, "ids up to 100000000"},
      {"negative template id",
       EditedJson([](json& j) { j["post_processor"]["special_tokens"]["<s>"]["ids"] = {-1}; }),
       absl::StatusCode::kInvalidArgument, "post_processor: invalid token id"},
      {"merge of unknown token", EditedJson([](json& j) { j["model"]["merges"].push_back("a q"); }),
       absl::StatusCode::kInvalidArgument, "references token \"q\" missing from model.vocab"},
      {"merge result unknown", EditedJson([](json& j) { j["model"]["merges"].push_back("b c"); }),
       absl::StatusCode::kInvalidArgument, "token \"bc\""},
      {"merge without space", EditedJson([](json& j) { j["model"]["merges"].push_back("abc"); }),
       absl::StatusCode::kInvalidArgument, "model.merges[5]"},
      {"merge of wrong type", EditedJson([](json& j) { j["model"]["merges"].push_back(3); }),
       absl::StatusCode::kInvalidArgument, "model.merges[5]"},
      {"merges not array", EditedJson([](json& j) { j["model"]["merges"] = "a b"; }),
       absl::StatusCode::kInvalidArgument, "model.merges is not an array"},
      {"unknown normalizer", EditedJson([](json& j) {
         j["normalizer"] = {{"type", "NFKC"}};
       }),
       absl::StatusCode::kUnimplemented, "normalizer type \"NFKC\""},
      {"unknown pre-tokenizer", EditedJson([](json& j) {
         j["pre_tokenizer"] = {{"type", "Whitespace"}};
       }),
       absl::StatusCode::kUnimplemented, "pre_tokenizer type \"Whitespace\""},
      {"unknown split regex", EditedJson([](json& j) {
         j["pre_tokenizer"] = {{"type", "Split"},
                               {"pattern", {{"Regex", "\\p{L}+|\\s+"}}},
                               {"behavior", "Isolated"},
                               {"invert", false}};
       }),
       absl::StatusCode::kUnimplemented, "Split regex is not one orca knows"},
      {"unknown decoder", EditedJson([](json& j) {
         j["decoder"] = {{"type", "WordPiece"}};
       }),
       absl::StatusCode::kUnimplemented, "decoder type \"WordPiece\""},
      {"decoder without type", EditedJson([](json& j) { j["decoder"] = json::array(); }),
       absl::StatusCode::kInvalidArgument, "decoder: expected an object"},
      {"unknown post-processor", EditedJson([](json& j) {
         j["post_processor"] = {{"type", "Magic"}};
       }),
       absl::StatusCode::kUnimplemented, "post_processor type \"Magic\""},
      {"template with unknown special",
       EditedJson([](json& j) { j["post_processor"]["special_tokens"] = json::object(); }),
       absl::StatusCode::kInvalidArgument, "special token \"<s>\""},
      {"added token without id", EditedJson([](json& j) {
         j["added_tokens"].push_back({{"content", "x"}});
       }),
       absl::StatusCode::kInvalidArgument, "added_tokens[3]"},
      {"continuing subword prefix",
       EditedJson([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; }),
       absl::StatusCode::kUnimplemented, "continuing_subword_prefix"},
      {"byte_fallback of wrong type",
       EditedJson([](json& j) { j["model"]["byte_fallback"] = "yes"; }),
       absl::StatusCode::kInvalidArgument, "model.byte_fallback is not a bool"},
  };
  for (const MalformedCase& c : cases) {
    TempDir dir;
    dir.Write("tokenizer.json", c.json);
    const absl::Status s = LoadError(dir);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
    EXPECT_THAT(Message(s), HasSubstr(dir.path() + "/tokenizer.json")) << c.name;
    EXPECT_THAT(Message(s), HasSubstr(c.expected)) << c.name;
  }
}

TEST(TokenizerFilesTest, GarbageSentencePieceModelNamesTheFile) {
  TempDir dir;
  dir.Write("tokenizer.model", "this is not a protobuf");
  const absl::Status s = LoadError(dir);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(s), HasSubstr(dir.path() + "/tokenizer.model"));
}

TEST(TokenizerFilesTest, AddedTokenStripFlags) {
  TempDir dir;
  dir.Write("tokenizer.json", EditedJson([](nlohmann::json& j) {
              j["added_tokens"].push_back({{"id", 270},
                                           {"content", "[X]"},
                                           {"lstrip", true},
                                           {"rstrip", true},
                                           {"special", false}});
              j["added_tokens"].push_back({{"id", 271}, {"content", "[X]]"}, {"special", true}});
              j["added_tokens"].push_back(
                  {{"id", 272}, {"content", "cc"}, {"single_word", true}, {"special", false}});
            }));
  auto t = Tokenizer::FromDirectory(dir.path());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->vocab_size(), 273);
  // lstrip/rstrip swallow the spaces around [X].
  EXPECT_EQ((*t)->Encode("a  [X]  b", false), (std::vector<int32_t>{265, 270, 259, 261}));
  // Longest match wins: [X]] rather than [X].
  EXPECT_EQ((*t)->Encode("[X]]", false), (std::vector<int32_t>{271}));
  // single_word: "cc" alone matches, inside "acc" it does not.
  EXPECT_EQ((*t)->Encode("cc", false), (std::vector<int32_t>{272}));
  EXPECT_EQ((*t)->Encode("acc", false), (std::vector<int32_t>{265, 262, 262}));
  EXPECT_FALSE((*t)->IsSpecial(270));
  EXPECT_TRUE((*t)->IsSpecial(271));
  EXPECT_EQ((*t)->Decode({270, 271}, true), "[X]");
}

}  // namespace
}  // namespace orca
