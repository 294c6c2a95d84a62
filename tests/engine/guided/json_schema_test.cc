// JsonSchemaToGuide against python3-jsonschema (an independent validator): for a corpus
// of schemas (recursive ones too, compiled as grammars), random walks through each
// compiled automaton (every byte it allows, so everything the pattern matches can come
// up) must be JSON the validator accepts, and known-invalid instances must not match.
// Also the refusals, which name the keyword.
#include "engine/guided/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "engine/guided/byte_dfa.h"
#include "engine/guided/grammar_automaton.h"
#include "tests/engine/guided/random_walk.h"
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
 [{"type": "object"}, [[]]],
 [{"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}, "required": ["value", "children"], "additionalProperties": false}}, "$ref": "#/$defs/node"}, [{"value": 1, "children": [{"value": "x", "children": []}]}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}]],
 [{"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}, "required": ["name", "next"], "additionalProperties": false}, [{"name": "a", "next": {"name": "b"}}, {"name": "a", "next": {"name": "b", "next": {"name": 3, "next": null}}}]],
 [{"$defs": {"expr": {"anyOf": [{"type": "boolean"}, {"$ref": "#/$defs/call"}]}, "call": {"type": "object", "properties": {"op": {"enum": ["and", "or"]}, "args": {"type": "array", "items": {"$ref": "#/$defs/expr"}, "minItems": 1, "maxItems": 3}}, "required": ["op", "args"], "additionalProperties": false}}, "$ref": "#/$defs/expr"}, [{"op": "not", "args": [true]}, {"op": "and", "args": []}, {"op": "and", "args": [{"op": "or", "args": [1]}]}]]
])json";

// The automaton of a schema's guide: a regular expression's DFA, or the grammar of a
// recursive schema.
std::unique_ptr<const ByteAutomaton> CompileSchema(const json& schema, bool* recursive) {
  absl::StatusOr<GuideSpec> guide = JsonSchemaToGuide(schema);
  EXPECT_TRUE(guide.ok()) << schema.dump() << ": " << guide.status();
  if (!guide.ok()) return nullptr;
  *recursive = guide->syntax == GuideSyntax::kJsonSchema;
  if (*recursive) {
    absl::StatusOr<GbnfRules> rules = JsonSchemaToGrammar(schema);
    EXPECT_TRUE(rules.ok()) << rules.status();
    if (!rules.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<const GrammarAutomaton>> g = GrammarAutomaton::Compile(*rules);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *std::move(g) : nullptr;
  }
  absl::StatusOr<ByteDfa> dfa = ByteDfa::Compile(guide->pattern);
  EXPECT_TRUE(dfa.ok()) << schema.dump() << ": " << dfa.status();
  return dfa.ok() ? std::make_unique<const ByteDfa>(*std::move(dfa)) : nullptr;
}

TEST(JsonSchemaTest, EveryMatchValidatesAndInvalidInstancesDoNotMatch) {
  testing::TempDir tmp;
  const json corpus = json::parse(kCorpus);
  std::mt19937 rng(11);
  json cases = json::array();
  int walks = 0, recursive = 0;
  for (size_t c = 0; c < corpus.size(); ++c) {
    const json& schema = corpus[c][0];
    bool is_recursive = false;
    std::unique_ptr<const ByteAutomaton> dfa = CompileSchema(schema, &is_recursive);
    ASSERT_NE(dfa, nullptr);
    recursive += is_recursive ? 1 : 0;
    json docs = json::array();
    for (int i = 0; i < 60; ++i) {
      bool ok = false;
      std::string doc = RandomWalk(*dfa, rng, &ok);
      if (ok) docs.push_back(doc);
    }
    walks += static_cast<int>(docs.size());
    if (is_recursive) {  // the walks go into the recursion, three objects deep or more
      size_t deepest = 0;
      for (const json& d : docs) {
        const std::string text = d.get<std::string>();
        deepest = std::max<size_t>(deepest, std::count(text.begin(), text.end(), '{'));
      }
      EXPECT_GE(deepest, 3u) << schema.dump();
    }
    EXPECT_GE(docs.size(), 20u) << schema.dump() << ": walks rarely end";
    for (const json& bad : corpus[c][1]) {
      EXPECT_FALSE(dfa->Matches(bad.dump())) << schema.dump() << " matched " << bad.dump();
    }
    cases.push_back({{"schema", schema}, {"docs", docs}});
  }
  // json_object's grammar: any object, at any depth.
  {
    auto any = GrammarAutomaton::Compile(JsonObjectGrammar());
    ASSERT_TRUE(any.ok()) << any.status();
    json docs = json::array();
    for (int i = 0; i < 60; ++i) {
      bool ok = false;
      std::string doc = RandomWalk(**any, rng, &ok);
      if (ok) docs.push_back(doc);
    }
    EXPECT_GE(docs.size(), 20u);
    cases.push_back({{"schema", {{"type", "object"}}}, {"docs", docs}});
    EXPECT_TRUE(
        (*any)->Matches(R"({"a": {"b": [{"c": [[{"d": {"e": [1.5e3, "x\n"]}}]]}]}, "f": null})"));
    for (const char* bad : {"[]", "{\"a\"}", "{\"a\": 01}", "{} ", "{\"a\":  1}"}) {
      EXPECT_FALSE((*any)->Matches(bad)) << bad;
    }
  }
  const std::string check =
      "import json, sys, jsonschema\n"
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
  std::string output;
  const int rc = RunPythonCheck(tmp, cases.dump(), check, &output);
  if (rc != 0 && output.find("No module named 'jsonschema'") != std::string::npos) {
    if (testing::InCi()) FAIL() << "python3-jsonschema is missing in CI";
    GTEST_SKIP() << "python3-jsonschema not installed";
  }
  ASSERT_EQ(rc, 0) << output;
  const json bad = json::parse(output);
  for (const json& b : bad)
    ADD_FAILURE() << "schema " << b[0].dump() << "\n  produced " << b[1] << "\n  " << b[2];
  EXPECT_GT(walks, 1000);
  EXPECT_EQ(recursive, 3) << "the recursive schemas run as grammars, the others as patterns";
}

// Every schema of the corpus as a grammar (the recursive ones run so): token masks made
// from kept stack tops equal one walk of the vocabulary's trie at every state of random
// token walks (the 32,000-token synthetic vocabulary).
TEST(JsonSchemaTest, GrammarMasksFromKeptTopsEqualOneWalkOfTheTrie) {
  const json corpus = json::parse(kCorpus);
  std::mt19937 rng(23);
  for (size_t c = 0; c < corpus.size(); ++c) {
    absl::StatusOr<GbnfRules> rules = JsonSchemaToGrammar(corpus[c][0]);
    ASSERT_TRUE(rules.ok()) << rules.status();
    auto g = GrammarAutomaton::Compile(*rules);
    ASSERT_TRUE(g.ok()) << corpus[c][0].dump() << ": " << g.status();
    ExpectMasksEqualTheWalk(**g, *SyntheticVocabulary(), rng, 2, 30, "{[", corpus[c][0].dump());
  }
}

TEST(JsonSchemaTest, RefusesWhatItDoesNotSupportNamingIt) {
  const std::vector<std::pair<json, std::string>> refused = {
      {json{{"type", "string"}, {"contentEncoding", "base64"}}, "'contentEncoding'"},
      {json{{"type", "object"}, {"additionalProperties", true}}, "'additionalProperties'"},
      {json{{"type", "number"}, {"minimum", 0}}, "'minimum' on a number"},
      {json{{"$defs", {{"n", {{"$ref", "#/$defs/n"}}}}}, {"$ref", "#/$defs/n"}},
       "no finite sentence"},
      {json{{"type", "object"},
            {"properties", {{"next", {{"$ref", "#"}}}}},
            {"required", {"next"}},
            {"additionalProperties", false}},
       "no finite sentence"},
      {json{{"$ref", "#/$defs/missing"}}, "names no definition"},
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
    absl::StatusOr<GuideSpec> p = JsonSchemaToGuide(schema);
    ASSERT_FALSE(p.ok()) << schema.dump();
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(what), std::string::npos)
        << schema.dump() << ": " << p.status().message();
  }
}

}  // namespace
}  // namespace orca
