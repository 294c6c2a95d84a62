// The hub's JSON answers (shaped as huggingface.co's /api/models/{repo}/tree and
// /revision answer them) and the checkpoint file selection; malformed answers give
// clear errors, never a crash or an unsafe path.
#include "engine/model/pull/hub_listing.h"

#include <random>
#include <string>

#include "engine/model/pull/safe_path.h"
#include "engine/model/pull/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orca {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A tree answer as the hub gives it for a small repository (fields as in the
// @huggingface/hub ApiIndexTreeEntry type).
constexpr char kTree[] = R"([
  {"type":"file","oid":"a6344aac8c09253b3b630fb776ae94478aa0275b","size":1519,"path":".gitattributes"},
  {"type":"file","oid":"2c4d9e4e0b8f0e4ffb1a3a0a1c8d5b6f7e8d9c0a","size":438,"path":"config.json"},
  {"type":"file","oid":"9a3ab3f6c9b3e2c1d0f1e2d3c4b5a6978877665a","size":1044992,"path":"model.safetensors",
   "lfs":{"oid":"3F2C9B0E3B1A7E3F3A2C0F4B9A1E7D6C5B4A39281706F5E4D3C2B1A098765432","size":1044992,"pointerSize":135}},
  {"type":"file","oid":"1111111111111111111111111111111111111111","size":2000000,"path":"pytorch_model.bin",
   "lfs":{"oid":"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff","size":2000000,"pointerSize":134}},
  {"type":"file","oid":"2222222222222222222222222222222222222222","size":14787,"path":"tokenizer.json"},
  {"type":"file","oid":"3333333333333333333333333333333333333333","size":7522,"path":"tokenizer.model"},
  {"type":"file","oid":"4444444444444444444444444444444444444444","size":2450,"path":"README.md"},
  {"type":"directory","oid":"5555555555555555555555555555555555555555","size":0,"path":"images"},
  {"type":"file","oid":"6666666666666666666666666666666666666666","size":9000,"path":"images/logo.png"},
  {"type":"directory","oid":"7777777777777777777777777777777777777777","size":0,"path":"original"},
  {"type":"file","oid":"8888888888888888888888888888888888888888","size":500,"path":"original/params.json"}
])";

std::vector<std::string> Paths(const std::vector<HubFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(f.path);
  return out;
}

TEST(HubListingTest, ParsesTreeEntries) {
  auto files = ParseHubTree(kTree);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 9u);  // the two directories dropped
  const HubFile& st = (*files)[2];
  EXPECT_EQ(st.path, "model.safetensors");
  EXPECT_EQ(st.size, 1044992);
  EXPECT_EQ(st.sha256, "3f2c9b0e3b1a7e3f3a2c0f4b9a1e7d6c5b4a39281706f5e4d3c2b1a098765432");
  EXPECT_EQ((*files)[1].sha256, "");  // not LFS: the hub publishes only a git oid
}

TEST(HubListingTest, DefaultSelectionIsTheCheckpoint) {
  auto files = ParseHubTree(kTree);
  ASSERT_TRUE(files.ok());
  EXPECT_THAT(Paths(SelectCheckpointFiles(*files, {})),
              ElementsAre("config.json", "model.safetensors", "tokenizer.json", "tokenizer.model"));
}

TEST(HubListingTest, BinWeightsOnlyWithoutSafetensors) {
  std::vector<HubFile> files = {
      {"config.json", 1, ""}, {"pytorch_model.bin", 2, ""}, {"training_args.bin", 3, ""}};
  EXPECT_THAT(Paths(SelectCheckpointFiles(files, {})),
              ElementsAre("config.json", "pytorch_model.bin", "training_args.bin"));
  files.push_back({"model-00001-of-00002.safetensors", 4, ""});
  EXPECT_THAT(Paths(SelectCheckpointFiles(files, {})),
              ElementsAre("config.json", "model-00001-of-00002.safetensors"));
}

TEST(HubListingTest, IncludeAndExcludeOverrideTheDefault) {
  auto files = ParseHubTree(kTree);
  ASSERT_TRUE(files.ok());
  FileFilter f{.include = SplitGlobs("original/*, *.md"), .exclude = {}};
  EXPECT_THAT(Paths(SelectCheckpointFiles(*files, f)),
              ElementsAre("README.md", "original/params.json"));
  f = FileFilter{.include = {}, .exclude = SplitGlobs("tokenizer.*")};
  EXPECT_THAT(Paths(SelectCheckpointFiles(*files, f)),
              ElementsAre("config.json", "model.safetensors"));
}

TEST(HubListingTest, ParsesRevision) {
  auto sha = ParseHubRevision(
      R"({"_id":"x","id":"a/b","sha":"0123456789ABCDEF0123456789abcdef01234567","siblings":[]})");
  ASSERT_TRUE(sha.ok()) << sha.status();
  EXPECT_EQ(*sha, "0123456789abcdef0123456789abcdef01234567");
}

