#include "controller/api/yaml.h"

#include <gtest/gtest.h>

namespace orca::controller {
namespace {

using nlohmann::json;

TEST(YamlTest, TypesPlainScalarsOnly) {
  auto docs = ParseYamlDocuments(
      "a: 1\nb: \"1\"\nc: true\nd: 'true'\ne: ~\nf: 1.5\ng: text\nh: 080x\n", "t");
  ASSERT_TRUE(docs.ok()) << docs.status();
  const json& d = (*docs)[0];
  EXPECT_EQ(d["a"], 1);
  EXPECT_EQ(d["b"], "1");
  EXPECT_EQ(d["c"], true);
  EXPECT_EQ(d["d"], "true");
  EXPECT_TRUE(d["e"].is_null());
  EXPECT_EQ(d["f"], 1.5);
  EXPECT_EQ(d["g"], "text");
  EXPECT_EQ(d["h"], "080x");
}

TEST(YamlTest, MalformedYamlNamesSourceAndLine) {
  auto docs = ParseYamlDocuments("a: [1, 2\nb: 3\n", "cr.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("cr.yaml: malformed YAML at line"), std::string::npos);
}

TEST(YamlTest, RoundTripsTrickyValues) {
  json v = {
      {"labels", {{"serving.orca.dev/group", "0"}, {"x", "yes"}, {"y", "1.0"}, {"z", ""}}},
      {"multi", "line one\nline two\n"},
      {"list", json::array({json{{"a", 1}, {"b", json::array({"x"})}}, "plain", json::array({1})})},
      {"empty", json::object()},
      {"none", json::array()},
      {"colon", "a: b"},
      {"num", 0.9},
      {"neg", -3}};
  std::string text = ToYaml(v);
  auto back = ParseYamlDocuments(text, "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ((*back)[0], v) << text;
}

TEST(YamlTest, MultipleDocuments) {
  auto docs = ParseYamlDocuments("---\na: 1\n---\n---\nb: 2\n", "t");
  ASSERT_TRUE(docs.ok());
  EXPECT_EQ(docs->size(), 2u);
  EXPECT_EQ(ToYamlDocuments(*docs), "---\na: 1\n---\nb: 2\n");
}

}  // namespace
}  // namespace orca::controller
