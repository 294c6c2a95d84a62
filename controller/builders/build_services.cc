// Builders of Services, Ingress and autoscaler objects, and the full object lists.
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/builders/builders.h"
#include "controller/builders/layout.h"

namespace orca::controller {
namespace {

Json Port(const std::string& name, int port, const std::string& target) {
  return Json{{"name", name}, {"port", port}, {"targetPort", target}, {"protocol", "TCP"}};
}

Json ScaleTargetRef(const InferenceDeployment& d) {
  return Json{{"apiVersion", kApiVersion}, {"kind", kKind}, {"name", d.name}};
}

}  // namespace

Json BuildSchedulerService(const InferenceDeployment& d, int group) {
  return Json{
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata",
       OwnedMetadata(d, SchedulerName(d.name, group), OwnedLabels(d, group, -1, "scheduler", ""))},
      {"spec",
       {{"type", "ClusterIP"},
        // Workers must reach the control plane before the scheduler is ready.
        {"publishNotReadyAddresses", true},
        {"selector",
         {{kLabelDeployment, d.name},
          {kLabelGroup, std::to_string(group)},
          {kLabelRole, "scheduler"}}},
        {"ports", Json::array({Port("http", kHttpPort, "http"), Port("grpc", kGrpcPort, "grpc"),
                               Port("control", kControlPort, "control")})}}}};
}

Json BuildHeadlessService(const InferenceDeployment& d, int group) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", OwnedMetadata(d, HeadlessServiceName(d.name, group),
                                         OwnedLabels(d, group, -1, "worker", ""))},
              {"spec",
               {{"clusterIP", "None"},
                // Workers reach each other (the data plane) before any pod is ready.
                {"publishNotReadyAddresses", true},
                {"selector",
                 {{kLabelDeployment, d.name},
                  {kLabelGroup, std::to_string(group)},
                  {kLabelRole, "worker"}}},
                {"ports", Json::array({Port("metrics", kWorkerMetricsPort, "metrics")})}}}};
}