TEST(HubListingTest, RejectsMalformedAnswersNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> trees = {
      {"", "not JSON"},
      {"{", "not JSON"},
      {R"({"error":"Repository not found"})", "not an array"},
      {"[1]", "entry 0: not an object"},
      {R"([{"path":"a"}])", "\"type\""},
      {R"([{"type":"file"}])", "\"path\""},
      {R"([{"type":"file","path":"a"}])", "size"},
      {R"([{"type":"file","path":"a","size":-1}])", "size"},
      {R"([{"type":"file","path":"a","size":"12"}])", "size"},
      {R"([{"type":"file","path":"a","size":1.5}])", "size"},
      {R"([{"type":"symlink","path":"a","size":1}])", "unknown type"},
      {R"([{"type":"file","path":"../../etc/passwd","size":1}])", "unsafe path"},
      {R"([{"type":"file","path":"/etc/passwd","size":1}])", "absolute"},
      {R"([{"type":"file","path":"a//b","size":1}])", "empty component"},
      {R"([{"type":"file","path":"a\\..\\b","size":1}])", "backslash"},
      {R"([{"type":"file","path":"","size":1}])", "empty"},
      {R"([{"type":"file","path":"a","size":1,"lfs":{"size":1}}])", "oid"},
      {R"([{"type":"file","path":"a","size":1,"lfs":{"oid":"abc","size":1}}])", "oid"},
      {R"([{"type":"file","path":"a","size":1,"lfs":"x"}])", "oid"},
      {R"([{"type":"file","path":"a","size":1,"lfs":{"oid":")" + std::string(64, 'a') +
           R"(","size":2}}])",
       "lfs.size"},
  };
  for (const auto& [json, why] : trees) {
    auto r = ParseHubTree(json);
    ASSERT_FALSE(r.ok()) << "accepted: " << json;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(why)) << json;
  }
  for (const char* rev : {"", "[]", R"({"sha":1})", R"({"sha":"main"})", R"({"id":"a/b"})",
                          R"({"sha":"0123456789abcdef0123456789abcdef0123456z"})"}) {
    auto r = ParseHubRevision(rev);
    EXPECT_FALSE(r.ok()) << rev;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << rev;
  }
}

// Every prefix and random byte edits of a real answer: parsed or refused, and every
// path that comes out is safe to join under a directory.
TEST(HubListingTest, SurvivesTruncationAndRandomEdits) {
  const std::string tree = kTree;
  for (size_t n = 0; n < tree.size(); ++n) {
    auto r = ParseHubTree(tree.substr(0, n));
    EXPECT_FALSE(r.ok()) << n;
  }
  std::mt19937 rng(4);
  const std::string alphabet = "\"{}[],:./\\-0123456789aefl \x00\xff";
  for (int i = 0; i < 5000; ++i) {
    std::string s = tree;
    for (int e = 0; e < 3; ++e) s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    auto r = ParseHubTree(s);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    for (const auto& f : *r) {
      EXPECT_TRUE(CheckRelativePath(f.path).ok()) << f.path;
      EXPECT_GE(f.size, 0);
      EXPECT_TRUE(f.sha256.empty() || IsSha256Hex(f.sha256));
    }
  }
}

TEST(SafePathTest, RefusesEscapes) {
  for (const char* p : {"a", "a/b.json", "a.b/c..d", "...", "x/.hidden"}) {
    EXPECT_TRUE(CheckRelativePath(p).ok()) << p;
  }
  for (const char* p : {"", "/a", "..", "../a", "a/../../b", "a/./b", "./a", "a/", "a//b"}) {
    EXPECT_FALSE(CheckRelativePath(p).ok()) << p;
  }
  EXPECT_TRUE(CheckLinkTarget("a/b/link", "../c").ok());
  EXPECT_TRUE(CheckLinkTarget("a/link", "../c").ok());
  EXPECT_TRUE(CheckLinkTarget("link", "sub/../c").ok());
  EXPECT_FALSE(CheckLinkTarget("link", "../c").ok());
  EXPECT_FALSE(CheckLinkTarget("a/link", "../../c").ok());
  EXPECT_FALSE(CheckLinkTarget("a/link", "x/../../../c").ok());
  EXPECT_FALSE(CheckLinkTarget("link", "/etc/passwd").ok());
  EXPECT_FALSE(CheckLinkTarget("link", "").ok());
}

// FIPS 180-2's example vectors (independent of OpenSSL).
TEST(Sha256Test, MatchesPublishedVectors) {
  EXPECT_EQ(Sha256OfString("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256OfString("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256OfString(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace orca
