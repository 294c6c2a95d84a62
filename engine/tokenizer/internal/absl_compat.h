// Debian's abseil is built with its own absl::string_view, distinct from
// std::string_view; this converts at the few places that meet.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace orca::tokenizer_internal {

inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }

}  // namespace orca::tokenizer_internal
