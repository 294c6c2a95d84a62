// Builders of the engine ConfigMap and of the scheduler and worker workloads.
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/api/yaml.h"
#include "controller/builders/builders.h"
#include "controller/builders/layout.h"
#include "engine/config/config_loader.h"

namespace orca::controller {
namespace {

constexpr char kConfigDir[] = "/etc/orca";
constexpr char kEngineYaml[] = "/etc/orca/engine.yaml";
constexpr char kApiKeyDir[] = "/etc/orca/api-key";
constexpr char kModelMount[] = "/models";

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

std::string ModelDir(const ModelSource& src) {
  if (src.kind == ModelSource::Kind::kPvc && !src.path.empty()) {
    return absl::StrCat(kModelMount, "/", src.path);
  }
  return kModelMount;
}

Json ModelVolume(const ModelSource& src) {
  if (src.kind == ModelSource::Kind::kPvc) {
    return Json{{"name", "model"},
                {"persistentVolumeClaim", {{"claimName", src.claim}, {"readOnly", true}}}};
  }
  return Json{{"name", "model"}, {"hostPath", {{"path", src.path}, {"type", "Directory"}}}};
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

Json HttpProbe(const std::string& path, const std::string& port, int period, int failures) {
  return Json{{"httpGet", {{"path", path}, {"port", port}}},
              {"periodSeconds", period},
              {"timeoutSeconds", 5},
              {"failureThreshold", failures}};
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
      ModelVolume(d.spec.model_source),
  });
}

Json CommonMounts() {
  return Json::array({
      {{"name", "engine-config"}, {"mountPath", kConfigDir}, {"readOnly", true}},
      {{"name", "model"}, {"mountPath", kModelMount}, {"readOnly", true}},
  });
}

Json SelectorLabels(const InferenceDeployment& d, int group, int stage, const std::string& role) {
  Json l = {{kLabelDeployment, d.name}, {kLabelGroup, std::to_string(group)}, {kLabelRole, role}};
  if (stage >= 0) l[kLabelStage] = std::to_string(stage);
  return l;
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
  c.server.port = kHttpPort;
  c.server.grpc_port = kGrpcPort;
  if (s.api_key) c.server.api_key_file = absl::StrCat(kApiKeyDir, "/", s.api_key->key);
  c.worker.metrics_port = kWorkerMetricsPort;
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
                                                         "parallelism.tensor",
                                                         "parallelism.pipeline",
                                                         "parallelism.gpus_per_pod",
                                                         "parallelism.control_port",
                                                         "server.port",
                                                         "server.grpc_port",
                                                         "server.api_key_file",
                                                         "worker.metrics_port"};
  return *keys;
}

std::string EngineConfigYaml(const InferenceDeployment& d) {
  // The keys all exist (the seam test checks), so the writer cannot fail here.
  return ToEngineYaml(EngineConfigFor(d), EngineConfigKeys(),
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
      {"readinessProbe", HttpProbe("/ready", "http", 5, 3)},
      {"livenessProbe", HttpProbe("/health", "http", 10, 6)},
      {"startupProbe", HttpProbe("/health", "http", 10, 60)},
      {"volumeMounts", mounts},
  };
  if (!env.empty()) container["env"] = env;
  if (!s.scheduler.resources.is_null()) container["resources"] = s.scheduler.resources;
  Json pod_meta = {{"labels", OwnedLabels(d, group, -1, "scheduler", revision)}};
  Json pod_spec = {{"containers", Json::array({container})},
                   {"volumes", volumes},
                   {"terminationGracePeriodSeconds", 30}};
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
  Json mounts = CommonMounts();
  mounts.push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  Json volumes = CommonVolumes(d, revision);
  volumes.push_back({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}});
  Json container = {
      {"name", "worker"},
      {"image", s.image},
      {"imagePullPolicy", s.image_pull_policy},
      {"command", args},
      {"env", env},
      {"ports",
       Json::array(
           {{{"name", "metrics"}, {"containerPort", kWorkerMetricsPort}, {"protocol", "TCP"}}})},
      {"livenessProbe", HttpProbe("/health", "metrics", 10, 3)},
      {"startupProbe", HttpProbe("/health", "metrics", 10, 90)},
      {"volumeMounts", mounts},
  };
  if (!resources.empty()) container["resources"] = resources;
  Json pod_meta = {{"labels", OwnedLabels(d, group, stage, "worker", revision)}};
  Json pod_spec = {{"containers", Json::array({container})},
                   {"volumes", volumes},
                   {"terminationGracePeriodSeconds", 30}};
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
