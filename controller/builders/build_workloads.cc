// Builders of the engine ConfigMap and of the scheduler and worker workloads.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/quantity.h"
#include "controller/api/yaml.h"
#include "controller/builders/builders.h"
#include "controller/builders/layout.h"
#include "controller/builders/model_delivery.h"
#include "engine/config/config_loader.h"

namespace orca::controller {
namespace {

constexpr char kConfigDir[] = "/etc/orca";
constexpr char kEngineYaml[] = "/etc/orca/engine.yaml";
constexpr char kApiKeyDir[] = "/etc/orca/api-key";
// spec.controlPlane.tokenSecretRef, in the scheduler and every worker.
constexpr char kControlTokenDir[] = "/etc/orca/control-token";
// spec.tls: the kubernetes.io/tls Secret, in the scheduler.
constexpr char kTlsDir[] = "/etc/orca/tls";
// Startup budget of a worker beyond its join timeout: loading the weights.
constexpr int kWorkerLoadSeconds = 900;
constexpr int kProbePeriodSeconds = 10;

Json OwnerReferences(const InferenceDeployment& d) {
  return Json::array({{{"apiVersion", kApiVersion},
                       {"kind", kKind},
                       {"name", d.name},
                       {"uid", d.uid.empty() ? std::string(kPlaceholderUid) : d.uid},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

Json Metadata(const InferenceDeployment& d, const std::string& name, Json labels) {
  return Json{{"name", name},
              {"namespace", d.ns},
              {"labels", std::move(labels)},
              {"ownerReferences", OwnerReferences(d)}};
}

Json EnvValue(const std::string& name, const std::string& value) {
  return Json{{"name", name}, {"value", value}};
}
Json EnvField(const std::string& name, const std::string& field_path) {
  return Json{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
}

// Returns the env of a worker pod of `stage` in `group`: what its command line expands
// ($(ORCA_SCHEDULER_ADDR), $(ORCA_STAGE_INDEX), $(ORCA_POD_ORDINAL)) and what `orca
// worker` reads itself (ORCA_POD_IP: its data-plane address; ORCA_POD_NAME: its name in
// the scheduler's logs). Everything else reaches the processes through engine.yaml.
Json WorkerEnv(const InferenceDeployment& d, int group, int stage) {
  return Json::array({
      EnvValue("ORCA_SCHEDULER_ADDR", SchedulerControlAddress(d.name, d.ns, group)),
      EnvValue("ORCA_STAGE_INDEX", std::to_string(stage)),
      EnvField("ORCA_POD_ORDINAL", "metadata.labels['apps.kubernetes.io/pod-index']"),
      EnvField("ORCA_POD_NAME", "metadata.name"),
      EnvField("ORCA_POD_IP", "status.podIP"),
  });
}

void AppendUserEnv(Json& env, const PodSettings& settings) {
  if (settings.env.is_array()) {
    for (const auto& e : settings.env) env.push_back(e);
  }
}

// `https`: the port serves TLS only (spec.tls), so the kubelet probes it over HTTPS (it
// does not verify the certificate).
Json HttpProbe(const std::string& path, const std::string& port, int period, int failures,
               bool https = false) {
  Json get = {{"path", path}, {"port", port}};
  if (https) get["scheme"] = "HTTPS";
  return Json{{"httpGet", get},
              {"periodSeconds", period},
              {"timeoutSeconds", 5},
              {"failureThreshold", failures}};
}

// Mounts the control-plane token Secret (spec.controlPlane.tokenSecretRef), if any.
void MountControlToken(const InferenceDeploymentSpec& s, Json& mounts, Json& volumes) {
  if (!s.control_plane.token_secret) return;
  mounts.push_back(
      {{"name", "control-token"}, {"mountPath", kControlTokenDir}, {"readOnly", true}});
  volumes.push_back({{"name", "control-token"},
                     {"secret", {{"secretName", s.control_plane.token_secret->name}}}});
}

// Sets the pod-level settings shared by both roles.
void ApplyPodSettings(const InferenceDeployment& d, const PodSettings& settings, Json& pod_spec,
                      Json& pod_metadata) {
  if (!settings.node_selector.is_null()) pod_spec["nodeSelector"] = settings.node_selector;
  if (!settings.tolerations.is_null()) pod_spec["tolerations"] = settings.tolerations;
  if (!settings.affinity.is_null()) pod_spec["affinity"] = settings.affinity;
  if (!settings.service_account_name.empty()) {
    pod_spec["serviceAccountName"] = settings.service_account_name;
  }
  if (!settings.priority_class_name.empty()) {
    pod_spec["priorityClassName"] = settings.priority_class_name;
  }
  if (!d.spec.image_pull_secrets.is_null()) {
    pod_spec["imagePullSecrets"] = d.spec.image_pull_secrets;
  }
  if (!settings.pod_annotations.is_null()) pod_metadata["annotations"] = settings.pod_annotations;
}

Json CommonVolumes(const InferenceDeployment& d, const std::string& revision) {
  return Json::array({
      {{"name", "engine-config"}, {"configMap", {{"name", ConfigMapName(d.name, revision)}}}},
      ModelVolume(d.spec),
  });
}

Json CommonMounts() {
  return Json::array({
      {{"name", "engine-config"}, {"mountPath", kConfigDir}, {"readOnly", true}},
      {{"name", kModelVolume}, {"mountPath", kModelMount}, {"readOnly", true}},
  });
}

// Returns `resources` with every request and limit in canonical quantity form: the
// API server returns them so ("1", not 1; "1Gi", not "1024Mi"), and the reconciler's
// comparison with the live object must see no change (quantity.h).
Json CanonicalResources(Json resources) {
  for (const char* k : {"limits", "requests"}) {
    if (!resources.contains(k) || !resources[k].is_object()) continue;
    for (auto& item : resources[k].items()) {
      // ParseInferenceDeployment rejected quantities that do not parse.
      absl::StatusOr<std::string> c = CanonicalQuantity(item.value());
      if (c.ok()) item.value() = *c;
    }
  }
  return resources;
}

// Sets the pod-level parts shared by both roles that come from spec.lifecycle and the
// model source: the grace period and, for pulled models, the `pull-model` init container.
void ApplyLifecycleAndModel(const InferenceDeploymentSpec& s, const PodSettings& settings,
                            Json& pod_spec) {
  pod_spec["terminationGracePeriodSeconds"] = s.lifecycle.termination_grace_period_seconds;
  Json pull = PullModelInitContainer(s, settings, pod_spec["containers"][0]);
  if (!pull.is_null()) pod_spec["initContainers"] = Json::array({pull});
}

Json SelectorLabels(const InferenceDeployment& d, int group, int stage, const std::string& role) {
  Json l = {{kLabelDeployment, d.name}, {kLabelGroup, std::to_string(group)}, {kLabelRole, role}};
  if (stage >= 0) l[kLabelStage] = std::to_string(stage);
  return l;
}

// Returns the worker startupProbe's failureThreshold: the probe must allow the join
// timeout (the worker waits that long for its group) plus loading the weights.
int WorkerStartupFailureThreshold(const InferenceDeploymentSpec& s) {
  int seconds = s.lifecycle.join_timeout_seconds + kWorkerLoadSeconds;
  return (seconds + kProbePeriodSeconds - 1) / kProbePeriodSeconds;
}

}  // namespace

Json OwnedLabels(const InferenceDeployment& d, int group, int stage, const std::string& role,
                 const std::string& revision) {
  Json l = {{"app.kubernetes.io/name", "orca"},
            {"app.kubernetes.io/instance", d.name},
            {"app.kubernetes.io/managed-by", kFieldManager},
            {kLabelDeployment, d.name}};
  if (group >= 0) l[kLabelGroup] = std::to_string(group);
  if (stage >= 0) l[kLabelStage] = std::to_string(stage);
  if (!role.empty()) {
    l[kLabelRole] = role;
    l["app.kubernetes.io/component"] = role;
  }
  if (!revision.empty()) l[kLabelRevision] = revision;
  return l;
}

EngineConfig EngineConfigFor(const InferenceDeployment& d) {
  const InferenceDeploymentSpec& s = d.spec;
  const EngineSpec& e = s.engine;
  EngineConfig c;
  c.model.dir = ModelDir(s.model_source);
  c.model.served_name = s.model.name;
  // The CRD's enums are checked by ParseInferenceDeployment; the engine spells them the
  // same (device: `gpu` is an accepted spelling of `cuda`).
  c.model.dtype = ParseWeightDType(s.model.dtype).value_or(WeightDType::kAuto);
  c.device.type = ParseDevice(s.parallelism.device).value_or(Device::kCuda);
  c.device.memory_fraction = e.memory_fraction;
  c.parallel.tensor = s.parallelism.tensor;
  c.parallel.pipeline = s.parallelism.pipeline;
  c.parallel.pipeline_layers = absl::StrJoin(s.parallelism.pipeline_layers, ",");
  c.parallel.gpus_per_pod = s.parallelism.gpus_per_pod;
  c.parallel.control_port = kControlPort;
  c.kv_cache.block_size = e.block_size;
  c.scheduler.policy =
      ParseSchedulingPolicy(e.scheduling_policy).value_or(SchedulingPolicy::kIteration);
  c.scheduler.kv_policy = ParseKvPolicy(e.kv_policy).value_or(KvPolicy::kPaged);
  c.scheduler.prefix_caching = e.prefix_caching;
  c.scheduler.chunked_prefill = e.chunked_prefill;
  c.scheduler.max_batch_size = e.max_batch_size;
  c.scheduler.max_batched_tokens = e.max_batched_tokens;
  c.scheduler.target_itl_ms = e.target_itl_ms;
  c.server.port = kHttpPort;
  c.server.grpc_port = kGrpcPort;
  if (s.api_key) c.server.api_key_file = absl::StrCat(kApiKeyDir, "/", s.api_key->key);
  if (s.control_plane.token_secret) {
    c.parallel.control_token_file =
        absl::StrCat(kControlTokenDir, "/", s.control_plane.token_secret->key);
  }
  if (s.tls) {  // the keys of a kubernetes.io/tls Secret
    c.server.tls_cert_file = absl::StrCat(kTlsDir, "/tls.crt");
    c.server.tls_key_file = absl::StrCat(kTlsDir, "/tls.key");
  }
  // The scheduler drains for drainSeconds after SIGTERM; the preStop sleep runs before
  // SIGTERM, and the CRD keeps both within the grace period.
  c.server.shutdown_timeout_s = s.lifecycle.drain_seconds;
  c.worker.metrics_port = kWorkerMetricsPort;
  c.worker.join_timeout_s = s.lifecycle.join_timeout_seconds;
  return c;
}

const std::vector<std::string>& EngineConfigKeys() {
  static const auto* keys = new std::vector<std::string>{"model.dir",
                                                         "model.name",
                                                         "model.dtype",
                                                         "device.type",
                                                         "device.memory_fraction",
                                                         "kv_cache.block_size",
                                                         "scheduler.policy",
                                                         "scheduler.kv_policy",
                                                         "scheduler.prefix_caching",
                                                         "scheduler.chunked_prefill",
                                                         "scheduler.max_batch_size",
                                                         "scheduler.max_batched_tokens",
                                                         "scheduler.target_itl_ms",
                                                         "parallelism.tensor",
                                                         "parallelism.pipeline",
                                                         "parallelism.gpus_per_pod",
                                                         "parallelism.control_port",
                                                         "parallelism.control_token_file",
                                                         "server.port",
                                                         "server.grpc_port",
                                                         "server.api_key_file",
                                                         "server.tls_cert_file",
                                                         "server.tls_key_file",
                                                         "server.shutdown_timeout_s",
                                                         "worker.metrics_port",
                                                         "worker.join_timeout_s"};
  return *keys;
}

std::string EngineConfigYaml(const InferenceDeployment& d) {
  // Keys of fields added later are written only when the field is set, so that a
  // controller upgrade leaves the engine.yaml of a deployment that does not use them as
  // it was, and an older engine image (which refuses unknown keys) still reads it.
  std::vector<std::string> keys = EngineConfigKeys();
  if (!d.spec.parallelism.pipeline_layers.empty()) keys.push_back("parallelism.pipeline_layers");
  // The keys all exist (the seam test checks), so the writer cannot fail here.
  return ToEngineYaml(EngineConfigFor(d), keys,
                      absl::StrCat("# orca engine configuration of InferenceDeployment ", d.ns, "/",
                                   d.name, ", written by orca-controller.\n"))
      .value_or("");
}

Json BuildEngineConfigMap(const InferenceDeployment& d, const std::string& revision) {
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata",
               Metadata(d, ConfigMapName(d.name, revision), OwnedLabels(d, -1, -1, "", revision))},
              {"data", {{"engine.yaml", EngineConfigYaml(d)}}}};
}

Json BuildSchedulerDeployment(const InferenceDeployment& d, int group,
                              const std::string& revision) {
  const InferenceDeploymentSpec& s = d.spec;
  // Everything but the role is in engine.yaml.
  Json args = Json::array({"orca", "scheduler", "--config", kEngineYaml});
  Json mounts = CommonMounts();
  Json volumes = CommonVolumes(d, revision);
  if (s.api_key) {
    mounts.push_back({{"name", "api-key"}, {"mountPath", kApiKeyDir}, {"readOnly", true}});
    volumes.push_back({{"name", "api-key"}, {"secret", {{"secretName", s.api_key->name}}}});
  }
  MountControlToken(s, mounts, volumes);
  const bool https = s.tls.has_value();
  if (https) {
    mounts.push_back({{"name", "tls"}, {"mountPath", kTlsDir}, {"readOnly", true}});
    volumes.push_back({{"name", "tls"}, {"secret", {{"secretName", s.tls->secret_name}}}});
  }
  Json env = Json::array();
  AppendUserEnv(env, s.scheduler);
  Json container = {
      {"name", "scheduler"},
      {"image", s.image},
      {"imagePullPolicy", s.image_pull_policy},
      {"command", args},
      {"ports",
       Json::array({{{"name", "http"}, {"containerPort", kHttpPort}, {"protocol", "TCP"}},
                    {{"name", "grpc"}, {"containerPort", kGrpcPort}, {"protocol", "TCP"}},
                    {{"name", "control"}, {"containerPort", kControlPort}, {"protocol", "TCP"}}})},
      {"readinessProbe", HttpProbe("/ready", "http", 5, 3, https)},
      {"livenessProbe", HttpProbe("/health", "http", 10, 6, https)},
      {"startupProbe", HttpProbe("/health", "http", kProbePeriodSeconds, 60, https)},
      {"volumeMounts", mounts},
  };
  if (!env.empty()) container["env"] = env;
  if (!s.scheduler.resources.is_null()) {
    container["resources"] = CanonicalResources(s.scheduler.resources);
  }
  if (s.lifecycle.pre_stop_sleep_seconds > 0) {
    // Endpoints, Services and Ingress controllers stop routing to the pod while it
    // waits; SIGTERM then starts the drain (server.shutdown_timeout_s).
    container["lifecycle"] = {
        {"preStop",
         {{"exec",
           {{"command", Json::array({"orca", "pre-stop", "--seconds",
                                     std::to_string(s.lifecycle.pre_stop_sleep_seconds)})}}}}}};
  }
  Json pod_meta = {{"labels", OwnedLabels(d, group, -1, "scheduler", revision)}};
  Json pod_spec = {{"containers", Json::array({container})}, {"volumes", volumes}};
  ApplyLifecycleAndModel(s, s.scheduler, pod_spec);
  ApplyPodSettings(d, s.scheduler, pod_spec, pod_meta);
  return Json{{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", Metadata(d, SchedulerName(d.name, group),
                                    OwnedLabels(d, group, -1, "scheduler", revision))},
              {"spec",
               {{"replicas", 1},
                {"strategy", {{"type", "Recreate"}}},
                {"selector", {{"matchLabels", SelectorLabels(d, group, -1, "scheduler")}}},
                {"template", {{"metadata", pod_meta}, {"spec", pod_spec}}}}}};
}

Json BuildWorkerStatefulSet(const InferenceDeployment& d, int group, int stage,
                            const std::string& revision) {
  const InferenceDeploymentSpec& s = d.spec;
  const ParallelismSpec& p = s.parallelism;
  Json env = WorkerEnv(d, group, stage);
  AppendUserEnv(env, s.worker);
  // The pod's place in the group on the command line; everything else in engine.yaml.
  Json args = Json::array({"orca", "worker", "--config", kEngineYaml, FlagFor("worker.scheduler"),
                           "$(ORCA_SCHEDULER_ADDR)", FlagFor("worker.stage"), "$(ORCA_STAGE_INDEX)",
                           FlagFor("worker.pod_index"), "$(ORCA_POD_ORDINAL)"});
  Json resources = s.worker.resources.is_null() ? Json::object() : s.worker.resources;
  if (p.device == "gpu" && !(resources.contains("limits") && resources["limits"].is_object() &&
                             resources["limits"].contains("nvidia.com/gpu"))) {
    resources["limits"]["nvidia.com/gpu"] = p.gpus_per_pod;
  }
  resources = CanonicalResources(std::move(resources));
  Json mounts = CommonMounts();
  mounts.push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  Json volumes = CommonVolumes(d, revision);
  volumes.push_back({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}});
  MountControlToken(s, mounts, volumes);
  Json container = {
      {"name", "worker"},
      {"image", s.image},
      {"imagePullPolicy", s.image_pull_policy},
      {"command", args},
      {"env", env},
      {"ports",
       Json::array(
           {{{"name", "metrics"}, {"containerPort", kWorkerMetricsPort}, {"protocol", "TCP"}}})},
      // /health turns 503 when a plan is stuck past the rank deadline or the worker has
      // been out of a group longer than its join timeout: three misses restart it.
      {"livenessProbe", HttpProbe("/health", "metrics", kProbePeriodSeconds, 3)},
      {"startupProbe",
       HttpProbe("/health", "metrics", kProbePeriodSeconds, WorkerStartupFailureThreshold(s))},
      {"volumeMounts", mounts},
  };
  if (!resources.empty()) container["resources"] = resources;
  Json pod_meta = {{"labels", OwnedLabels(d, group, stage, "worker", revision)}};
  Json pod_spec = {{"containers", Json::array({container})}, {"volumes", volumes}};
  ApplyLifecycleAndModel(s, s.worker, pod_spec);
  ApplyPodSettings(d, s.worker, pod_spec, pod_meta);
  return Json{{"apiVersion", "apps/v1"},
              {"kind", "StatefulSet"},
              {"metadata", Metadata(d, StageName(d.name, group, stage),
                                    OwnedLabels(d, group, stage, "worker", revision))},
              {"spec",
               {{"replicas", PodsPerStage(p)},
                {"serviceName", HeadlessServiceName(d.name, group)},
                {"podManagementPolicy", "Parallel"},
                // Pods are replaced by the controller, a whole group at a time.
                {"updateStrategy", {{"type", "OnDelete"}}},
                {"selector", {{"matchLabels", SelectorLabels(d, group, stage, "worker")}}},
                {"template", {{"metadata", pod_meta}, {"spec", pod_spec}}}}}};
}

// Shared with build_services.cc.
Json OwnedMetadata(const InferenceDeployment& d, const std::string& name, Json labels) {
  return Metadata(d, name, std::move(labels));
}

}  // namespace orca::controller
