// The embedded default model: the stories260K checkpoint (llama2.c, MIT) that ships
// with orca in models/stories260K, and in the image under /usr/share/orca/models.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace orca {

// Returns the directory of the embedded stories260K checkpoint: beside the binary
// (<bin>/../share/orca/models/stories260K, as installed in the image) or in the source
// tree this binary was built from. NotFound naming both places otherwise.
absl::StatusOr<std::string> DefaultModelDir();

}  // namespace orca
