// The built-in filters, tests, methods and global functions available to templates:
// Jinja2's (for the subset chat templates use), Python's str/dict/list methods reachable
// through the immutable sandbox, and the globals transformers adds.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/chat/internal/value.h"

namespace orca::chat_internal {

class Interpreter;

// True for every Jinja2 builtin filter/test name (unsupported ones fail when applied).
bool IsKnownFilter(const std::string& name);
bool IsKnownTest(const std::string& name);

// Applies filter `name` to `subject`.
absl::StatusOr<Value> ApplyFilter(Interpreter& interp, const std::string& name,
                                  const Value& subject, CallArgs args);
// Applies test `name` to `subject`.
absl::StatusOr<bool> ApplyTest(Interpreter& interp, const std::string& name, const Value& subject,
                               CallArgs args);

// Returns the bound method `name` of a str, dict or list receiver, or undefined when
// the sandbox would not expose it.
Value GetMethod(const Value& receiver, const std::string& name);
// Calls a method returned by GetMethod.
absl::StatusOr<Value> CallMethod(Interpreter& interp, const Value& receiver,
                                 const std::string& name, CallArgs args);

// Returns the global functions: range, dict, namespace, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> GlobalFunctions();

// Binds Python-style arguments to named parameters. `params` lists the parameter names;
// the first `required` must be given. Unbound parameters are nullopt.
absl::StatusOr<std::vector<std::optional<Value>>> BindArgs(const std::string& function,
                                                           CallArgs args,
                                                           const std::vector<std::string>& params,
                                                           size_t required);

}  // namespace orca::chat_internal
