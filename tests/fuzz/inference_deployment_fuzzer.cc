// Fuzzes the controller's decoding of InferenceDeployment objects (controller/api/spec.h:
// ParseInferenceDeployment) and everything built from an accepted one
// (controller/builders: BuildAllObjects, the engine.yaml it renders).
//
// Input that is a JSON document is decoded as the API server sends objects (JSON); any
// other input as a manifest, through `orca-controller render` (RenderManifest: YAML,
// several documents). The contract checked besides "no crash, no hang": what the
// controller renders as engine.yaml for an accepted object is accepted by the engine's
// strict reader (engine/config/config_loader.h), the seam crd_engine_seam_test pins.

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "controller/api/spec.h"
#include "controller/builders/builders.h"
#include "controller/builders/render.h"
#include "engine/config/config_loader.h"
#include "engine/config/settings.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void BuildFrom(const orca::controller::InferenceDeployment& d) {
  (void)orca::controller::BuildAllObjects(d);
  (void)orca::controller::PodTemplateInputs(d.spec);
  const std::string yaml = orca::controller::EngineConfigYaml(d);
  orca::EngineConfig config = orca::DefaultConfig(orca::Role::kScheduler);
  absl::Status read = orca::ApplyEngineYaml(yaml, "rendered engine.yaml", config);
  if (!read.ok()) {
    std::fprintf(stderr, "the engine refuses the engine.yaml the controller renders: %s\n%s\n",
                 std::string(read.message()).c_str(), yaml.c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = orca::fuzz::AsString(data, size);
  orca::controller::Json object = orca::controller::Json::parse(text, nullptr, false);
  if (!object.is_discarded()) {
    auto d = orca::controller::ParseInferenceDeployment(object);
    if (d.ok()) BuildFrom(*d);
    return 0;
  }
  auto objects = orca::controller::RenderManifest(text, "manifest.yaml");
  if (!objects.ok() && objects.status().code() != absl::StatusCode::kInvalidArgument &&
      objects.status().code() != absl::StatusCode::kNotFound) {
    __builtin_trap();
  }
  return 0;
}
