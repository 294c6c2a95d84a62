#include "engine/chat/chat_template.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/chat/internal/ast.h"
#include "engine/chat/internal/interpreter.h"
#include "engine/chat/internal/lexer.h"
#include "engine/chat/internal/optimizer.h"
#include "engine/chat/internal/parser.h"
#include "engine/common/status_macros.h"

namespace orca {

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;

absl::StatusOr<std::unique_ptr<ChatTemplate>> ChatTemplate::Parse(const std::string& source) {
  std::unique_ptr<ChatTemplate> tmpl(new ChatTemplate());
  tmpl->source_ = chat_internal::NormalizeSource(source);
  ORCA_ASSIGN_OR_RETURN(std::vector<chat_internal::Token> tokens,
                        chat_internal::Tokenize(tmpl->source_));
  ORCA_ASSIGN_OR_RETURN(tmpl->body_, chat_internal::ParseTemplate(tmpl->source_, tokens));
  chat_internal::FoldConstants(&tmpl->body_);
  return tmpl;
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& context,
                                                 size_t max_output_bytes) const {
  if (!context.is_object()) {
    return absl::InvalidArgumentError("chat template context must be a JSON object");
  }
  absl::StatusOr<chat_internal::Value> globals = chat_internal::FromJson(context);
  if (!globals.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("chat template context: ", globals.status().message()));
  }
  chat_internal::RenderLimits limits;
  limits.max_output_bytes = max_output_bytes;
  absl::StatusOr<std::string> out;
  {
    chat_internal::Interpreter interpreter(limits);
    interpreter.set_source(&source_);
    out = interpreter.Render(body_, *globals);
  }
  if (out.ok()) return out;
  // Every failure of a render is the template's (or its input's) fault: InvalidArgument.
  return absl::InvalidArgumentError(out.status().message());
}

}  // namespace orca
