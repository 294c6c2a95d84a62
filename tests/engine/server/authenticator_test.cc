// Authenticator: the one API-key check of the HTTP and gRPC transports.
#include "engine/server/authenticator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

TEST(ConstantTimeEqualsTest, EqualOnlyForTheSameBytes) {
  EXPECT_TRUE(ConstantTimeEquals("sekret-key", "sekret-key"));
  EXPECT_FALSE(ConstantTimeEquals("Sekret-key", "sekret-key"));  // first byte
  EXPECT_FALSE(ConstantTimeEquals("sekret-keY", "sekret-key"));  // last byte
  EXPECT_FALSE(ConstantTimeEquals("sekret", "sekret-key"));      // a prefix
  EXPECT_FALSE(ConstantTimeEquals("sekret-key-and-more", "sekret-key"));
  // The secret repeated: the comparison wraps around the secret, the lengths differ.
  EXPECT_FALSE(ConstantTimeEquals("sekret-keysekret-key", "sekret-key"));
  EXPECT_FALSE(ConstantTimeEquals("", "sekret-key"));
  EXPECT_FALSE(ConstantTimeEquals("x", ""));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  const std::string with_nul("ab\0cd", 5);
  EXPECT_TRUE(ConstantTimeEquals(with_nul, with_nul));
  EXPECT_FALSE(ConstantTimeEquals(std::string("ab\0ce", 5), with_nul));
}

TEST(AuthenticatorTest, WithoutAKeyEverythingPasses) {
  Authenticator off("");
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(off.Check("").ok());
  EXPECT_TRUE(off.Check("Bearer anything").ok());
}

TEST(AuthenticatorTest, AcceptsOnlyTheBearerKey) {
  Authenticator auth("sekret-key");
  EXPECT_TRUE(auth.enabled());
  EXPECT_TRUE(auth.Check("Bearer sekret-key").ok());
  EXPECT_TRUE(auth.Check("bearer sekret-key").ok());   // the scheme is case-insensitive
  EXPECT_TRUE(auth.Check("Bearer sekret-key ").ok());  // surrounding whitespace
  for (const char* wrong :
       {"", "Bearer", "Bearer ", "Bearer not-it", "Bearer sekret", "Bearer sekret-key2",
        "sekret-key", "Basic sekret-key", "Bearer SEKRET-KEY"}) {
    absl::Status s = auth.Check(wrong);
    EXPECT_TRUE(absl::IsUnauthenticated(s)) << "'" << wrong << "': " << s;
  }
}

// Error messages reach clients and logs: they name neither the key nor what was sent.
TEST(AuthenticatorTest, ErrorsNeverContainTheKeyOrTheGuess) {
  Authenticator auth("sekret-key");
  for (const char* sent : {"", "Bearer sekret-kez", "Token sekret-key", "Bearer guess-123"}) {
    absl::Status s = auth.Check(sent);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message().find("sekret"), std::string::npos) << s;
    EXPECT_EQ(s.message().find("guess"), std::string::npos) << s;
    EXPECT_FALSE(s.message().empty());
  }
}

// The control plane's instance says what it checks; its messages leak nothing either.
TEST(AuthenticatorTest, NamesWhatItChecks) {
  Authenticator auth("0123abcd", "control-plane token");
  for (const char* sent : {"", "Bearer 0123abce", "Basic 0123abcd"}) {
    absl::Status s = auth.Check(sent);
    ASSERT_TRUE(absl::IsUnauthenticated(s)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "control-plane token")) << s;
    EXPECT_FALSE(absl::StrContains(s.message(), "API key")) << s;
    EXPECT_FALSE(absl::StrContains(s.message(), "0123")) << s;
  }
  EXPECT_TRUE(auth.Check("Bearer 0123abcd").ok());
}

TEST(ReadSecretFileTest, StripsTheNewlineAndNamesTheSettingNeverTheContent) {
  testing::TempDir tmp;
  std::ofstream(tmp.file("token")) << "  s3cret-value\n";
  auto secret = ReadSecretFile(tmp.file("token"), "parallelism.control_token_file");
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ(*secret, "s3cret-value");

  std::ofstream(tmp.file("blank")) << " \n\t\n";
  auto blank = ReadSecretFile(tmp.file("blank"), "parallelism.control_token_file");
  EXPECT_TRUE(absl::IsInvalidArgument(blank.status())) << blank.status();
  EXPECT_TRUE(absl::StrContains(blank.status().message(), "parallelism.control_token_file"));
  EXPECT_TRUE(absl::StrContains(blank.status().message(), tmp.file("blank")));

  auto missing = ReadSecretFile(tmp.file("absent"), "server.api_key_file");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "server.api_key_file"));
  EXPECT_TRUE(absl::StrContains(missing.status().message(), tmp.file("absent")));
}

}  // namespace
}  // namespace orca
