// ParseModelUri on the URIs the controller renders and on malformed or hostile text:
// every bad input is an InvalidArgument naming the text, never a crash.
#include "engine/model/pull/model_uri.h"

#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orca {
namespace {

using ::testing::HasSubstr;

TEST(ModelUriTest, ParsesHubRepositoryWithDefaultRevision) {
  auto u = ParseModelUri("hf://meta-llama/Llama-3.1-8B-Instruct");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->kind, ModelUri::Kind::kHub);
  EXPECT_EQ(u->repo, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(u->revision, "main");
}

TEST(ModelUriTest, ParsesHubRevisions) {
  for (const auto& [text, rev] : std::vector<std::pair<std::string, std::string>>{
           {"hf://karpathy/tinyllamas@v1.0", "v1.0"},
           {"hf://a/b@refs/pr/12", "refs/pr/12"},
           {"hf://Org_1/name.v2@0123456789abcdef0123456789abcdef01234567",
            "0123456789abcdef0123456789abcdef01234567"}}) {
    auto u = ParseModelUri(text);
    ASSERT_TRUE(u.ok()) << text << ": " << u.status();
    EXPECT_EQ(u->revision, rev);
  }
}

TEST(ModelUriTest, ParsesArchives) {
  for (const char* text : {"https://example.com/models/m.tar.gz", "https://h:8443/a/b.tgz",
                           "http://127.0.0.1:9/x.tar", "https://h/m.tar.gz?X-Amz-Signature=ab"}) {
    auto u = ParseModelUri(text);
    ASSERT_TRUE(u.ok()) << text << ": " << u.status();
    EXPECT_EQ(u->kind, ModelUri::Kind::kArchive);
    EXPECT_EQ(u->url, text);
  }
}

TEST(ModelUriTest, RejectsMalformedUrisWithTheReason) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"s3://bucket/model", "unknown scheme"},
      {"hf://", "ORG/NAME"},
      {"hf://justname", "ORG/NAME"},
      {"hf://a/b/c", "ORG/NAME"},
      {"hf:///b", "not a valid"},
      {"hf://a/", "not a valid"},
      {"hf://../etc", "not a valid"},
      {"hf://a/..", "not a valid"},
      {"hf://a/b..c", "not a valid"},
      {"hf://a/b--c", "not a valid"},
      {"hf://-a/b", "not a valid"},
      {"hf://a/b@", "revision"},
      {"hf://a/b@../main", "revision"},
      {"hf://a/b@/x", "revision"},
      {"hf://a/b@x//y", "revision"},
      {"hf://a/b@x y", "whitespace"},
      {"hf://a/b@x;rm", "revision"},
      {"hf://a/b@c@d", "revision"},
      {"hf://a b/c", "whitespace"},
      {"https://", "no host"},
      {"https:///m.tar", "no host"},
      {"https://host", "no path"},
      {"https://host/model.zip", ".tar"},
      {"https://host/model.tar.gz.sig", ".tar"},
      {"https://host/model?x=.tar", ".tar"},
      {"hf://a/b\n", "whitespace"},
      {std::string("hf://a/b\0c", 10), "whitespace"},
      {"hf://\xc3\xa9t\xc3\xa9/b", "non-ASCII"},
      {"hf://" + std::string(97, 'a') + "/b", "not a valid"},
      {std::string(3000, 'x'), "longer than"},
  };
  for (const auto& [text, why] : cases) {
    auto u = ParseModelUri(text);
    ASSERT_FALSE(u.ok()) << "accepted: " << text;
    EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(u.status().message(), HasSubstr(why)) << text;
    EXPECT_THAT(u.status().message(), HasSubstr("model URI")) << text;
  }
}

// Random edits of valid URIs: each result either parses to a URI whose parts are
// well-formed, or is refused with InvalidArgument. Sanitizer builds catch overruns.
TEST(ModelUriTest, SurvivesRandomMutations) {
  const std::vector<std::string> seeds = {"hf://org/name@refs/pr/1", "https://h:1/p/m.tar.gz",
                                          "http://127.0.0.1:8080/a.tgz"};
  const std::string alphabet = std::string("/@:.-_?#%\\ \x01\x7f\xff", 15) + "aZ09";
  std::mt19937 rng(15);
  for (int i = 0; i < 20000; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0:
          s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (pos < s.size()) s.erase(pos, 1);
          break;
        default:
          if (pos < s.size()) s[pos] = alphabet[rng() % alphabet.size()];
      }
    }
    auto u = ParseModelUri(s);
    if (!u.ok()) {
      EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument) << s;
      continue;
    }
    if (u->kind == ModelUri::Kind::kHub) {
      EXPECT_EQ(u->repo.find(".."), std::string::npos) << s;
      EXPECT_EQ(std::count(u->repo.begin(), u->repo.end(), '/'), 1) << s;
      EXPECT_EQ(u->revision.find(".."), std::string::npos) << s;
      EXPECT_FALSE(u->revision.empty()) << s;
    }
    for (unsigned char c : s) EXPECT_TRUE(c > 0x20 && c < 0x7f) << s;
  }
}

TEST(ModelUriTest, EncodesRevisionAsOnePathSegment) {
  EXPECT_EQ(EncodePathSegment("refs/pr/1"), "refs%2Fpr%2F1");
  EXPECT_EQ(EncodePathSegment("v1.0-rc_2~x"), "v1.0-rc_2~x");
  EXPECT_EQ(EncodePathSegment("a b?#"), "a%20b%3F%23");
}

}  // namespace
}  // namespace orca
