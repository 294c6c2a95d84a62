#include "controller/builders/model_delivery.h"

#include "absl/strings/str_cat.h"

namespace orca::controller {

std::string ModelDir(const ModelSource& src) {
  if (IsPulled(src)) return kPulledModelDir;
  if (src.kind == ModelSource::Kind::kPvc && !src.path.empty()) {
    return absl::StrCat(kModelMount, "/", src.path);
  }
  return kModelMount;
}

Json ModelVolume(const InferenceDeploymentSpec& spec) {
  const ModelSource& src = spec.model_source;
  if (IsPulled(src)) {
    Json empty_dir = Json::object();
    if (!spec.model.download_size_limit.empty()) {
      empty_dir["sizeLimit"] = spec.model.download_size_limit;  // canonical already
    }
    return Json{{"name", kModelVolume}, {"emptyDir", empty_dir}};
  }
  if (src.kind == ModelSource::Kind::kPvc) {
    return Json{{"name", kModelVolume},
                {"persistentVolumeClaim", {{"claimName", src.claim}, {"readOnly", true}}}};
  }
  return Json{{"name", kModelVolume}, {"hostPath", {{"path", src.path}, {"type", "Directory"}}}};
}

Json PullModelInitContainer(const InferenceDeploymentSpec& spec, const PodSettings& settings,
                            const Json& main) {
  if (!IsPulled(spec.model_source)) return Json();
  // The command line of `orca model pull` (engine/cli/model_command.cc).
  Json command = Json::array({"orca", "model", "pull", spec.model.uri, kPulledModelDir});
  if (!spec.model.sha256.empty()) {
    command.push_back("--sha256");
    command.push_back(spec.model.sha256);
  }
  Json env = Json::array();
  if (spec.model.token_secret) {
    Json key_ref = {{"name", spec.model.token_secret->name}, {"key", spec.model.token_secret->key}};
    env.push_back({{"name", "HF_TOKEN"}, {"valueFrom", {{"secretKeyRef", key_ref}}}});
  }
  // The user's env of the pod: HF_ENDPOINT, HTTPS_PROXY, NO_PROXY, CA bundles.
  if (settings.env.is_array()) {
    for (const Json& e : settings.env) env.push_back(e);
  }
  Json container = {
      {"name", "pull-model"},
      {"image", main.value("image", spec.image)},
      {"imagePullPolicy", main.value("imagePullPolicy", spec.image_pull_policy)},
      {"command", command},
      {"volumeMounts", Json::array({{{"name", kModelVolume}, {"mountPath", kModelMount}}})},
  };
  if (!env.empty()) container["env"] = env;
  if (main.contains("securityContext")) container["securityContext"] = main["securityContext"];
  return container;
}

}  // namespace orca::controller
