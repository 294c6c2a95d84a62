// Pure functions that build every object an InferenceDeployment owns, as the
// unstructured JSON the controller applies with server-side apply. They read only
// their arguments (no clock, no randomness), so equal inputs give byte-equal output;
// tests/controller/golden pins them. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "controller/api/spec.h"
#include "engine/config/engine_config.h"

namespace orca::controller {

// Placeholder owner uid used when the CR has none yet (render of a file).
inline constexpr char kPlaceholderUid[] = "00000000-0000-0000-0000-000000000000";

// Returns the common labels of an owned object ({deployment, group, stage, role,
// revision} plus app.kubernetes.io/*). Negative group/stage and empty role/revision
// are left out.
Json OwnedLabels(const InferenceDeployment& d, int group, int stage, const std::string& role,
                 const std::string& revision);

// Returns {name, namespace, labels, ownerReferences (controller: true)} of an owned object.
Json OwnedMetadata(const InferenceDeployment& d, const std::string& name, Json labels);

// Returns the engine configuration of `d`'s processes: the CRD's model, parallelism and
// engine fields mapped onto the engine's own settings (engine/config), with the ports
// and mounts the pods use.
EngineConfig EngineConfigFor(const InferenceDeployment& d);
// Returns the engine.yaml keys the controller always writes (settings EngineConfigFor
// sets); parallelism.pipeline_layers is written only when the CR sets pipelineLayers.
const std::vector<std::string>& EngineConfigKeys();
// Returns engine.yaml for the ConfigMap: EngineConfigKeys (and the keys of set later
// fields) of EngineConfigFor, written by the engine's own writer (ToEngineYaml).
std::string EngineConfigYaml(const InferenceDeployment& d);

Json BuildEngineConfigMap(const InferenceDeployment& d, const std::string& revision);
Json BuildSchedulerDeployment(const InferenceDeployment& d, int group, const std::string& revision);
Json BuildSchedulerService(const InferenceDeployment& d, int group);
Json BuildWorkerStatefulSet(const InferenceDeployment& d, int group, int stage,
                            const std::string& revision);
Json BuildHeadlessService(const InferenceDeployment& d, int group);
Json BuildClientService(const InferenceDeployment& d);
// The following four are only meaningful when enabled in the spec.
Json BuildIngress(const InferenceDeployment& d);
Json BuildHorizontalPodAutoscaler(const InferenceDeployment& d);
Json BuildScaledObject(const InferenceDeployment& d);
// Returns the InferencePool (inference.networking.k8s.io/v1) named after `d` that selects
// only `d`'s scheduler pods on the serving port. Only meaningful when
// d.spec.routing.inferencePool.enabled.
Json BuildInferencePool(const InferenceDeployment& d);

// Returns the objects of one group at `revision`: headless Service, scheduler Service,
// scheduler Deployment, then one StatefulSet per stage.
std::vector<Json> BuildGroupObjects(const InferenceDeployment& d, int group,
                                    const std::string& revision);

// Returns the objects shared by all groups: client Service and, when enabled,
// Ingress, InferencePool and HPA or ScaledObject.
std::vector<Json> BuildSharedObjects(const InferenceDeployment& d);

// Returns every object of `d` with all groups at RevisionHash(d.spec), in apply order:
// ConfigMap, shared objects, then each group's objects. This is `orca-controller render`.
std::vector<Json> BuildAllObjects(const InferenceDeployment& d);

}  // namespace orca::controller
