#include "engine/tokenizer/internal/json_file.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"

namespace orca::tokenizer_internal {

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  if (!FileExists(path)) return absl::NotFoundError(absl::StrCat(path, ": file not found"));
  ORCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": invalid JSON: ", e.what()));
  }
}

}  // namespace orca::tokenizer_internal
