// Names, labels, rank layout and revision hashing of the objects an
// InferenceDeployment owns. Pure functions of their arguments; thread-safe.
//
// Per group g (0-based) and stage s:
//   <name>-g<g>-scheduler   Deployment (1 replica) and its Service
//   <name>-g<g>-s<s>        worker StatefulSet, PodsPerStage() pods
//   <name>-g<g>-workers     headless Service of the group's worker pods
//   <name>-engine-<rev>     engine ConfigMap of one revision
//   <name>                  client Service, Ingress, HPA / ScaledObject
#pragma once

#include <string>

#include "controller/api/spec.h"

namespace orca::controller {

inline constexpr char kLabelDeployment[] = "serving.orca.dev/deployment";
inline constexpr char kLabelGroup[] = "serving.orca.dev/group";
inline constexpr char kLabelStage[] = "serving.orca.dev/stage";
inline constexpr char kLabelRole[] = "serving.orca.dev/role";
inline constexpr char kLabelRevision[] = "serving.orca.dev/revision";
inline constexpr char kFieldManager[] = "orca-controller";

// Ports of the orca containers (docs/controller.md).
inline constexpr int kHttpPort = 8000;
inline constexpr int kGrpcPort = 8001;
inline constexpr int kControlPort = 8002;
inline constexpr int kWorkerMetricsPort = 9090;

// Returns tensor / gpusPerPod: worker pods in one pipeline stage.
int PodsPerStage(const ParallelismSpec& p);
// Returns tensor * pipeline: ranks in one group.
int WorldSize(const ParallelismSpec& p);
// Returns pipeline * PodsPerStage: worker pods in one group.
int WorkerPodsPerGroup(const ParallelismSpec& p);

std::string SchedulerName(const std::string& name, int group);
std::string StageName(const std::string& name, int group, int stage);
std::string HeadlessServiceName(const std::string& name, int group);
std::string ConfigMapName(const std::string& name, const std::string& revision);
// Returns "<scheduler service>.<ns>.svc:<control port>".
std::string SchedulerControlAddress(const std::string& name, const std::string& ns, int group);

// Returns the 10-hex-digit revision of the pod-shaping part of `spec`
// (PodTemplateInputs), stable across processes and versions of nlohmann-json.
std::string RevisionHash(const InferenceDeploymentSpec& spec);

// Returns the label selector string of the scheduler pods (status.selector).
std::string SchedulerSelector(const std::string& name);

// Returns the restart backoff before restart number `restarts + 1`:
// base * 2^restarts seconds, at most one hour.
int RestartBackoffSeconds(int base_seconds, int restarts);

}  // namespace orca::controller
