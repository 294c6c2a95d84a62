// JSON Schema to a regular expression (engine/guided/byte_dfa.h) whose every match is
// a JSON text valid under the schema: structured outputs (`response_format`
// json_schema, `guided_json`) through the same automaton as `guided_regex`. A recursive
// schema (a tree, a linked list: `$ref` to "#" or to a definition from inside itself)
// is not regular: it becomes a grammar (grammar_automaton.h) whose rules are the
// root and each definition that calls itself, written as patterns with rule calls.
//
// Supported: type (string, integer, number, boolean, null, object, array, or a list
// of them), enum, const, properties with required (objects are written with their
// properties in schema order; additionalProperties must be absent or false, as OpenAI's
// strict mode requires), items with minItems/maxItems, anyOf/oneOf, allOf of one
// schema, $ref to "#", "#/$defs/..." or "#/definitions/..." (recursion too), strings with
// minLength/maxLength, pattern (applied to the string's characters; patterns needing
// escapes are refused) and format (date, time, date-time, uuid, email, ipv4),
// integers with minimum/maximum (exclusive too), numbers (bounds refused). Everything
// else — and a keyword the schema uses in a place it does not apply — is refused with
// InvalidArgument naming the keyword and where it is, never ignored.
//
// Whitespace: none between tokens except one space after ':' and ',' allowed
// (`[ ]?`), so the model may write compact or spaced JSON but cannot run on with
// blanks.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/guided/gbnf.h"
#include "engine/guided/guide_spec.h"

namespace orca {

// `schema` keeps its key order (ordered_json): objects are generated with their
// properties in the order the schema lists them, as OpenAI's structured outputs are.
// A schema without recursion gives its regular expression (kRegex); a recursive one
// gives itself, as JSON text, to be compiled as a grammar (kJsonSchema).
absl::StatusOr<GuideSpec> JsonSchemaToGuide(const nlohmann::ordered_json& schema);

// A (recursive) schema as grammar rules, `root` its start.
absl::StatusOr<GbnfRules> JsonSchemaToGrammar(const nlohmann::ordered_json& schema);

// A GBNF grammar (gbnf.h) of any JSON object, nested to any depth, spaced as the
// schemas' patterns are (`response_format` json_object).
std::string JsonObjectGrammar();

}  // namespace orca
