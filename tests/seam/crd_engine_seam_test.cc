// The seam between orca-controller and the engine (docs/configuration.md): every
// InferenceDeployment field that configures the engine must arrive, with its value, in
// the process that uses it.
//
// For every CRD example and a matrix of spec variations, the controller's own code
// renders the objects; the rendered engine.yaml is written where the pods mount it, and
// each pod's command line (with $(VAR) expanded from its env, as the kubelet does) is fed
// to the engine's own parser for that role (ParseCommandLine). The configuration each
// process ends up with is compared with the CR's value of every field, read from the
// parsed spec — not from the controller's mapping. The real `orca config check` is run
// on every rendered engine.yaml too. A completeness check fails when the CRD grows an
// engine field this table does not carry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/api/spec.h"
#include "controller/api/yaml.h"
#include "controller/builders/builders.h"
#include "engine/config/config_loader.h"
#include "tests/controller/cr_builder.h"
#include "tests/testutil/testutil.h"

namespace orca {
namespace {

using controller::InferenceDeployment;
using controller::InferenceDeploymentSpec;
using controller::Json;
using controller::testing::CrBuilder;

constexpr char kEngineYaml[] = "/etc/orca/engine.yaml";

// One CRD field, how the processes must see it, and values to vary it through.
struct Field {
  std::string path;         // JSON pointer in the CR
  std::vector<Role> roles;  // the processes that use it
  // The CR's value (defaults applied), from the parsed spec, in the engine's spelling.
  std::function<Json(const InferenceDeploymentSpec&)> want;
  // What a process configured with `c` has.
  std::function<Json(const EngineConfig&)> got;
  // Non-default values, each with the other fields it needs to satisfy the CRD's rules.
  std::vector<std::pair<Json, std::map<std::string, Json>>> variations;
};

// Where the processes find the checkpoint: under the mount, or where `orca model pull`
// (the pull-model init container) wrote it.
constexpr char kPulledDir[] = "/models/pulled";

std::string ModelDirOf(const InferenceDeploymentSpec& s) {
  const auto& src = s.model_source;
  if (controller::IsPulled(src)) return kPulledDir;
  if (src.kind == controller::ModelSource::Kind::kPvc && !src.path.empty()) {
    return "/models/" + src.path;
  }
  return "/models";
}

std::vector<Field> Fields() {
  const std::vector<Role> kScheduler = {Role::kScheduler};
  const std::vector<Role> kWorker = {Role::kWorker};
  const std::vector<Role> kBoth = {Role::kScheduler, Role::kWorker};
  return {
      {"/spec/model/name",
       kScheduler,
       [](auto& s) { return Json(s.model.name); },
       [](auto& c) { return Json(c.model.served_name); },
       {{"another-name", {}}}},
      {"/spec/model/uri",
       kBoth,
       [](auto& s) { return Json(ModelDirOf(s)); },
       [](auto& c) { return Json(c.model.dir); },
       {{"pvc://weights/org/model-7b", {}},
        {"pvc://weights", {}},
        {"hostpath:///data/m", {}},
        {"hf://org/model-7b@main", {}},
        {"https://models.example.com/m.tar.gz", {}}}},
      {"/spec/model/dtype",
       kWorker,
       [](auto& s) { return Json(s.model.dtype); },
       [](auto& c) { return Json(std::string(WeightDTypeName(c.model.dtype))); },
       {{"float32", {}}, {"float16", {}}, {"bfloat16", {}}}},
      {"/spec/parallelism/tensor",
       kBoth,
       [](auto& s) { return Json(s.parallelism.tensor); },
       [](auto& c) { return Json(c.parallel.tensor); },
       {{2, {}}, {8, {}}}},
      {"/spec/parallelism/pipeline",
       kBoth,
       [](auto& s) { return Json(s.parallelism.pipeline); },
       [](auto& c) { return Json(c.parallel.pipeline); },
       {{2, {}}, {3, {}}}},
      {"/spec/parallelism/pipelineLayers",
       kScheduler,  // the scheduler splits the layers and sends each rank its share
       [](auto& s) { return Json(absl::StrJoin(s.parallelism.pipeline_layers, ",")); },
       [](auto& c) { return Json(c.parallel.pipeline_layers); },
       {{Json{3, 1}, {{"/spec/parallelism/pipeline", 2}}},
        {Json{2, 5, 3}, {{"/spec/parallelism/pipeline", 3}}}}},
      {"/spec/parallelism/gpusPerPod",
       kWorker,
       [](auto& s) { return Json(s.parallelism.gpus_per_pod); },
       [](auto& c) { return Json(c.parallel.gpus_per_pod); },
       {{2, {{"/spec/parallelism/tensor", 4}}}, {4, {{"/spec/parallelism/tensor", 8}}}}},
      {"/spec/parallelism/device",
       kBoth,
       [](auto& s) { return Json(s.parallelism.device == "gpu" ? "cuda" : s.parallelism.device); },
       [](auto& c) { return Json(std::string(DeviceName(c.device.type))); },
       {{"cpu", {}}}},
      {"/spec/engine/maxBatchSize",
       kScheduler,
       [](auto& s) { return Json(s.engine.max_batch_size); },
       [](auto& c) { return Json(c.scheduler.max_batch_size); },
       {{1, {}}, {256, {}}}},
      {"/spec/engine/maxBatchedTokens",
       kScheduler,
       [](auto& s) { return Json(s.engine.max_batched_tokens); },
       [](auto& c) { return Json(c.scheduler.max_batched_tokens); },
       {{64, {}}, {16384, {}}}},
      {"/spec/engine/kvPolicy",
       kScheduler,
       [](auto& s) { return Json(s.engine.kv_policy); },
       [](auto& c) { return Json(std::string(KvPolicyName(c.scheduler.kv_policy))); },
       {{"reserve", {}}}},
      {"/spec/engine/blockSize",
       kScheduler,
       [](auto& s) { return Json(s.engine.block_size); },
       [](auto& c) { return Json(c.kv_cache.block_size); },
       {{8, {}}, {32, {}}, {128, {}}}},
      {"/spec/engine/chunkedPrefill",
       kScheduler,
       [](auto& s) { return Json(s.engine.chunked_prefill); },
       [](auto& c) { return Json(c.scheduler.chunked_prefill); },
       {{false, {}}}},
      {"/spec/engine/prefixCaching",
       kScheduler,
       [](auto& s) { return Json(s.engine.prefix_caching); },
       [](auto& c) { return Json(c.scheduler.prefix_caching); },
       {{true, {}}}},
      {"/spec/engine/memoryFraction",
       kWorker,
       [](auto& s) { return Json(s.engine.memory_fraction); },
       [](auto& c) { return Json(c.device.memory_fraction); },
       {{0.5, {}}, {0.05, {}}}},
      {"/spec/engine/schedulingPolicy",
       kScheduler,
       [](auto& s) { return Json(s.engine.scheduling_policy); },
       [](auto& c) { return Json(std::string(SchedulingPolicyName(c.scheduler.policy))); },
       {{"request", {}}}},
      {"/spec/engine/targetItlMs",
       kScheduler,
       [](auto& s) { return Json(s.engine.target_itl_ms); },
       [](auto& c) { return Json(c.scheduler.target_itl_ms); },
       {{100, {}}, {12.5, {}}}},
      {"/spec/lifecycle/drainSeconds",
       kBoth,  // the scheduler drains this long; a worker waits it (plus a margin) for the end
       [](auto& s) { return Json(static_cast<double>(s.lifecycle.drain_seconds)); },
       [](auto& c) { return Json(c.server.shutdown_timeout_s); },
       {{10, {}}, {100, {{"/spec/lifecycle/terminationGracePeriodSeconds", 120}}}}},
      {"/spec/lifecycle/joinTimeoutSeconds",
       kWorker,
       [](auto& s) { return Json(static_cast<double>(s.lifecycle.join_timeout_seconds)); },
       [](auto& c) { return Json(c.worker.join_timeout_s); },
       {{60, {}}}},
      {"/spec/apiKeySecretRef",
       kScheduler,
       [](auto& s) {
         return Json(s.api_key ? "/etc/orca/api-key/" + s.api_key->key : std::string());
       },
       [](auto& c) { return Json(c.server.api_key_file); },
       {{Json{{"name", "keys"}, {"key", "token"}}, {}}, {Json{{"name", "keys"}}, {}}}},
      {"/spec/controlPlane/tokenSecretRef",
       kBoth,  // the scheduler checks the token, every worker sends it
       [](auto& s) {
         const auto& t = s.control_plane.token_secret;
         return Json(t ? "/etc/orca/control-token/" + t->key : std::string());
       },
       [](auto& c) { return Json(c.parallel.control_token_file); },
       {{Json{{"name", "ctl"}}, {}}, {Json{{"name", "ctl"}, {"key", "shared.token"}}, {}}}},
      {"/spec/tls",
       kScheduler,  // a kubernetes.io/tls Secret: tls.crt and tls.key
       [](auto& s) {
         return s.tls ? Json::array({"/etc/orca/tls/tls.crt", "/etc/orca/tls/tls.key"})
                      : Json::array({"", ""});
       },
       [](auto& c) {
         return Json::array({c.server.tls_cert_file, c.server.tls_key_file});
       },
       {{Json{{"secretName", "cert"}}, {}}}},
  };
}

// The settings that name a file from a Secret, and the roles that read it: the file must
// be inside one of the pod's mounts (else the process fails to start).
struct SecretFile {
  const char* setting;
  std::vector<Role> roles;
  std::function<std::string(const EngineConfig&)> path;
};
std::vector<SecretFile> SecretFiles() {
  return {
      {"server.api_key_file", {Role::kScheduler}, [](auto& c) { return c.server.api_key_file; }},
      {"server.tls_cert_file", {Role::kScheduler}, [](auto& c) { return c.server.tls_cert_file; }},
      {"server.tls_key_file", {Role::kScheduler}, [](auto& c) { return c.server.tls_key_file; }},
      {"parallelism.control_token_file",
       {Role::kScheduler, Role::kWorker},
       [](auto& c) { return c.parallel.control_token_file; }},
  };
}

// One pod as the kubelet would start it: its role, argv after the role, mounts.
struct Pod {
  std::string name;
  Role role;
  std::vector<std::string> args;
  std::vector<std::string> mounts;  // the container's mount paths
  int group = -1;
  int stage = -1;
};

const Json& Container(const Json& workload) {
  return workload["spec"]["template"]["spec"]["containers"][0];
}

// Expands $(VAR) from the container's env values plus `extra` (fieldRef values).
std::string Expand(const std::string& arg, const std::map<std::string, std::string>& vars) {
  std::string out = arg;
  std::smatch m;
  while (std::regex_search(out, m, std::regex(R"(\$\((\w+)\))"))) {
    auto it = vars.find(m[1]);
    EXPECT_NE(it, vars.end()) << "the command refers to $(" << m[1] << "), which no env sets";
    out.replace(m.position(0), m.length(0), it == vars.end() ? "" : it->second);
  }
  return out;
}

std::vector<Pod> PodsOf(const std::vector<Json>& objects, const std::string& yaml_path) {
  std::vector<Pod> pods;
  for (const Json& o : objects) {
    if (o["kind"] != "Deployment" && o["kind"] != "StatefulSet") continue;
    const Json& c = Container(o);
    std::map<std::string, std::string> env;
    if (c.contains("env")) {
      for (const Json& e : c["env"]) {
        if (e.contains("value")) env[e["name"]] = e["value"];
      }
    }
    // The engine.yaml mount: the ConfigMap volume at /etc/orca.
    bool mounted = false;
    std::vector<std::string> mounts;
    for (const Json& m : c["volumeMounts"]) {
      mounted |= m["mountPath"] == "/etc/orca";
      mounts.push_back(m["mountPath"]);
    }
    EXPECT_TRUE(mounted) << o["metadata"]["name"] << " does not mount /etc/orca";
    const std::vector<std::string> command = c["command"];
    EXPECT_GE(command.size(), 2u);
    EXPECT_EQ(command[0], "orca");
    const int replicas = o["spec"]["replicas"];
    for (int ordinal = 0; ordinal < replicas; ++ordinal) {
      Pod pod;
      pod.name = absl::StrCat(o["metadata"]["name"].get<std::string>(), "-", ordinal);
      pod.mounts = mounts;
      pod.role = command[1] == "worker" ? Role::kWorker : Role::kScheduler;
      EXPECT_TRUE(command[1] == "worker" || command[1] == "scheduler") << command[1];
      std::map<std::string, std::string> vars = env;
      vars["ORCA_POD_ORDINAL"] = std::to_string(ordinal);  // the pod-index label
      for (size_t i = 2; i < command.size(); ++i) {
        std::string a = Expand(command[i], vars);
        pod.args.push_back(a == kEngineYaml ? yaml_path : a);
      }
      const Json& labels = o["metadata"]["labels"];
      pod.group = std::stoi(labels["serving.orca.dev/group"].get<std::string>());
      if (pod.role == Role::kWorker) {
        pod.stage = std::stoi(labels["serving.orca.dev/stage"].get<std::string>());
      }
      pods.push_back(std::move(pod));
    }
  }
  return pods;
}

// Renders `cr`, runs every pod's parser, and checks every field arrived.
void CheckArrival(const Json& cr, const std::string& what, bool run_config_check) {
  SCOPED_TRACE(what);
  auto d = controller::ParseInferenceDeployment(cr);
  ASSERT_TRUE(d.ok()) << d.status();
  const std::vector<Json> objects = controller::BuildAllObjects(*d);
  std::string yaml;
  for (const Json& o : objects) {
    if (o["kind"] == "ConfigMap") yaml = o["data"]["engine.yaml"];
  }
  ASSERT_FALSE(yaml.empty()) << "no engine.yaml rendered";
  testing::TempDir tmp;
  const std::string yaml_path = tmp.file("engine.yaml");
  std::ofstream(yaml_path) << yaml;

  const std::vector<Pod> pods = PodsOf(objects, yaml_path);
  const InferenceDeploymentSpec& spec = d->spec;
  std::map<std::pair<int, int>, std::set<int>> tp_ranks_of_stage;  // (group, stage) -> ranks
  int schedulers = 0;
  for (const Pod& pod : pods) {
    SCOPED_TRACE(pod.name);
    auto config = ParseCommandLine(pod.role, pod.args);
    ASSERT_TRUE(config.ok()) << config.status() << "\nengine.yaml:\n" << yaml;
    for (const Field& f : Fields()) {
      if (std::find(f.roles.begin(), f.roles.end(), pod.role) == f.roles.end()) continue;
      EXPECT_EQ(f.got(*config), f.want(spec)) << f.path << " did not arrive in " << pod.name;
    }
    for (const SecretFile& f : SecretFiles()) {
      const std::string path = f.path(*config);
      if (path.empty() || std::find(f.roles.begin(), f.roles.end(), pod.role) == f.roles.end()) {
        continue;
      }
      // /etc/orca itself is the ConfigMap: a secret must come from a deeper mount.
      bool inside = false;
      for (const std::string& m : pod.mounts) {
        inside |= m != "/etc/orca" && absl::StartsWith(path, m + "/");
      }
      EXPECT_TRUE(inside) << f.setting << " = " << path << " is not inside a mount of " << pod.name;
    }
    if (pod.role == Role::kScheduler) {
      ++schedulers;
      continue;
    }
    // The worker's place: its stage, its tp ranks, the scheduler it dials.
    EXPECT_EQ(config->worker.stage, pod.stage);
    EXPECT_THAT(config->worker.scheduler, ::testing::EndsWith(absl::StrCat(
                                              ":", std::to_string(config->parallel.control_port))));
    for (int i = 0; i < config->parallel.gpus_per_pod; ++i) {
      const int rank = config->worker.pod_index * config->parallel.gpus_per_pod + i;
      EXPECT_TRUE(tp_ranks_of_stage[std::make_pair(pod.group, pod.stage)].insert(rank).second)
          << "tp rank " << rank << " twice";
    }
  }
  EXPECT_EQ(schedulers, spec.replicas);
  // Every stage's pods host exactly tp ranks 0 .. tensor - 1.
  std::set<int> all;
  for (int r = 0; r < spec.parallelism.tensor; ++r) all.insert(r);
  for (const auto& [where, ranks] : tp_ranks_of_stage) {
    EXPECT_EQ(ranks, all) << "group " << where.first << " stage " << where.second;
  }
  EXPECT_EQ(static_cast<int>(tp_ranks_of_stage.size()), spec.replicas * spec.parallelism.pipeline);

  if (!run_config_check) return;
  const char* orca = std::getenv("ORCA_BIN");
  if (orca == nullptr) {
    if (testing::InCi()) ADD_FAILURE() << "ORCA_BIN is not set in CI";
    return;
  }
  for (const char* role : {"scheduler", "worker"}) {
    std::string out;
    EXPECT_EQ(testing::RunCommand(
                  absl::StrCat(orca, " config check --role ", role, " ", yaml_path, " 2>&1"), &out),
              0)
        << out;
  }
}

Json ReadExample(const std::string& name) {
  auto docs = controller::ReadYamlFile(testing::SourceDir() + "/crds/examples/" + name);
  EXPECT_TRUE(docs.ok()) << docs.status();
  for (const Json& d : *docs) {
    if (d.value("kind", "") == "InferenceDeployment") return d;
  }
  ADD_FAILURE() << name << " holds no InferenceDeployment";
  return Json();
}

TEST(CrdEngineSeamTest, EveryExampleArrives) {
  for (const char* example : {"single-gpu.yaml", "cpu-hpa.yaml", "autoscaled-ingress.yaml",
                              "tp8-single-node.yaml", "tp8-pp2-multi-node.yaml"}) {
    CheckArrival(ReadExample(example), example, /*run_config_check=*/true);
  }
}

TEST(CrdEngineSeamTest, EveryVariationArrives) {
  for (const Field& f : Fields()) {
    for (const auto& [value, with] : f.variations) {
      CrBuilder b;
      for (const auto& [path, v] : with) b.Set(path, v);
      b.Set(f.path, value);
      CheckArrival(b.Build(), absl::StrCat(f.path, " = ", value.dump()),
                   /*run_config_check=*/true);
    }
  }
}

// The table above covers every field of the CRD's model, parallelism and engine
// sections: a new field fails here until it is wired and listed.
TEST(CrdEngineSeamTest, TheTableCoversEveryEngineFieldOfTheCrd) {
  auto docs = controller::ReadYamlFile(testing::SourceDir() +
                                       "/crds/inferencedeployments.serving.orca.dev.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  const Json& spec =
      (*docs)[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  std::set<std::string> covered;
  for (const Field& f : Fields()) covered.insert(f.path);
  // Read by the pull-model init container (PulledModelsArriveWhereTheEngineReadsThem) and
  // by the kubelet (LifecycleArrivesInThePods), not by the engine.
  for (const char* other :
       {"/spec/model/tokenSecret", "/spec/model/sha256", "/spec/model/downloadSizeLimit",
        "/spec/lifecycle/terminationGracePeriodSeconds", "/spec/lifecycle/preStopSleepSeconds"}) {
    covered.insert(other);
  }
  for (const char* section : {"model", "parallelism", "engine", "lifecycle"}) {
    for (const auto& [name, schema] : spec["properties"][section]["properties"].items()) {
      EXPECT_TRUE(covered.count(absl::StrCat("/spec/", section, "/", name)))
          << "spec." << section << "." << name << " is not carried to the engine (or not listed)";
    }
  }
}

// Every workload of `objects` (Deployments and StatefulSets).
std::vector<const Json*> Workloads(const std::vector<Json>& objects) {
  std::vector<const Json*> out;
  for (const Json& o : objects) {
    if (o["kind"] == "Deployment" || o["kind"] == "StatefulSet") out.push_back(&o);
  }
  return out;
}

// hf:// and https:// models: each pod's pull-model init container runs `orca model pull`
// with the CR's URI, checksum and token into the directory its engine reads.
TEST(CrdEngineSeamTest, PulledModelsArriveWhereTheEngineReadsThem) {
  const std::string kSha(64, 'a');
  for (const char* uri : {"hf://org/model-7b@v2", "https://models.example.com/m.tar.gz"}) {
    SCOPED_TRACE(uri);
    const bool https = absl::StartsWith(uri, "https://");
    CrBuilder b;
    b.Set("/spec/model/uri", uri)
        .Set("/spec/model/tokenSecret", Json{{"name", "hub"}, {"key", "token"}})
        .Set("/spec/model/downloadSizeLimit", "20Gi");
    if (https) b.Set("/spec/model/sha256", kSha);
    b.Pipeline(2);
    auto d = controller::ParseInferenceDeployment(b.Build());
    ASSERT_TRUE(d.ok()) << d.status();
    const std::vector<Json> objects = controller::BuildAllObjects(*d);
    std::string yaml;
    for (const Json& o : objects) {
      if (o["kind"] == "ConfigMap") yaml = o["data"]["engine.yaml"];
    }
    testing::TempDir tmp;
    const std::string yaml_path = tmp.file("engine.yaml");
    std::ofstream(yaml_path) << yaml;
    std::map<std::string, Role> role_of;
    for (const Pod& pod : PodsOf(objects, yaml_path)) {
      auto config = ParseCommandLine(pod.role, pod.args);
      ASSERT_TRUE(config.ok()) << config.status();
      EXPECT_EQ(config->model.dir, kPulledDir) << pod.name;
    }
    const auto workloads = Workloads(objects);
    ASSERT_EQ(workloads.size(), 3u);  // the scheduler and two stages
    for (const Json* w : workloads) {
      SCOPED_TRACE((*w)["metadata"]["name"].get<std::string>());
      const Json& pod = (*w)["spec"]["template"]["spec"];
      ASSERT_TRUE(pod.contains("initContainers"));
      const Json& init = pod["initContainers"][0];
      EXPECT_EQ(init["name"], "pull-model");
      EXPECT_EQ(init["image"], Container(*w)["image"]) << "the pull runs the engine's own image";
      std::vector<std::string> want = {"orca", "model", "pull", uri, kPulledDir};
      if (https) want.insert(want.end(), {"--sha256", kSha});
      EXPECT_EQ(init["command"].get<std::vector<std::string>>(), want);
      EXPECT_EQ(init["env"][0],
                (Json{{"name", "HF_TOKEN"},
                      {"valueFrom", {{"secretKeyRef", {{"name", "hub"}, {"key", "token"}}}}}}));
      // The init container writes into the volume the serving container reads.
      std::string init_volume, main_volume;
      for (const Json& m : init["volumeMounts"]) {
        if (absl::StartsWith(kPulledDir, m["mountPath"].get<std::string>()))
          init_volume = m["name"];
      }
      for (const Json& m : Container(*w)["volumeMounts"]) {
        if (absl::StartsWith(kPulledDir, m["mountPath"].get<std::string>()))
          main_volume = m["name"];
      }
      EXPECT_FALSE(init_volume.empty());
      EXPECT_EQ(init_volume, main_volume);
      for (const Json& v : pod["volumes"]) {
        if (v["name"] == init_volume) {
          EXPECT_EQ(v["emptyDir"]["sizeLimit"], "20Gi");
        }
      }
    }
    // The flags the controller passes exist in the real binary.
    if (const char* orca = std::getenv("ORCA_BIN")) {
      std::string out;
      testing::RunCommand(absl::StrCat(orca, " model --help 2>&1"), &out);
      EXPECT_THAT(out, ::testing::HasSubstr("--sha256"));
      EXPECT_THAT(out, ::testing::HasSubstr("orca model pull URI DIR"));
    }
  }
}

// spec.lifecycle reaches the kubelet: the grace period of every pod, the scheduler's
// preStop hook (run for real when ORCA_BIN is set), and a drain that fits in between.
TEST(CrdEngineSeamTest, LifecycleArrivesInThePods) {
  CrBuilder b;
  b.Set("/spec/lifecycle/terminationGracePeriodSeconds", 40)
      .Set("/spec/lifecycle/preStopSleepSeconds", 1)
      .Set("/spec/lifecycle/drainSeconds", 30);
  auto d = controller::ParseInferenceDeployment(b.Build());
  ASSERT_TRUE(d.ok()) << d.status();
  int pre_stops = 0;
  const std::vector<Json> objects = controller::BuildAllObjects(*d);
  for (const Json* w : Workloads(objects)) {
    SCOPED_TRACE((*w)["metadata"]["name"].get<std::string>());
    EXPECT_EQ((*w)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"], 40);
    const Json& c = Container(*w);
    if (!c.contains("lifecycle")) continue;
    ++pre_stops;
    const auto command =
        c["lifecycle"]["preStop"]["exec"]["command"].get<std::vector<std::string>>();
    EXPECT_EQ(command, (std::vector<std::string>{"orca", "pre-stop", "--seconds", "1"}));
    if (const char* orca = std::getenv("ORCA_BIN")) {
      std::string argv = orca;
      for (size_t i = 1; i < command.size(); ++i) absl::StrAppend(&argv, " ", command[i]);
      std::string out;
      EXPECT_EQ(testing::RunCommand(argv + " 2>&1", &out), 0) << out;
    }
  }
  EXPECT_EQ(pre_stops, 1) << "only the scheduler waits for the endpoints to drop it";
}

TEST(CrdEngineSeamTest, ConfigCheckRejectsAnUnknownKeyNamingIt) {
  const char* orca = std::getenv("ORCA_BIN");
  if (orca == nullptr) GTEST_SKIP() << "ORCA_BIN not set";
  testing::TempDir tmp;
  std::ofstream(tmp.file("engine.yaml"))
      << "scheduler:\n  max_batch_size: 8\n  max_batch_sise: 8\n";
  std::string out;
  EXPECT_NE(testing::RunCommand(
                absl::StrCat(orca, " config check ", tmp.file("engine.yaml"), " 2>&1"), &out),
            0);
  EXPECT_THAT(out, ::testing::HasSubstr("scheduler.max_batch_sise"));
}

}  // namespace
}  // namespace orca
