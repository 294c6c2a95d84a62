// JsonSchemaToRegex against python3-jsonschema (an independent validator): for a corpus
// of schemas, random walks through each compiled automaton (every byte it allows, so
// everything the pattern matches can come up) must be JSON the validator accepts, and
// known-invalid instances must not match. Also the refusals, which name the keyword.
#include "engine/guided/json_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "engine/guided/byte_dfa.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using json = nlohmann::ordered_json;

// Schemas as a JSON list, each with instances that must NOT match.
const char* kCorpus = R"json([
 [{"type": "string"}, [1, null]],
 [{"type": "integer"}, [1.5, "1"]],
 [{"type": "integer", "minimum": -20, "maximum": 345}, [-21, 346, 1000]],
 [{"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}, [0, 100]],
 [{"type": "integer", "minimum": 1000}, [999, -5]],
 [{"type": "integer", "maximum": -7}, [-6, 0, 12]],
 [{"type": "number"}, ["x"]],
 [{"type": "boolean"}, [0]],
 [{"type": "null"}, [false]],
 [{"enum": ["red", "green", 3, null]}, ["blue", 4]],
 [{"const": {"a": [1, 2]}}, [{"a": [1]}]],
 [{"type": "string", "minLength": 2, "maxLength": 5}, ["a", "abcdef"]],
 [{"type": "string", "pattern": "^[A-Z]{2}[0-9]{3}$"}, ["AB12", "ab123"]],
 [{"type": "string", "format": "date"}, ["2024-13-01"]],
 [{"type": "string", "format": "date-time"}, ["2024-01-01 10:00:00"]],
 [{"type": "string", "format": "uuid"}, ["1234"]],
 [{"type": "string", "format": "email"}, ["nobody"]],
 [{"type": "string", "format": "ipv4"}, ["256.1.1.1"]],
 [{"type": "array", "items": {"type": "integer"}}, [[1, "a"]]],
 [{"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3}, [[true], [true, true, true, true]]],
 [{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"], "additionalProperties": false}, [{"name": "a"}, {"age": 1, "name": "a", "x": 1}]],
 [{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}}, [{"a": "x"}]],
 [{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]}, [{"a": 1}]],
 [{"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2}, "id": {"type": "string", "format": "uuid"}}, "required": ["id"]}, [{"tags": ["x"]}]],
 [{"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]}, [true, "abcd"]],
 [{"type": ["integer", "null"]}, ["a"]],
 [{"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}}, "type": "array", "items": {"$ref": "#/$defs/point"}, "maxItems": 3}, [[{"x": 1}]]],
 [{"type": "object", "properties": {"user": {"type": "object", "properties": {"first": {"type": "string", "maxLength": 8}, "last": {"type": "string", "maxLength": 8}}, "required": ["first"]}, "score": {"type": "number"}}, "required": ["user", "score"]}, [{"user": {}, "score": 1}]],
 [{"type": "object", "properties": {"when": {"type": "string", "format": "time"}, "level": {"enum": ["low", "high"]}}, "required": ["when", "level"]}, [{"when": "25:00:00Z", "level": "low"}]],
 [{"allOf": [{"type": "integer", "minimum": 0, "maximum": 9}]}, [10]],
 [{}, []],
 [{"type": "object"}, [[]]]
])json";

std::string RandomWalk(const ByteDfa& dfa, std::mt19937& rng, bool* ok) {
  std::string out;
  int32_t s = dfa.start();
  while (out.size() < 600) {
    std::vector<int> bytes;
    for (int b = 0; b < 256; ++b) {
      if (dfa.Next(s, static_cast<uint8_t>(b)) != ByteDfa::kDead) bytes.push_back(b);
    }
    if (dfa.accepting(s) && (bytes.empty() || rng() % 4 == 0)) {
      *ok = true;
      return out;
    }
    if (bytes.empty()) break;
    // Structure first: prefer the bytes JSON builds with, so walks end.
    const int b = bytes[rng() % bytes.size()];
    out.push_back(static_cast<char>(b));
    s = dfa.Next(s, static_cast<uint8_t>(b));
  }
  *ok = false;
  return out;
}

TEST(JsonSchemaTest, EveryMatchValidatesAndInvalidInstancesDoNotMatch) {
  testing::TempDir tmp;
  const json corpus = json::parse(kCorpus);
  std::mt19937 rng(11);
  json cases = json::array();
  int walks = 0;
  for (size_t c = 0; c < corpus.size(); ++c) {
    const json& schema = corpus[c][0];
    absl::StatusOr<std::string> pattern = JsonSchemaToRegex(schema);
    ASSERT_TRUE(pattern.ok()) << schema.dump() << ": " << pattern.status();
    absl::StatusOr<ByteDfa> dfa = ByteDfa::Compile(*pattern);
    ASSERT_TRUE(dfa.ok()) << schema.dump() << ": " << dfa.status();
    json docs = json::array();
    for (int i = 0; i < 60; ++i) {
      bool ok = false;
      std::string doc = RandomWalk(*dfa, rng, &ok);
      if (ok) docs.push_back(doc);
    }
    walks += static_cast<int>(docs.size());
    EXPECT_GE(docs.size(), 20u) << schema.dump() << ": walks rarely end";
    for (const json& bad : corpus[c][1]) {
      EXPECT_FALSE(dfa->Matches(bad.dump())) << schema.dump() << " matched " << bad.dump();
    }
    cases.push_back({{"schema", schema}, {"docs", docs}});
  }
  {
    std::ofstream f(tmp.file("cases.json"));
    f << cases.dump();
  }
  {
    std::ofstream f(tmp.file("check.py"));
    f << "import json, sys, jsonschema\n"
         "bad = []\n"
         "for c in json.load(open(sys.argv[1])):\n"
         "    v = jsonschema.Draft202012Validator(c['schema'],\n"
         "        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)\n"
         "    for d in c['docs']:\n"
         "        try:\n"
         "            v.validate(json.loads(d))\n"
         "        except Exception as e:\n"
         "            bad.append([c['schema'], d, str(e)[:200]])\n"
         "print(json.dumps(bad))\n";
  }
  std::string output;
  const int rc = testing::RunCommand(
      "/usr/bin/python3 " + tmp.file("check.py") + " " + tmp.file("cases.json") + " 2>&1", &output);
  if (rc != 0 && output.find("No module named 'jsonschema'") != std::string::npos) {
    if (testing::InCi()) FAIL() << "python3-jsonschema is missing in CI";
    GTEST_SKIP() << "python3-jsonschema not installed";
  }
  ASSERT_EQ(rc, 0) << output;
  const json bad = json::parse(output);
  for (const json& b : bad)
    ADD_FAILURE() << "schema " << b[0].dump() << "\n  produced " << b[1] << "\n  " << b[2];
  EXPECT_GT(walks, 1000);
}

TEST(JsonSchemaTest, RefusesWhatItDoesNotSupportNamingIt) {
  const std::vector<std::pair<json, std::string>> refused = {
      {json{{"type", "string"}, {"contentEncoding", "base64"}}, "'contentEncoding'"},
      {json{{"type", "object"}, {"additionalProperties", true}}, "'additionalProperties'"},
      {json{{"type", "number"}, {"minimum", 0}}, "'minimum' on a number"},
      {json{{"$defs", {{"n", {{"$ref", "#/$defs/n"}}}}}, {"$ref", "#/$defs/n"}}, "recursive"},
      {json{{"$ref", "http://x/y"}}, "'$ref'"},
      {json{{"type", "string"}, {"format", "hostname"}}, "format"},
      {json{{"type", "string"}, {"pattern", "a.b"}}, "'\"' or '\\'"},
      {json{{"type", "object"}, {"required", {"x"}}}, "required property 'x'"},
      {json{{"type", "integer"}, {"minimum", 5}, {"maximum", 4}}, "no integer"},
      {json{{"allOf", {json::object(), json::object()}}}, "'allOf'"},
      {json{{"type", "tuple"}}, "unknown type"},
      {json{{"maxLength", 3}}, "'maxLength' applies to strings, not to a schema without a 'type'"},
      {json{{"type", "integer"}, {"maxItems", 3}}, "'maxItems' applies to arrays, not to integer"},
      {json{{"type", {"string", "null"}}, {"minimum", 1}}, "'minimum' applies to numbers"},
      {json{{"enum", {1, 2}}, {"pattern", "a"}}, "'pattern' applies to strings"},
  };
  for (const auto& [schema, what] : refused) {
    absl::StatusOr<std::string> p = JsonSchemaToRegex(schema);
    ASSERT_FALSE(p.ok()) << schema.dump();
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(what), std::string::npos)
        << schema.dump() << ": " << p.status().message();
  }
}

}  // namespace
}  // namespace orca
