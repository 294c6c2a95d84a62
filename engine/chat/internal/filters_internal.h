// Shared pieces of the filter implementations (filters.cc, filters_seq.cc, tests.cc).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/chat/internal/value.h"

namespace orca::chat_internal {

class Interpreter;

using FilterFn = absl::StatusOr<Value> (*)(Interpreter&, const Value&, CallArgs);
using FilterTable = std::map<std::string, FilterFn>;

void AddStringFilters(FilterTable* table);
void AddSequenceFilters(FilterTable* table);

// jinja2.filters.make_attrgetter: looks up `attribute` ("a.b.0" or an int) on an item
// with sandboxed item access; `lower` lowercases string results (case-insensitive
// comparisons); `fallback` replaces an undefined result.
absl::StatusOr<Value> GetAttribute(Interpreter& interp, const Value& item,
                                   const std::optional<Value>& attribute, bool lower,
                                   const std::optional<Value>& fallback);

// Python's `item in container`.
absl::StatusOr<bool> Contains(Interpreter& interp, const Value& container, const Value& item);

// Fails like Python's hash() for unhashable values (list, dict, dict views).
absl::Status CheckHashable(const Value& v);

// A list of the items for filters that produce generators in Jinja2.
absl::StatusOr<Value> Generator(std::vector<Value> items);

}  // namespace orca::chat_internal
