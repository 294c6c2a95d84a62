#include "controller/builders/render.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/api/spec.h"
#include "controller/api/yaml.h"
#include "controller/builders/builders.h"
#include "engine/common/status_macros.h"

namespace orca::controller {

absl::StatusOr<std::vector<nlohmann::json>> RenderManifest(const std::string& manifest_yaml,
                                                           const std::string& source) {
  ORCA_ASSIGN_OR_RETURN(std::vector<Json> docs, ParseYamlDocuments(manifest_yaml, source));
  std::vector<Json> out;
  int found = 0;
  for (const Json& doc : docs) {
    // Not value("kind", ""): it throws when kind is not a string (tests/fuzz).
    const auto kind = doc.find("kind");  // end() for a document that is not an object
    if (kind == doc.end() || *kind != kKind) continue;
    ++found;
    absl::StatusOr<InferenceDeployment> d = ParseInferenceDeployment(doc);
    if (!d.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", d.status().message()));
    }
    for (Json& o : BuildAllObjects(*d)) out.push_back(std::move(o));
  }
  if (found == 0) {
    return absl::NotFoundError(absl::StrCat(source, ": no InferenceDeployment in the manifest"));
  }
  return out;
}

}  // namespace orca::controller
