// Builders of the engine ConfigMap and of the scheduler and worker workloads.
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/builders.h"
#include "controller/layout.h"
#include "controller/yaml.h"

namespace orca::controller {
namespace {

constexpr char kConfigDir[] = "/etc/orca";
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

// Returns env shared by scheduler and worker pods of `group`.
Json GroupEnv(const InferenceDeployment& d, int group) {
  const ParallelismSpec& p = d.spec.parallelism;
  return Json::array({
      EnvValue("ORCA_SCHEDULER_ADDR", SchedulerControlAddress(d.name, d.ns, group)),
      EnvValue("ORCA_RENDEZVOUS_ADDR", RendezvousAddress(d.name, d.ns, group)),
      EnvValue("ORCA_GROUP_INDEX", std::to_string(group)),
      EnvValue("ORCA_TP_SIZE", std::to_string(p.tensor)),
      EnvValue("ORCA_PP_SIZE", std::to_string(p.pipeline)),
      EnvValue("ORCA_WORLD_SIZE", std::to_string(WorldSize(p))),
      EnvValue("ORCA_GPUS_PER_POD", std::to_string(p.gpus_per_pod)),
      EnvField("ORCA_POD_NAME", "metadata.name"),
      EnvField("ORCA_NAMESPACE", "metadata.namespace"),
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

std::string EngineConfigYaml(const InferenceDeployment& d) {
  const InferenceDeploymentSpec& s = d.spec;
  const EngineSpec& e = s.engine;
  Json config = {
      {"model",
       {{"name", s.model.name}, {"dtype", s.model.dtype}, {"dir", ModelDir(s.model_source)}}},
      {"parallelism",
       {{"tensor", s.parallelism.tensor},
        {"pipeline", s.parallelism.pipeline},
        {"gpus_per_pod", s.parallelism.gpus_per_pod},
        {"device", s.parallelism.device}}},
      {"engine",
       {{"max_batch_size", e.max_batch_size},
        {"max_batched_tokens", e.max_batched_tokens},
        {"kv_policy", e.kv_policy},
        {"block_size", e.block_size},
        {"chunked_prefill", e.chunked_prefill},
        {"prefix_caching", e.prefix_caching},
        {"memory_fraction", e.memory_fraction},
        {"scheduling_policy", e.scheduling_policy}}},
  };
  return absl::StrCat("# orca engine configuration of InferenceDeployment ", d.ns, "/", d.name,
                      ", written by orca-controller.\n", ToYaml(config));
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
  Json args = Json::array(
      {"orca", "scheduler", "--config", absl::StrCat(kConfigDir, "/engine.yaml"), "--model-dir",
       ModelDir(s.model_source), "--served-model-name", s.model.name, "--http-port",
       std::to_string(kHttpPort), "--grpc-port", std::to_string(kGrpcPort), "--control-port",
       std::to_string(kControlPort), "--metrics-port", std::to_string(kHttpPort)});
  Json mounts = CommonMounts();
  Json volumes = CommonVolumes(d, revision);
  if (s.api_key) {
    args.push_back("--api-key-file");
    args.push_back(absl::StrCat(kApiKeyDir, "/", s.api_key->key));
    mounts.push_back({{"name", "api-key"}, {"mountPath", kApiKeyDir}, {"readOnly", true}});
    volumes.push_back({{"name", "api-key"}, {"secret", {{"secretName", s.api_key->name}}}});
  }
  Json env = GroupEnv(d, group);
  AppendUserEnv(env, s.scheduler);
  Json container = {
      {"name", "scheduler"},
      {"image", s.image},
      {"imagePullPolicy", s.image_pull_policy},
      {"command", args},
      {"env", env},
      {"ports",
       Json::array({{{"name", "http"}, {"containerPort", kHttpPort}, {"protocol", "TCP"}},
                    {{"name", "grpc"}, {"containerPort", kGrpcPort}, {"protocol", "TCP"}},
                    {{"name", "control"}, {"containerPort", kControlPort}, {"protocol", "TCP"}}})},
      {"readinessProbe", HttpProbe("/ready", "http", 5, 3)},
      {"livenessProbe", HttpProbe("/health", "http", 10, 6)},
      {"startupProbe", HttpProbe("/health", "http", 10, 60)},
      {"volumeMounts", mounts},
  };
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
  Json env = GroupEnv(d, group);
  env.push_back(EnvValue("ORCA_STAGE_INDEX", std::to_string(stage)));
  env.push_back(EnvField("ORCA_POD_ORDINAL", "metadata.labels['apps.kubernetes.io/pod-index']"));
  AppendUserEnv(env, s.worker);
  Json args = Json::array(
      {"orca", "worker", "--scheduler", "$(ORCA_SCHEDULER_ADDR)", "--config",
       absl::StrCat(kConfigDir, "/engine.yaml"), "--model-dir", ModelDir(s.model_source), "--stage",
       "$(ORCA_STAGE_INDEX)", "--pod-index", "$(ORCA_POD_ORDINAL)", "--gpus-per-pod",
       std::to_string(p.gpus_per_pod), "--metrics-port", std::to_string(kWorkerMetricsPort),
       "--data-port", std::to_string(kDataPlanePort)});
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
           {{{"name", "metrics"}, {"containerPort", kWorkerMetricsPort}, {"protocol", "TCP"}},
            {{"name", "data"}, {"containerPort", kDataPlanePort}, {"protocol", "TCP"}}})},
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
