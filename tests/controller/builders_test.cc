#include "controller/builders/builders.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/builders/layout.h"
#include "engine/config/config_loader.h"
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
  // Canonical quantity strings, as the API server returns them (not the integer 4).
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "4");
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

// The Secret volume mounted at `path` in `workload`'s pod (null when none), and whether
// the mount is read-only.
Json SecretMountedAt(const Json& workload, const std::string& path, bool* read_only) {
  const Json& pod = workload["spec"]["template"]["spec"];
  for (const Json& m : pod["containers"][0]["volumeMounts"]) {
    if (m["mountPath"] != path) continue;
    *read_only = m.value("readOnly", false);
    for (const Json& v : pod["volumes"]) {
      if (v["name"] == m["name"]) return v.value("secret", Json());
    }
  }
  return Json();
}

TEST(BuildersTest, ControlPlaneTokenReachesTheSchedulerAndEveryWorker) {
  InferenceDeployment d =
      Parse(CrBuilder()
                .Pipeline(2)
                .Set("/spec/controlPlane/tokenSecretRef", Json{{"name", "ctl"}, {"key", "shared"}})
                .Build());
  EXPECT_THAT(EngineConfigYaml(d),
              ::testing::HasSubstr("control_token_file: \"/etc/orca/control-token/shared\""));
  for (const Json& w : {BuildSchedulerDeployment(d, 0, "r"), BuildWorkerStatefulSet(d, 0, 0, "r"),
                        BuildWorkerStatefulSet(d, 0, 1, "r")}) {
    SCOPED_TRACE(w["metadata"]["name"].get<std::string>());
    bool read_only = false;
    EXPECT_EQ(SecretMountedAt(w, "/etc/orca/control-token", &read_only),
              (Json{{"secretName", "ctl"}}));
    EXPECT_TRUE(read_only);
  }
  // Without it: nothing mounted, the setting empty.
  InferenceDeployment plain = Parse(CrBuilder().Build());
  bool read_only = false;
  EXPECT_TRUE(SecretMountedAt(BuildWorkerStatefulSet(plain, 0, 0, "r"), "/etc/orca/control-token",
                              &read_only)
                  .is_null());
  EXPECT_THAT(EngineConfigYaml(plain), ::testing::HasSubstr("control_token_file: \"\""));
}

