// Jinja2's compile-time constant folding (jinja2.optimizer and CodeGenerator's constant
// output), which is observable: it evaluates slices of constants through the lenient
// sandboxed getitem. Run once after parsing.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "engine/chat/internal/ast.h"

namespace orca::chat_internal {

// Replaces constant subexpressions whose value has a safe repr with their value, and
// `{{ }}` statements whose expression is constant with their text.
void FoldConstants(Body* body);

}  // namespace orca::chat_internal
