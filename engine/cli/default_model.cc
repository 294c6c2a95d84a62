#include "engine/cli/default_model.h"

#include <unistd.h>

#include <climits>

#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"

namespace orca {

absl::StatusOr<std::string> DefaultModelDir() {
  std::string installed;
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string bin(exe, static_cast<size_t>(n));
    bin = bin.substr(0, bin.find_last_of('/'));
    installed = bin + "/../share/orca/models/stories260K";
    if (FileExists(JoinPath(installed, "config.json"))) return installed;
  }
  const std::string source = std::string(ORCA_SOURCE_DIR) + "/models/stories260K";
  if (FileExists(JoinPath(source, "config.json"))) return source;
  return absl::NotFoundError(
      absl::StrCat("no --model given, and the embedded stories260K "
                   "checkpoint is neither at ",
                   installed, " nor at ", source));
}

}  // namespace orca
