// Python string formatting: `format % args` and str.format (the sandboxed formatter).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "engine/chat/internal/value.h"

namespace orca::chat_internal {

class Interpreter;

// Python's `format % args` (printf-style); `args` is a tuple, a mapping or one value.
absl::StatusOr<std::string> PercentFormat(Interpreter& interp, const std::string& format,
                                          const Value& args);

// Python's format.format(*args, **kwargs), attribute and item lookups sandboxed.
absl::StatusOr<std::string> BraceFormat(Interpreter& interp, const std::string& format,
                                        const CallArgs& args);

}  // namespace orca::chat_internal
