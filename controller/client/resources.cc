#include <string>

#include "absl/strings/str_cat.h"
#include "controller/client/kube_client.h"

namespace orca::controller {
namespace resources {

const ResourceType kInferenceDeployment{"serving.orca.dev/v1alpha1", "InferenceDeployment",
                                        "inferencedeployments", true};
const ResourceType kConfigMap{"v1", "ConfigMap", "configmaps", true};
const ResourceType kService{"v1", "Service", "services", true};
const ResourceType kPod{"v1", "Pod", "pods", true};
const ResourceType kEvent{"v1", "Event", "events", true};
const ResourceType kDeployment{"apps/v1", "Deployment", "deployments", true};
const ResourceType kStatefulSet{"apps/v1", "StatefulSet", "statefulsets", true};
const ResourceType kIngress{"networking.k8s.io/v1", "Ingress", "ingresses", true};
const ResourceType kHorizontalPodAutoscaler{"autoscaling/v2", "HorizontalPodAutoscaler",
                                            "horizontalpodautoscalers", true};
const ResourceType kScaledObject{"keda.sh/v1alpha1", "ScaledObject", "scaledobjects", true};
const ResourceType kInferencePool{"inference.networking.k8s.io/v1", "InferencePool",
                                  "inferencepools", true};
const ResourceType kLease{"coordination.k8s.io/v1", "Lease", "leases", true};

const ResourceType* ForObject(const Json& object) {
  static const ResourceType* const kAll[] = {&kInferenceDeployment,
                                             &kConfigMap,
                                             &kService,
                                             &kPod,
                                             &kEvent,
                                             &kDeployment,
                                             &kStatefulSet,
                                             &kIngress,
                                             &kHorizontalPodAutoscaler,
                                             &kScaledObject,
                                             &kInferencePool,
                                             &kLease};
  if (!object.is_object()) return nullptr;
  std::string api_version = object.value("apiVersion", "");
  std::string kind = object.value("kind", "");
  for (const ResourceType* t : kAll) {
    if (t->api_version == api_version && t->kind == kind) return t;
  }
  return nullptr;
}

}  // namespace resources

std::string ResourcePath(const ResourceType& type, const std::string& ns, const std::string& name) {
  std::string path = type.api_version.find('/') == std::string::npos
                         ? absl::StrCat("/api/", type.api_version)
                         : absl::StrCat("/apis/", type.api_version);
  if (type.namespaced && !ns.empty()) absl::StrAppend(&path, "/namespaces/", ns);
  absl::StrAppend(&path, "/", type.plural);
  if (!name.empty()) absl::StrAppend(&path, "/", name);
  return path;
}

}  // namespace orca::controller