TEST(BuildersTest, TlsServesHttpsFromTheSecretAndProbesOverHttps) {
  InferenceDeployment d =
      Parse(CrBuilder().Set("/spec/tls/secretName", "cert").Ingress("llm.example.com").Build());
  const std::string yaml = EngineConfigYaml(d);
  EXPECT_THAT(yaml, ::testing::HasSubstr("tls_cert_file: \"/etc/orca/tls/tls.crt\""));
  EXPECT_THAT(yaml, ::testing::HasSubstr("tls_key_file: \"/etc/orca/tls/tls.key\""));
  Json dep = BuildSchedulerDeployment(d, 0, "r");
  bool read_only = false;
  EXPECT_EQ(SecretMountedAt(dep, "/etc/orca/tls", &read_only), (Json{{"secretName", "cert"}}));
  EXPECT_TRUE(read_only);
  const Json& c = dep["spec"]["template"]["spec"]["containers"][0];
  for (const char* probe : {"readinessProbe", "livenessProbe", "startupProbe"}) {
    EXPECT_EQ(c[probe]["httpGet"]["scheme"], "HTTPS") << probe;
  }
  // Workers serve no public API: no certificate, their metrics probes stay HTTP.
  Json sts = BuildWorkerStatefulSet(d, 0, 0, "r");
  EXPECT_TRUE(SecretMountedAt(sts, "/etc/orca/tls", &read_only).is_null());
  EXPECT_FALSE(
      sts["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"].contains(
          "scheme"));
  // ingress-nginx proxies to the schedulers over HTTPS, unless told otherwise.
  EXPECT_EQ(
      BuildIngress(d)["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"],
      "HTTPS");
  InferenceDeployment own =
      Parse(CrBuilder()
                .Set("/spec/tls/secretName", "cert")
                .Ingress("llm.example.com")
                .Set("/spec/ingress/annotations",
                     Json{{"nginx.ingress.kubernetes.io/backend-protocol", "GRPCS"}})
                .Build());
  EXPECT_EQ(
      BuildIngress(own)["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"],
      "GRPCS");
  // Without TLS: plain probes, no annotation.
  InferenceDeployment plain = Parse(CrBuilder().Ingress("llm.example.com").Build());
  EXPECT_FALSE(
      BuildSchedulerDeployment(
          plain, 0, "r")["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]
          .contains("scheme"));
  EXPECT_FALSE(BuildIngress(plain)["metadata"].contains("annotations"));
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

// Returns engine.yaml of `d` as the engine itself reads it (its own parser).
EngineConfig EngineYamlOf(const InferenceDeployment& d) {
  EngineConfig c;
  absl::Status s = ApplyEngineYaml(EngineConfigYaml(d), "engine.yaml", c);
  EXPECT_TRUE(s.ok()) << s;
  return c;
}

// The pod templates of every scheduler Deployment and worker StatefulSet of `objects`.
std::vector<Json> PodSpecs(const std::vector<Json>& objects) {
  std::vector<Json> out;
  for (const Json& o : objects) {
    if (o["kind"] == "Deployment" || o["kind"] == "StatefulSet") {
      out.push_back(o["spec"]["template"]["spec"]);
    }
  }
  return out;
}

Json VolumeNamed(const Json& pod_spec, const std::string& name) {
  for (const Json& v : pod_spec["volumes"]) {
    if (v["name"] == name) return v;
  }
  return Json();
}

// parallelism.pipelineLayers reaches the scheduler's engine.yaml as the engine spells it;
// unset, the key is not written at all (an older engine image refuses unknown keys, and a
// controller upgrade must not change the ConfigMap of a deployment that does not use it).
TEST(BuildersTest, PipelineLayersAreWrittenOnlyWhenSet) {
  InferenceDeployment d =
      Parse(CrBuilder().Pipeline(2).Set("/spec/parallelism/pipelineLayers", Json{17, 15}).Build());
  EXPECT_EQ(EngineYamlOf(d).parallel.pipeline_layers, "17,15");
  InferenceDeployment plain = Parse(CrBuilder().Pipeline(2).Build());
  EXPECT_THAT(EngineConfigYaml(plain), ::testing::Not(::testing::HasSubstr("pipeline_layers")));
  EXPECT_EQ(EngineYamlOf(plain).parallel.pipeline_layers, "");
}

TEST(BuildersTest, HuggingFaceModelIsPulledByEveryPod) {
  InferenceDeployment d =
      Parse(CrBuilder()
                .Pipeline(2)
                .ModelUri("hf://Qwen/Qwen2.5-0.5B@main")
                .TokenSecret("hub-token")
                .Set("/spec/model/downloadSizeLimit", "20480Mi")
                .WorkerEnv("HF_ENDPOINT", "http://mirror.local")
                .Set("/spec/scheduler/env",
                     Json::array({{{"name", "HTTPS_PROXY"}, {"value", "http://proxy:3128"}}}))
                .Build());
  EXPECT_EQ(EngineYamlOf(d).model.dir, "/models/pulled");
  std::vector<Json> pods = PodSpecs(BuildAllObjects(d));
  ASSERT_EQ(pods.size(), 3u);  // the scheduler (it loads the tokenizer) and two stages
  for (const Json& pod : pods) {
    const Json& main = pod["containers"][0];
    SCOPED_TRACE(main["name"].dump());
    ASSERT_EQ(pod["initContainers"].size(), 1u);
    const Json& pull = pod["initContainers"][0];
    EXPECT_EQ(pull["name"], "pull-model");
    EXPECT_EQ(pull["image"], main["image"]);
    EXPECT_EQ(pull["imagePullPolicy"], main["imagePullPolicy"]);
    EXPECT_EQ(pull["command"], Json::array({"orca", "model", "pull", "hf://Qwen/Qwen2.5-0.5B@main",
                                            "/models/pulled"}));
    EXPECT_EQ(EnvOf(pull, "HF_TOKEN")["valueFrom"]["secretKeyRef"],
              (Json{{"name", "hub-token"}, {"key", "token"}}));
    if (main["name"] == "worker") {
      EXPECT_EQ(EnvOf(pull, "HF_ENDPOINT")["value"], "http://mirror.local");
      EXPECT_TRUE(EnvOf(pull, "HTTPS_PROXY").is_null());
    } else {
      EXPECT_EQ(EnvOf(pull, "HTTPS_PROXY")["value"], "http://proxy:3128");
    }
    // The pull writes into the volume the main container reads, read-only, at /models.
    EXPECT_EQ(pull["volumeMounts"], Json::array({{{"name", "model"}, {"mountPath", "/models"}}}));
    EXPECT_THAT(main["volumeMounts"],
                Contains(Json{{"name", "model"}, {"mountPath", "/models"}, {"readOnly", true}}));
    EXPECT_EQ(VolumeNamed(pod, "model"),
              (Json{{"name", "model"}, {"emptyDir", {{"sizeLimit", "20Gi"}}}}));
  }
}

TEST(BuildersTest, HttpsArchiveIsVerifiedAndMountedModelsAreNotPulled) {
  const std::string sha(64, 'f');
  InferenceDeployment d = Parse(
      CrBuilder().ModelUri("https://h.example/m.tar.gz").Set("/spec/model/sha256", sha).Build());
  Json pod = BuildWorkerStatefulSet(d, 0, 0, "r")["spec"]["template"]["spec"];
  EXPECT_EQ(pod["initContainers"][0]["command"],
            Json::array({"orca", "model", "pull", "https://h.example/m.tar.gz", "/models/pulled",
                         "--sha256", sha}));
  EXPECT_FALSE(pod["initContainers"][0].contains("env"));
  EXPECT_EQ(VolumeNamed(pod, "model"), (Json{{"name", "model"}, {"emptyDir", Json::object()}}));

  for (const char* uri : {"pvc://models/tiny", "hostpath:///mnt/m"}) {
    InferenceDeployment m = Parse(CrBuilder().ModelUri(uri).Build());
    for (const Json& p : PodSpecs(BuildAllObjects(m))) {
      EXPECT_FALSE(p.contains("initContainers")) << uri;
    }
  }
}

TEST(BuildersTest, LifecycleReachesPodsAndEngineYaml) {
  InferenceDeployment d = Parse(CrBuilder()
                                    .Set("/spec/lifecycle/terminationGracePeriodSeconds", 120)
                                    .Set("/spec/lifecycle/preStopSleepSeconds", 7)
                                    .Set("/spec/lifecycle/drainSeconds", 100)
                                    .Set("/spec/lifecycle/joinTimeoutSeconds", 600)
                                    .Build());
  EngineConfig c = EngineYamlOf(d);
  EXPECT_DOUBLE_EQ(c.server.shutdown_timeout_s, 100);
  EXPECT_DOUBLE_EQ(c.worker.join_timeout_s, 600);
  Json sched = BuildSchedulerDeployment(d, 0, "r")["spec"]["template"]["spec"];
  Json worker = BuildWorkerStatefulSet(d, 0, 0, "r")["spec"]["template"]["spec"];
  EXPECT_EQ(sched["terminationGracePeriodSeconds"], 120);
  EXPECT_EQ(worker["terminationGracePeriodSeconds"], 120);
  EXPECT_EQ(sched["containers"][0]["lifecycle"]["preStop"]["exec"]["command"],
            Json::array({"orca", "pre-stop", "--seconds", "7"}));
  EXPECT_FALSE(worker["containers"][0].contains("lifecycle"));
  // The worker's startup probe allows the join timeout plus loading the weights.
  const Json& startup = worker["containers"][0]["startupProbe"];
  int startup_seconds =
      startup["periodSeconds"].get<int>() * startup["failureThreshold"].get<int>();
  EXPECT_GE(startup_seconds, 600 + 900);
  // Liveness catches a worker whose /health turned 503 within half a minute.
  const Json& live = worker["containers"][0]["livenessProbe"];
  EXPECT_LE(live["periodSeconds"].get<int>() * live["failureThreshold"].get<int>(), 30);

  InferenceDeployment no_sleep =
      Parse(CrBuilder().Set("/spec/lifecycle/preStopSleepSeconds", 0).Build());
  EXPECT_FALSE(
      BuildSchedulerDeployment(no_sleep, 0, "r")["spec"]["template"]["spec"]["containers"][0]
          .contains("lifecycle"));
  // Defaults: 60 s grace, 45 s drain, 300 s join timeout.
  InferenceDeployment def = Parse(CrBuilder().Build());
  EXPECT_EQ(BuildWorkerStatefulSet(
                def, 0, 0, "r")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
            60);
  EXPECT_DOUBLE_EQ(EngineYamlOf(def).server.shutdown_timeout_s, 45);
  EXPECT_DOUBLE_EQ(EngineYamlOf(def).worker.join_timeout_s, 300);
}

// Returns whether a matchLabels selector selects an object with `labels`.
bool Selects(const Json& match_labels, const Json& labels) {
  for (const auto& [k, v] : match_labels.items()) {
    if (!labels.contains(k) || labels[k] != v) return false;
  }
  return true;
}

TEST(BuildersTest, InferencePoolSelectsOnlySchedulersOnTheServingPort) {
  InferenceDeployment d =
      Parse(CrBuilder("llm", "prod")
                .Replicas(3)
                .Pipeline(2)
                .InferencePool("llm-epp")
                .Set("/spec/routing/inferencePool/endpointPicker/failureMode", "FailOpen")
                .Build());
  Json pool = BuildInferencePool(d);
  EXPECT_EQ(pool["apiVersion"], "inference.networking.k8s.io/v1");
  EXPECT_EQ(pool["kind"], "InferencePool");
  EXPECT_EQ(pool["metadata"]["name"], "llm");
  EXPECT_EQ(pool["metadata"]["namespace"], "prod");
  EXPECT_EQ(pool["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(pool["spec"]["endpointPickerRef"], (Json{{"kind", "Service"},
                                                     {"name", "llm-epp"},
                                                     {"port", {{"number", 9002}}},
                                                     {"failureMode", "FailOpen"}}));

  // Against the rendered pods: every group's scheduler and no worker; the target port
  // is the scheduler container's serving (http) port.
  std::vector<Json> all = BuildAllObjects(d);
  int pools = 0;
  int schedulers = 0;
  for (const Json& o : all) {
    if (o["kind"] == "InferencePool") ++pools;
    if (o["kind"] != "Deployment" && o["kind"] != "StatefulSet") continue;
    const Json& labels = o["spec"]["template"]["metadata"]["labels"];
    const Json& c = o["spec"]["template"]["spec"]["containers"][0];
    bool scheduler = c["name"] == "scheduler";
    EXPECT_EQ(Selects(pool["spec"]["selector"]["matchLabels"], labels), scheduler)
        << o["metadata"]["name"];
    if (!scheduler) continue;
    ++schedulers;
    Json http;
    for (const Json& p : c["ports"]) {
      if (p["name"] == "http") http = p;
    }
    EXPECT_EQ(pool["spec"]["targetPorts"], Json::array({{{"number", http["containerPort"]}}}));
  }
  EXPECT_EQ(pools, 1);
  EXPECT_EQ(schedulers, 3);
  // Another deployment's schedulers are not selected.
  InferenceDeployment other = Parse(CrBuilder("other", "prod").Build());
  EXPECT_FALSE(
      Selects(pool["spec"]["selector"]["matchLabels"],
              BuildSchedulerDeployment(other, 0, "r")["spec"]["template"]["metadata"]["labels"]));
  // Not rendered unless enabled.
  for (const Json& o : BuildAllObjects(Parse(CrBuilder().Build()))) {
    EXPECT_NE(o["kind"], "InferencePool");
  }
}

TEST(BuildersTest, RendersQuantitiesInCanonicalForm) {
  InferenceDeployment d = Parse(CrBuilder()
                                    .Set("/spec/worker/resources/limits/memory", "65536Mi")
                                    .Set("/spec/worker/resources/requests/cpu", 4)
                                    .Set("/spec/worker/resources/requests/memory", "0.5Gi")
                                    .Set("/spec/scheduler/resources/requests/cpu", "1500m")
                                    .Set("/spec/scheduler/resources/limits/cpu", "2000m")
                                    .ModelUri("hf://o/m")
                                    .Set("/spec/model/downloadSizeLimit", 1073741824)
                                    .Build());
  Json w = BuildWorkerStatefulSet(d, 0, 0, "r")["spec"]["template"]["spec"];
  EXPECT_EQ(w["containers"][0]["resources"],
            (Json{{"limits", {{"memory", "64Gi"}, {"nvidia.com/gpu", "1"}}},
                  {"requests", {{"cpu", "4"}, {"memory", "512Mi"}}}}));
  EXPECT_EQ(VolumeNamed(w, "model")["emptyDir"]["sizeLimit"], "1073741824");
  Json s = BuildSchedulerDeployment(d, 0, "r")["spec"]["template"]["spec"];
  EXPECT_EQ(s["containers"][0]["resources"],
            (Json{{"limits", {{"cpu", "2"}}}, {"requests", {{"cpu", "1500m"}}}}));
}

TEST(BuildersTest, BuildersAreDeterministic) {
  InferenceDeployment d = Parse(CrBuilder().Replicas(2).Build());
  EXPECT_EQ(Json(BuildAllObjects(d)).dump(), Json(BuildAllObjects(d)).dump());
}

}  // namespace
}  // namespace orca::controller
