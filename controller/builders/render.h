// `orca-controller render`: the objects the controller would apply for the
// InferenceDeployments of a manifest. Stateless; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::controller {

// Returns every object for every InferenceDeployment document of `manifest_yaml`
// (other kinds are skipped). InvalidArgument for malformed YAML or an invalid CR,
// naming `source`; NotFound when the manifest holds no InferenceDeployment.
absl::StatusOr<std::vector<nlohmann::json>> RenderManifest(const std::string& manifest_yaml,
                                                           const std::string& source);

}  // namespace orca::controller
