#include "controller/builders/builders.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/builders/layout.h"
#include "tests/controller/cr_builder.h"

namespace orca::controller {
namespace {

using ::testing::Contains;
using testing::CrBuilder;

InferenceDeployment Parse(const Json& cr) {
  auto d = ParseInferenceDeployment(cr);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : InferenceDeployment{};
}

Json EnvOf(const Json& container, const std::string& name) {
  for (const Json& e : container["env"]) {
    if (e["name"] == name) return e;
  }
  return Json();
}

TEST(BuildersTest, WorkerStatefulSetCarriesRankLayout) {
  InferenceDeployment d = Parse(CrBuilder("llm", "ns").Tensor(8).Pipeline(2).GpusPerPod(4).Build());
  Json sts = BuildWorkerStatefulSet(d, 1, 1, "rev");
  EXPECT_EQ(sts["metadata"]["name"], "llm-g1-s1");
  EXPECT_EQ(sts["spec"]["replicas"], 2);
  EXPECT_EQ(sts["spec"]["serviceName"], "llm-g1-workers");
  EXPECT_EQ(sts["spec"]["podManagementPolicy"], "Parallel");
  EXPECT_EQ(sts["spec"]["updateStrategy"]["type"], "OnDelete");
  const Json& labels = sts["spec"]["template"]["metadata"]["labels"];
  EXPECT_EQ(labels[kLabelGroup], "1");
  EXPECT_EQ(labels[kLabelStage], "1");
  EXPECT_EQ(labels[kLabelRole], "worker");
  EXPECT_EQ(labels[kLabelRevision], "rev");
  EXPECT_FALSE(sts["spec"]["selector"]["matchLabels"].contains(kLabelRevision))
      << "selectors are immutable: the revision must not be part of them";
  const Json& c = sts["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(EnvOf(c, "ORCA_SCHEDULER_ADDR")["value"], "llm-g1-scheduler.ns.svc:8002");
  EXPECT_EQ(EnvOf(c, "ORCA_STAGE_INDEX")["value"], "1");
  // Only what the command line expands or the worker reads itself (no unread env).
  std::vector<std::string> names;
  for (const Json& e : c["env"]) names.push_back(e["name"]);
  EXPECT_THAT(names,
              ::testing::UnorderedElementsAre("ORCA_SCHEDULER_ADDR", "ORCA_STAGE_INDEX",
                                              "ORCA_POD_ORDINAL", "ORCA_POD_NAME", "ORCA_POD_IP"));
  EXPECT_EQ(EnvOf(c, "ORCA_POD_ORDINAL")["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.labels['apps.kubernetes.io/pod-index']");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], 4);
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/health");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"], "metrics");
  EXPECT_THAT(c["command"], Contains("$(ORCA_SCHEDULER_ADDR)"));
  EXPECT_EQ(sts["metadata"]["ownerReferences"][0]["controller"], true);
}

TEST(BuildersTest, CpuDeviceRequestsNoGpu) {
  InferenceDeployment d = Parse(CrBuilder().Set("/spec/parallelism/device", "cpu").Build());
  Json c = BuildWorkerStatefulSet(d, 0, 0, "r")["spec"]["template"]["spec"]["containers"][0];
  EXPECT_FALSE(c.contains("resources"));
}

TEST(BuildersTest, SchedulerDeploymentProbesAndApiKey) {
  InferenceDeployment d = Parse(CrBuilder().Set("/spec/apiKeySecretRef/name", "key").Build());
  Json dep = BuildSchedulerDeployment(d, 0, "r");
  EXPECT_EQ(dep["spec"]["replicas"], 1);
  EXPECT_EQ(dep["spec"]["strategy"]["type"], "Recreate");
  const Json& c = dep["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/ready");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/health");
  // The key file's path is in engine.yaml; the Secret is mounted where it points.
  EXPECT_THAT(EngineConfigYaml(d),
              ::testing::HasSubstr("api_key_file: \"/etc/orca/api-key/api-key\""));
  bool mounted = false;
  for (const Json& m : c["volumeMounts"]) mounted |= m["mountPath"] == "/etc/orca/api-key";
  EXPECT_TRUE(mounted);
  EXPECT_EQ(dep["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"], "demo-engine-r");
}

TEST(BuildersTest, ServicesPublishNotReadyAddresses) {
  InferenceDeployment d = Parse(CrBuilder().Build());
  EXPECT_EQ(BuildHeadlessService(d, 0)["spec"]["clusterIP"], "None");
  EXPECT_EQ(BuildHeadlessService(d, 0)["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(BuildSchedulerService(d, 0)["spec"]["publishNotReadyAddresses"], true);
  Json client = BuildClientService(d);
  EXPECT_FALSE(client["spec"].contains("publishNotReadyAddresses"));
  EXPECT_EQ(client["spec"]["selector"][kLabelRole], "scheduler");
}

TEST(BuildersTest, AutoscalersTargetTheScaleSubresource) {
  InferenceDeployment d = Parse(CrBuilder().Autoscaling("HPA", 1, 4).Build());
  Json hpa = BuildHorizontalPodAutoscaler(d);
  EXPECT_EQ(hpa["spec"]["scaleTargetRef"]["kind"], "InferenceDeployment");
  EXPECT_EQ(hpa["spec"]["maxReplicas"], 4);
  EXPECT_EQ(hpa["spec"]["metrics"][0]["pods"]["metric"]["name"], "orca_num_requests_waiting");
  Json so = BuildScaledObject(d);
  EXPECT_EQ(so["spec"]["triggers"][0]["type"], "prometheus");
  EXPECT_EQ(
      so["spec"]["triggers"][0]["metadata"]["query"],
      "sum(orca_num_requests_waiting{namespace=\"default\",pod=~\"demo-g[0-9]+-scheduler-.*\"})");
}

TEST(BuildersTest, AllObjectsCountsMatchShape) {
  InferenceDeployment d =
      Parse(CrBuilder().Replicas(3).Pipeline(2).Ingress("a.example.com").Build());
  std::vector<Json> all = BuildAllObjects(d);
  // ConfigMap + client Service + Ingress + 3 x (2 Services + Deployment + 2 StatefulSets).
  EXPECT_EQ(all.size(), 3u + 3u * 5u);
  EXPECT_EQ(all[0]["kind"], "ConfigMap");
}

TEST(BuildersTest, BuildersAreDeterministic) {
  InferenceDeployment d = Parse(CrBuilder().Replicas(2).Build());
  EXPECT_EQ(Json(BuildAllObjects(d)).dump(), Json(BuildAllObjects(d)).dump());
}

}  // namespace
}  // namespace orca::controller
