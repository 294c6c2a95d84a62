#include "engine/model/pull/safe_path.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace orca {

absl::Status CheckRelativePath(absl::string_view path) {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("unsafe path '", path, "': ", why));
  };
  if (path.empty()) return refuse("empty");
  if (path.size() > 4096) return refuse("longer than 4096 bytes");
  if (path.front() == '/') return refuse("absolute");
  if (path.find('\0') != absl::string_view::npos) return refuse("contains NUL");
  if (path.find('\\') != absl::string_view::npos) return refuse("contains a backslash");
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty()) return refuse("empty component");
    if (part == "." || part == "..") return refuse("'.' or '..' component");
  }
  return absl::OkStatus();
}

absl::Status CheckLinkTarget(absl::string_view link_path, absl::string_view target) {
  auto refuse = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsafe link '", link_path, "' -> '", target, "': ", why));
  };
  if (target.empty()) return refuse("empty target");
  if (target.front() == '/') return refuse("absolute target");
  if (target.find('\0') != absl::string_view::npos) return refuse("target contains NUL");
  // Depth of the directory holding the link, then walk the target from there.
  std::vector<absl::string_view> parts = absl::StrSplit(link_path, '/', absl::SkipEmpty());
  int depth = static_cast<int>(parts.size()) - 1;
  if (depth < 0) return refuse("empty link path");
  for (absl::string_view part : absl::StrSplit(target, '/', absl::SkipEmpty())) {
    if (part == ".") continue;
    if (part == "..") {
      if (--depth < 0) return refuse("target leaves the destination directory");
    } else {
      ++depth;
    }
  }
  return absl::OkStatus();
}

}  // namespace orca