Json BuildClientService(const InferenceDeployment& d) {
  const ServiceSpec& s = d.spec.service;
  Json meta = OwnedMetadata(d, d.name, OwnedLabels(d, -1, -1, "", ""));
  if (!s.annotations.is_null()) meta["annotations"] = s.annotations;
  return Json{{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", meta},
              {"spec",
               {{"type", s.type},
                {"selector", {{kLabelDeployment, d.name}, {kLabelRole, "scheduler"}}},
                {"ports",
                 Json::array({Port("http", s.port, "http"), Port("grpc", s.grpc_port, "grpc")})}}}};
}

// With spec.tls the schedulers speak HTTPS only: ingress-nginx must be told to proxy
// over TLS (other controllers have their own annotation, set in ingress.annotations).
constexpr char kNginxBackendProtocol[] = "nginx.ingress.kubernetes.io/backend-protocol";

Json BuildIngress(const InferenceDeployment& d) {
  const IngressSpec& in = d.spec.ingress;
  Json meta = OwnedMetadata(d, d.name, OwnedLabels(d, -1, -1, "", ""));
  if (!in.annotations.is_null()) meta["annotations"] = in.annotations;
  if (d.spec.tls &&
      !(meta.contains("annotations") && meta["annotations"].contains(kNginxBackendProtocol))) {
    meta["annotations"][kNginxBackendProtocol] = "HTTPS";
  }
  Json path = {{"path", in.path},
               {"pathType", in.path_type},
               {"backend", {{"service", {{"name", d.name}, {"port", {{"name", "http"}}}}}}}};
  Json rule = {{"http", {{"paths", Json::array({path})}}}};
  if (!in.host.empty()) rule["host"] = in.host;
  Json spec = {{"rules", Json::array({rule})}};
  if (!in.class_name.empty()) spec["ingressClassName"] = in.class_name;
  if (!in.tls_secret_name.empty()) {
    spec["tls"] =
        Json::array({{{"hosts", Json::array({in.host})}, {"secretName", in.tls_secret_name}}});
  }
  return Json{{"apiVersion", "networking.k8s.io/v1"},
              {"kind", "Ingress"},
              {"metadata", meta},
              {"spec", spec}};
}

Json BuildHorizontalPodAutoscaler(const InferenceDeployment& d) {
  const AutoscalingSpec& a = d.spec.autoscaling;
  Json spec = {
      {"scaleTargetRef", ScaleTargetRef(d)},
      {"minReplicas", a.min_replicas},
      {"maxReplicas", a.max_replicas.value_or(a.min_replicas)},
      // A Pods metric averaged over the scale selector, i.e. over scheduler pods:
      // one value per serving group.
      {"metrics",
       Json::array({{{"type", "Pods"},
                     {"pods",
                      {{"metric", {{"name", a.metric}}},
                       {"target", {{"type", "AverageValue"}, {"averageValue", a.target}}}}}}})}};
  if (!a.behavior.is_null()) spec["behavior"] = a.behavior;
  return Json{{"apiVersion", "autoscaling/v2"},
              {"kind", "HorizontalPodAutoscaler"},
              {"metadata", OwnedMetadata(d, d.name, OwnedLabels(d, -1, -1, "", ""))},
              {"spec", spec}};
}

Json BuildScaledObject(const InferenceDeployment& d) {
  const AutoscalingSpec& a = d.spec.autoscaling;
  std::string query = a.prometheus_query;
  if (query.empty()) {
    query = absl::StrCat("sum(", a.metric, "{namespace=\"", d.ns, "\",pod=~\"", d.name,
                         "-g[0-9]+-scheduler-.*\"})");
  }
  Json spec = {{"scaleTargetRef", ScaleTargetRef(d)},
               {"minReplicaCount", a.min_replicas},
               {"maxReplicaCount", a.max_replicas.value_or(a.min_replicas)},
               {"pollingInterval", 15},
               // AverageValue: KEDA's HPA divides the query result by the number of groups.
               {"triggers", Json::array({{{"type", "prometheus"},
                                          {"metricType", "AverageValue"},
                                          {"metadata",
                                           {{"serverAddress", a.prometheus_server},
                                            {"query", query},
                                            {"threshold", a.target}}}}})}};
  if (!a.behavior.is_null()) {
    spec["advanced"] = {{"horizontalPodAutoscalerConfig", {{"behavior", a.behavior}}}};
  }
  return Json{{"apiVersion", "keda.sh/v1alpha1"},
              {"kind", "ScaledObject"},
              {"metadata", OwnedMetadata(d, d.name, OwnedLabels(d, -1, -1, "", ""))},
              {"spec", spec}};
}

std::vector<Json> BuildGroupObjects(const InferenceDeployment& d, int group,
                                    const std::string& revision) {
  std::vector<Json> out = {BuildHeadlessService(d, group), BuildSchedulerService(d, group),
                           BuildSchedulerDeployment(d, group, revision)};
  for (int s = 0; s < d.spec.parallelism.pipeline; ++s) {
    out.push_back(BuildWorkerStatefulSet(d, group, s, revision));
  }
  return out;
}

std::vector<Json> BuildSharedObjects(const InferenceDeployment& d) {
  std::vector<Json> out = {BuildClientService(d)};
  if (d.spec.ingress.enabled) out.push_back(BuildIngress(d));
  if (d.spec.routing.inference_pool.enabled) out.push_back(BuildInferencePool(d));
  if (d.spec.autoscaling.enabled) {
    out.push_back(d.spec.autoscaling.backend == "KEDA" ? BuildScaledObject(d)
                                                       : BuildHorizontalPodAutoscaler(d));
  }
  return out;
}

std::vector<Json> BuildAllObjects(const InferenceDeployment& d) {
  std::string revision = RevisionHash(d.spec);
  std::vector<Json> out = {BuildEngineConfigMap(d, revision)};
  for (Json& o : BuildSharedObjects(d)) out.push_back(std::move(o));
  for (int g = 0; g < d.spec.replicas; ++g) {
    for (Json& o : BuildGroupObjects(d, g, revision)) out.push_back(std::move(o));
  }
  return out;
}

}  // namespace orca::controller
