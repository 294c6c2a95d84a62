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

// Found by tests/fuzz: manifests that are not UTF-8, or hold a NUL (which yaml-cpp
// mangles into bytes that are not UTF-8), were taken, and `orca-controller render` then
// died on an uncaught nlohmann::json exception writing them; a stray ',' after a
// document made YAML::LoadAll loop, allocating, forever (yaml-cpp 0.7,
// jbeder/yaml-cpp#1040). All are malformed YAML, refused naming the line.
TEST(YamlTest, RefusesTextThatIsNotPrintableUtf8) {
  using std::string_literals::operator""s;
  for (const std::string& text : {
           std::string("kind: InferenceDeployment\nmetadata:\n  name: a\xff\n"),
           "kind: InferenceDeployment\ndata:\n  engine.yaml: |\n    api\0_key: 1\n"s,
           std::string("a: 1\nb: 2\n  c: \x01\n"),
           std::string("a: 1\nb: \xC2\x9B\n c\n"),  // C1 control (CSI)
       }) {
    auto docs = ParseYamlDocuments(text, "cr.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(docs.status().message().find("cr.yaml: line "), std::string::npos) << docs.status();
    EXPECT_NE(docs.status().message().find("not UTF-8 or a control character"), std::string::npos);
  }
  auto nul = ParseYamlDocuments("a: |\n  x\0y\n"s, "cr.yaml");
  ASSERT_FALSE(nul.ok());
  EXPECT_NE(nul.status().message().find("cr.yaml: line 2:"), std::string::npos) << nul.status();
  // Printable UTF-8 is taken, and escapes spell the rest.
  auto text =
      ParseYamlDocuments("name: caf\xC3\xA9 \xE2\x9C\x93\ttab\nnul: \"a\\0b\"\n", "cr.yaml");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ((*text)[0]["name"], "caf\xC3\xA9 \xE2\x9C\x93\ttab");
  EXPECT_EQ((*text)[0]["nul"], "a\0b"s);
}

TEST(YamlTest, StrayTokenAfterADocumentIsAnErrorNotAHang) {
  for (const char* text : {",", "{{}:{}},", "a: 1\n---\n[b],\n", "{a: 1}\n,\n"}) {
    auto docs = ParseYamlDocuments(text, "cr.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_NE(docs.status().message().find("cr.yaml: malformed YAML at line"), std::string::npos)
        << docs.status();
  }
  // Empty documents still parse (and are skipped).
  auto docs = ParseYamlDocuments("---\n---\n...\n---\nb: 2\n", "cr.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ(docs->size(), 1u);
}

// A long scalar, such as a 200 kB certificate bundle in an env value, made
// `orca-controller render` die of a stack overflow: std::regex (libstdc++) recursed once
// per character while typing the scalar and again while deciding whether to quote it.
TEST(YamlTest, LongScalarsParseAndWrite) {
  const std::string digits(1 << 20, '7');
  const std::string base64 = [] {
    std::string s;
    for (int i = 0; i < 50000; ++i) s += "QUJD";
    return s;
  }();
  auto docs =
      ParseYamlDocuments("a: " + digits + "x\nb: " + digits + "\nc: " + base64 + "\n", "big");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ((*docs)[0]["a"], digits + "x");
  EXPECT_EQ((*docs)[0]["b"], digits);  // beyond int64: kept as the string it is
  EXPECT_EQ((*docs)[0]["c"], base64);
  const json written = {{"value", base64}, {"number", digits}};
  const std::string text = ToYaml(written);
  EXPECT_EQ(text, "number: " + digits + "\nvalue: " + base64 + "\n");  // both stay strings
  auto back = ParseYamlDocuments(text, "big");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)[0], written);
}

// YAML allows implicit keys of up to 1024 characters: a longer key was written as one
// and did not read back (found by tests/fuzz/manifest_yaml_fuzzer).
TEST(YamlTest, LongKeysAreWrittenAsExplicitKeys) {
  const std::string key(3000, 'k'), quoted_key = "a: " + std::string(1100, 'q');
  const json v = {{key, 1},
                  {"list", json::array({json{{key, json{{"x", "y"}}}}})},
                  {quoted_key, json::array({1, 2})}};
  const std::string text = ToYaml(v);
  EXPECT_NE(text.find("? " + key + "\n:"), std::string::npos) << text.substr(0, 200);
  auto back = ParseYamlDocuments(text, "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)[0], v);
}

// A document that is a multi-line string was written as a block scalar with its lines at
// column 0, which reads back as an empty document and a second one (found by
// tests/fuzz/manifest_yaml_fuzzer).
TEST(YamlTest, TopLevelMultiLineStringsRoundTrip) {
  const std::vector<json> docs = {"sgePu:*\n", "simagoM", "two\nlines\n"};
  const std::string text = ToYamlDocuments(docs);
  auto back = ParseYamlDocuments(text, "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, docs) << text;
}

// Carriage returns written raw into a literal block read back as line breaks, and DEL,
// C1 controls or U+FFFE written raw into a quoted string are text YAML may not hold
// (found by tests/fuzz/manifest_yaml_fuzzer): the writer escapes them.
TEST(YamlTest, ControlCharactersAreEscapedWhenWritten) {
  const json v = {{"crlf", "a: 1\r\r\nb: 2\n"},  {"del", "x\x7Fy"},
                  {"nel", "line\xC2\x85next\n"}, {"c0", "bell\x07 nul\x01"},
                  {"nonchar", "\xEF\xBF\xBE"},   {"key\rwith\x7F", "v"}};
  const std::string text = ToYaml(v);
  auto back = ParseYamlDocuments(text, "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ((*back)[0], v) << text;
}

// A plain "..." at the start of a line ends a document: a top-level key or document that
// starts with it was written plain and read back as something else (found by
// tests/fuzz/manifest_yaml_fuzzer in CI).
TEST(YamlTest, DocumentEndMarkersAreQuotedWhenWritten) {
  const std::vector<json> docs = {json{{"... ingress", json{{"className", "nginx"}}}}, "...",
                                  "... x", json{{"a", "...b"}}};
  const std::string text = ToYamlDocuments(docs);
  auto back = ParseYamlDocuments(text, "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
  EXPECT_EQ(*back, docs) << text;
}

}  // namespace
}  // namespace orca::controller
