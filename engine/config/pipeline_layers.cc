#include "engine/config/pipeline_layers.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace orca {

absl::StatusOr<std::vector<int32_t>> ParseStageLayers(absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty() || trimmed == "auto") return std::vector<int32_t>{};
  std::vector<int32_t> out;
  for (absl::string_view part : absl::StrSplit(trimmed, ',')) {
    int32_t n = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &n) || n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline layers \"", text,
                       "\": expected layer counts >= 1 separated by commas (\"8,4\") or \"auto\""));
    }
    out.push_back(n);
  }
  return out;
}

absl::Status CheckStageLayers(absl::string_view text, int32_t pipeline) {
  absl::StatusOr<std::vector<int32_t>> layers = ParseStageLayers(text);
  if (!layers.ok()) return layers.status();
  if (!layers->empty() && static_cast<int64_t>(layers->size()) != pipeline) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parallelism.pipeline_layers \"", text, "\" gives ", layers->size(),
        " stages their layers, and parallelism.pipeline is ", pipeline, ": one count per stage"));
  }
  return absl::OkStatus();
}

}  // namespace orca
