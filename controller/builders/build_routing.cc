// Builder of the Gateway API Inference Extension InferencePool (docs/routing.md).
#include "controller/builders/builders.h"
#include "controller/builders/layout.h"

namespace orca::controller {

// Field names of inference.networking.k8s.io/v1 (gateway-api-inference-extension
// api/v1/inferencepool_types.go): spec.selector.matchLabels, spec.targetPorts[].number,
// spec.endpointPickerRef {kind, name, port.number, failureMode}. v1alpha2's
// targetPortNumber and extensionRef are gone.
Json BuildInferencePool(const InferenceDeployment& d) {
  const InferencePoolSpec& pool = d.spec.routing.inference_pool;
  EndpointPickerRef epp = pool.endpoint_picker.value_or(EndpointPickerRef{});
  // Only schedulers serve requests; workers have no HTTP API. Every group's scheduler
  // is a member, whatever its revision (a rollout keeps serving).
  Json selector = {{kLabelDeployment, d.name}, {kLabelRole, "scheduler"}};
  return Json{{"apiVersion", "inference.networking.k8s.io/v1"},
              {"kind", "InferencePool"},
              {"metadata", OwnedMetadata(d, d.name, OwnedLabels(d, -1, -1, "", ""))},
              {"spec",
               {{"selector", {{"matchLabels", selector}}},
                {"targetPorts", Json::array({{{"number", kHttpPort}}})},
                {"endpointPickerRef",
                 {{"kind", "Service"},
                  {"name", epp.name},
                  {"port", {{"number", epp.port}}},
                  {"failureMode", epp.failure_mode}}}}}};
}

}  // namespace orca::controller
