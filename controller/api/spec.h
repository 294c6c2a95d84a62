// The InferenceDeployment custom resource as typed C++ values.
//
// ParseInferenceDeployment() turns an unstructured object (as read from the API
// server or a YAML file) into an InferenceDeployment with every default of the CRD
// applied and every schema and CEL rule of crds/inferencedeployments.serving.orca.dev.yaml
// checked, so that `render` of a file and the reconciler see the same values the API
// server would store. Plain value types; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace orca::controller {

using Json = nlohmann::json;

inline constexpr char kGroup[] = "serving.orca.dev";
inline constexpr char kApiVersion[] = "serving.orca.dev/v1alpha1";
inline constexpr char kKind[] = "InferenceDeployment";
inline constexpr int kMaxNameLength = 40;

// A key of a Secret in the deployment's namespace.
struct SecretKeyRef {
  std::string name;
  std::string key;
};

struct ModelSpec {
  std::string name;
  std::string uri;
  std::string dtype = "auto";
  // hf:// and https:// only: the pull's HF_TOKEN (key defaults to "token").
  std::optional<SecretKeyRef> token_secret;
  std::string sha256;               // https:// only: expected SHA-256 of the archive
  std::string download_size_limit;  // hf:// and https:// only: canonical quantity or ""
};

// Where the checkpoint lives, parsed from ModelSpec::uri.
//   pvc://CLAIM[/PATH]            mounted read-only from a PersistentVolumeClaim
//   hostpath:///PATH              mounted read-only from the node
//   hf://ORG/NAME[@REVISION]      pulled from the Hugging Face Hub by an init container
//   https://HOST/PATH.tar[.gz]    an archive pulled and unpacked by an init container
struct ModelSource {
  enum class Kind { kPvc, kHostPath, kHuggingFace, kHttps };
  Kind kind = Kind::kPvc;
  std::string claim;     // kPvc only
  std::string path;      // path inside the claim (may be empty) or absolute host path
  std::string repo;      // kHuggingFace only: ORG/NAME
  std::string revision;  // kHuggingFace only: REVISION, empty for the default branch
};

// Returns whether `src` is pulled into the pod (hf://, https://) rather than mounted.
inline bool IsPulled(const ModelSource& src) {
  return src.kind == ModelSource::Kind::kHuggingFace || src.kind == ModelSource::Kind::kHttps;
}

struct ParallelismSpec {
  int tensor = 1;
  int pipeline = 1;
  // Layers per stage, first to last (one count per stage); empty: the scheduler splits
  // them so that the stages' work balances (engine parallelism.pipeline_layers).
  std::vector<int> pipeline_layers;
  int gpus_per_pod = 1;
  std::string device = "gpu";  // gpu | cpu
};

struct EngineSpec {
  int max_batch_size = 64;
  int max_batched_tokens = 2048;
  std::string kv_policy = "paged";
  int block_size = 16;
  bool chunked_prefill = true;
  bool prefix_caching = false;
  double memory_fraction = 0.9;
  std::string scheduling_policy = "iteration";
  double target_itl_ms = 0;  // 0 = off
};

// Pod-level settings of scheduler or worker pods. Unset members are null Json.
struct PodSettings {
  Json resources;
  Json node_selector;
  Json tolerations;
  Json affinity;
  Json env;
  Json pod_annotations;
  std::string service_account_name;
  std::string priority_class_name;
};

struct GroupPolicy {
  int max_group_restarts = 5;
  int restart_backoff_seconds = 10;
};

struct RolloutStrategy {
  std::string type = "RollingUpdate";  // RollingUpdate | Recreate
  int max_unavailable = 1;
};

struct ServiceSpec {
  std::string type = "ClusterIP";
  int port = 8000;
  int grpc_port = 8001;
  Json annotations;
};

struct IngressSpec {
  bool enabled = false;
  std::string class_name;
  std::string host;
  std::string path = "/";
  std::string path_type = "Prefix";
  std::string tls_secret_name;
  Json annotations;
};

struct AutoscalingSpec {
  bool enabled = false;
  int min_replicas = 1;
  std::optional<int> max_replicas;
  std::string backend = "HPA";  // HPA | KEDA
  std::string metric = "orca_num_requests_waiting";
  std::string target = "4";
  std::string prometheus_server = "http://prometheus-operated.monitoring.svc:9090";
  std::string prometheus_query;
  Json behavior;
};

// spec.lifecycle: how pods stop and how long workers wait to join a group.
struct LifecycleSpec {
  int termination_grace_period_seconds = 60;
  int pre_stop_sleep_seconds = 5;
  int drain_seconds = 45;
  int join_timeout_seconds = 300;
};

// spec.routing.inferencePool.endpointPicker: the endpoint picker (EPP) Service.
struct EndpointPickerRef {
  std::string name;
  int port = 9002;
  std::string failure_mode = "FailClose";  // FailOpen | FailClose
};

// spec.routing.inferencePool: an opt-in Gateway API Inference Extension InferencePool.
struct InferencePoolSpec {
  bool enabled = false;
  std::optional<EndpointPickerRef> endpoint_picker;
};

struct RoutingSpec {
  InferencePoolSpec inference_pool;
};

struct ApiKeySecretRef {
  std::string name;
  std::string key = "api-key";
};

// spec.controlPlane: the scheduler <-> worker control plane (orca.v1.ControlPlane).
struct ControlPlaneSpec {
  // tokenSecretRef: the shared token every control-plane call carries (key defaults to
  // "token"); mounted into the scheduler and every worker. Unset: unauthenticated.
  std::optional<SecretKeyRef> token_secret;
};

// spec.tls: HTTPS and gRPC over TLS on the scheduler's public ports, from a
// kubernetes.io/tls Secret (keys tls.crt and tls.key).
struct TlsSpec {
  std::string secret_name;
};

struct InferenceDeploymentSpec {
  int replicas = 1;
  ModelSpec model;
  ModelSource model_source;
  ParallelismSpec parallelism;
  EngineSpec engine;
  std::string image = "ghcr.io/orca-serving/orca:0.1.0";
  std::string image_pull_policy = "IfNotPresent";
  Json image_pull_secrets;
  PodSettings scheduler;
  PodSettings worker;
  GroupPolicy group_policy;
  RolloutStrategy rollout;
  ServiceSpec service;
  IngressSpec ingress;
  AutoscalingSpec autoscaling;
  std::optional<ApiKeySecretRef> api_key;
  ControlPlaneSpec control_plane;
  std::optional<TlsSpec> tls;
  LifecycleSpec lifecycle;
  RoutingSpec routing;
};

struct InferenceDeployment {
  std::string name;
  std::string ns;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  InferenceDeploymentSpec spec;
  Json status;  // as stored; null when absent
};

// Parses and validates `object` (apiVersion/kind/metadata/spec[/status]).
// Returns InvalidArgument naming every offending field ("spec.parallelism.tensor: ...")
// when the object violates the CRD schema or its CEL rules.
absl::StatusOr<InferenceDeployment> ParseInferenceDeployment(const Json& object);

// Returns the part of the spec that shapes pods and engine configuration, as
// canonical JSON (keys sorted). Changing any of it starts a rollout; replicas,
// service, ingress and autoscaling are not part of it.
Json PodTemplateInputs(const InferenceDeploymentSpec& spec);

}  // namespace orca::controller
