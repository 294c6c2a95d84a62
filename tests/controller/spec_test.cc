#include "controller/api/spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/builders/layout.h"
#include "tests/controller/cr_builder.h"

namespace orca::controller {
namespace {

using testing::CrBuilder;
using ::testing::HasSubstr;

TEST(SpecTest, AppliesCrdDefaults) {
  auto d = ParseInferenceDeployment(CrBuilder().Build());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec.replicas, 1);
  EXPECT_EQ(d->spec.parallelism.tensor, 1);
  EXPECT_EQ(d->spec.parallelism.device, "gpu");
  EXPECT_EQ(d->spec.engine.kv_policy, "paged");
  EXPECT_EQ(d->spec.engine.block_size, 16);
  EXPECT_DOUBLE_EQ(d->spec.engine.memory_fraction, 0.9);
  EXPECT_EQ(d->spec.rollout.type, "RollingUpdate");
  EXPECT_EQ(d->spec.rollout.max_unavailable, 1);
  EXPECT_EQ(d->spec.group_policy.max_group_restarts, 5);
  EXPECT_EQ(d->spec.service.port, 8000);
  EXPECT_FALSE(d->spec.autoscaling.enabled);
  EXPECT_EQ(d->spec.model_source.claim, "models");
  EXPECT_EQ(d->spec.model_source.path, "tiny");
}

TEST(SpecTest, ParsesHostPathUri) {
  auto d =
      ParseInferenceDeployment(CrBuilder().Set("/spec/model/uri", "hostpath:///mnt/m").Build());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec.model_source.kind, ModelSource::Kind::kHostPath);
  EXPECT_EQ(d->spec.model_source.path, "/mnt/m");
}

TEST(SpecTest, ParsesHuggingFaceAndHttpsUris) {
  auto hf = ParseInferenceDeployment(CrBuilder().ModelUri("hf://Qwen/Qwen2.5-0.5B").Build());
  ASSERT_TRUE(hf.ok()) << hf.status();
  EXPECT_EQ(hf->spec.model_source.kind, ModelSource::Kind::kHuggingFace);
  EXPECT_EQ(hf->spec.model_source.repo, "Qwen/Qwen2.5-0.5B");
  EXPECT_EQ(hf->spec.model_source.revision, "");
  EXPECT_TRUE(IsPulled(hf->spec.model_source));

  auto rev = ParseInferenceDeployment(
      CrBuilder().ModelUri("hf://meta-llama/Llama-3.1-8B@refs/pr/12").Build());
  ASSERT_TRUE(rev.ok()) << rev.status();
  EXPECT_EQ(rev->spec.model_source.repo, "meta-llama/Llama-3.1-8B");
  EXPECT_EQ(rev->spec.model_source.revision, "refs/pr/12");

  for (const char* uri :
       {"https://models.example.com/tiny.tar", "https://h/a/b/m.tar.gz", "https://h:8443/m.tgz"}) {
    auto d = ParseInferenceDeployment(CrBuilder().ModelUri(uri).Build());
    ASSERT_TRUE(d.ok()) << uri << ": " << d.status();
    EXPECT_EQ(d->spec.model_source.kind, ModelSource::Kind::kHttps) << uri;
  }
  EXPECT_FALSE(IsPulled(ParseInferenceDeployment(CrBuilder().Build()).value().spec.model_source));
}

TEST(SpecTest, RejectsMalformedModelUris) {
  for (const char* uri :
       {"hf://just-a-name", "hf://org/name@", "hf:///name", "http://h/m.tar", "https://h/m.zip",
        "https://h/m.tar?sig=1", "https:///m.tar", "hf://org/na me"}) {
    auto d = ParseInferenceDeployment(CrBuilder().ModelUri(uri).Build());
    ASSERT_FALSE(d.ok()) << uri;
    EXPECT_THAT(d.status().message(), HasSubstr("spec.model.uri")) << uri;
  }
}

TEST(SpecTest, ParsesPullFieldsOnlyForPulledModels) {
  auto d = ParseInferenceDeployment(CrBuilder()
                                        .ModelUri("https://h/m.tar.gz")
                                        .TokenSecret("hub")
                                        .Set("/spec/model/sha256", std::string(64, 'a'))
                                        .Set("/spec/model/downloadSizeLimit", "40960Mi")
                                        .Build());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->spec.model.token_secret.has_value());
  EXPECT_EQ(d->spec.model.token_secret->name, "hub");
  EXPECT_EQ(d->spec.model.token_secret->key, "token");  // the CRD default
  EXPECT_EQ(d->spec.model.sha256, std::string(64, 'a'));
  EXPECT_EQ(d->spec.model.download_size_limit, "40Gi");  // canonical
  auto n = ParseInferenceDeployment(
      CrBuilder().ModelUri("hf://o/m").Set("/spec/model/downloadSizeLimit", 1000000).Build());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->spec.model.download_size_limit, "1M");

  auto pvc = ParseInferenceDeployment(
      CrBuilder().TokenSecret("hub").Set("/spec/model/downloadSizeLimit", "1Gi").Build());
  ASSERT_FALSE(pvc.ok());
  EXPECT_THAT(pvc.status().message(),
              HasSubstr("model.tokenSecret is only used with an hf:// or https:// model.uri"));
  EXPECT_THAT(
      pvc.status().message(),
      HasSubstr("model.downloadSizeLimit is only used with an hf:// or https:// model.uri"));
  auto hf_sha = ParseInferenceDeployment(
      CrBuilder().ModelUri("hf://o/m").Set("/spec/model/sha256", std::string(64, 'a')).Build());
  ASSERT_FALSE(hf_sha.ok());
  EXPECT_THAT(hf_sha.status().message(),
              HasSubstr("model.sha256 is only checked for an https:// model.uri"));
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder()
                                            .ModelUri("https://h/m.tar")
                                            .Set("/spec/model/sha256", std::string(64, 'A'))
                                            .Build())
                   .ok());
  EXPECT_FALSE(
      ParseInferenceDeployment(
          CrBuilder().ModelUri("hf://o/m").Set("/spec/model/tokenSecret", Json::object()).Build())
          .ok());
  auto bad_size = ParseInferenceDeployment(
      CrBuilder().ModelUri("hf://o/m").Set("/spec/model/downloadSizeLimit", "10GB").Build());
  ASSERT_FALSE(bad_size.ok());
  EXPECT_THAT(bad_size.status().message(), HasSubstr("spec.model.downloadSizeLimit"));
}

TEST(SpecTest, LifecycleDefaultsRangesAndGraceRule) {
  auto d = ParseInferenceDeployment(CrBuilder().Build());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec.lifecycle.termination_grace_period_seconds, 60);
  EXPECT_EQ(d->spec.lifecycle.pre_stop_sleep_seconds, 5);
  EXPECT_EQ(d->spec.lifecycle.drain_seconds, 45);
  EXPECT_EQ(d->spec.lifecycle.join_timeout_seconds, 300);

  // 5 + 55 is not below 60.
  auto tight =
      ParseInferenceDeployment(CrBuilder().Set("/spec/lifecycle/drainSeconds", 55).Build());
  ASSERT_FALSE(tight.ok());
  EXPECT_THAT(tight.status().message(),
              HasSubstr("lifecycle.preStopSleepSeconds + lifecycle.drainSeconds must be less than "
                        "lifecycle.terminationGracePeriodSeconds"));
  EXPECT_TRUE(
      ParseInferenceDeployment(CrBuilder().Set("/spec/lifecycle/drainSeconds", 54).Build()).ok());
  EXPECT_TRUE(
      ParseInferenceDeployment(CrBuilder()
                                   .Set("/spec/lifecycle/terminationGracePeriodSeconds", 600)
                                   .Set("/spec/lifecycle/drainSeconds", 540)
                                   .Set("/spec/lifecycle/preStopSleepSeconds", 0)
                                   .Build())
          .ok());
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, int>>{{"terminationGracePeriodSeconds", 4},
                                                {"terminationGracePeriodSeconds", 3601},
                                                {"preStopSleepSeconds", 61},
                                                {"drainSeconds", 0},
                                                {"joinTimeoutSeconds", -1},
                                                {"joinTimeoutSeconds", 86401}}) {
    auto bad = ParseInferenceDeployment(CrBuilder().Set("/spec/lifecycle/" + field, value).Build());
    ASSERT_FALSE(bad.ok()) << field << "=" << value;
    EXPECT_THAT(bad.status().message(), HasSubstr("spec.lifecycle." + field + ": must be between"));
  }
}

TEST(SpecTest, InferencePoolNeedsAnEndpointPicker) {
  auto off = ParseInferenceDeployment(CrBuilder().Build());
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->spec.routing.inference_pool.enabled);

  auto on = ParseInferenceDeployment(CrBuilder().InferencePool("demo-epp").Build());
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_TRUE(on->spec.routing.inference_pool.endpoint_picker.has_value());
  EXPECT_EQ(on->spec.routing.inference_pool.endpoint_picker->name, "demo-epp");
  EXPECT_EQ(on->spec.routing.inference_pool.endpoint_picker->port, 9002);
  EXPECT_EQ(on->spec.routing.inference_pool.endpoint_picker->failure_mode, "FailClose");

  auto missing = ParseInferenceDeployment(
      CrBuilder().Set("/spec/routing/inferencePool/enabled", true).Build());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(),
              HasSubstr("routing.inferencePool.enabled needs routing.inferencePool.endpointPicker."
                        "name (the endpoint picker Service)"));
  EXPECT_FALSE(ParseInferenceDeployment(
                   CrBuilder()
                       .InferencePool("e")
                       .Set("/spec/routing/inferencePool/endpointPicker/failureMode", "Open")
                       .Build())
                   .ok());
  EXPECT_FALSE(
      ParseInferenceDeployment(CrBuilder()
                                   .InferencePool("e")
                                   .Set("/spec/routing/inferencePool/endpointPicker/port", 70000)
                                   .Build())
          .ok());
}

TEST(SpecTest, RejectsResourceQuantitiesTheApiServerWouldReject) {
  auto d = ParseInferenceDeployment(
      CrBuilder().Set("/spec/worker/resources/limits/memory", "16 GiB").Build());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("spec.worker.resources.limits.memory"));
}

TEST(SpecTest, RejectsTensorNotMultipleOfGpusPerPod) {
  auto d = ParseInferenceDeployment(CrBuilder().Tensor(3).GpusPerPod(2).Build());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("multiple of parallelism.gpusPerPod"));
}

TEST(SpecTest, NamesEveryViolation) {
  auto d = ParseInferenceDeployment(CrBuilder()
                                        .Replicas(-1)
                                        .Set("/spec/model/uri", "s3://bucket/x")
                                        .Set("/spec/engine/kvPolicy", "lru")
                                        .Set("/spec/parallelism/tensor", "eight")
                                        .Build());
  ASSERT_FALSE(d.ok());
  std::string m(d.status().message());
  EXPECT_THAT(m, HasSubstr("spec.replicas: must be between 0 and 1000"));
  EXPECT_THAT(m, HasSubstr("spec.model.uri"));
  EXPECT_THAT(m, HasSubstr("spec.engine.kvPolicy: must be one of paged, reserve"));
  EXPECT_THAT(m, HasSubstr("spec.parallelism.tensor: must be an integer"));
}

TEST(SpecTest, RejectsMissingModelAndLongName) {
  Json cr = CrBuilder(std::string(41, 'a')).Build();
  cr["spec"].erase("model");
  auto d = ParseInferenceDeployment(cr);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("spec.model: is required"));
  EXPECT_THAT(d.status().message(), HasSubstr("metadata.name: must be at most 40"));
}

TEST(SpecTest, EnforcesCelRules) {
  EXPECT_FALSE(
      ParseInferenceDeployment(CrBuilder().Autoscaling("HPA", 2, 4).Replicas(1).Build()).ok());
  EXPECT_TRUE(
      ParseInferenceDeployment(CrBuilder().Autoscaling("HPA", 2, 4).Replicas(2).Build()).ok());
  EXPECT_FALSE(
      ParseInferenceDeployment(CrBuilder().Autoscaling("HPA", 5, 4).Replicas(5).Build()).ok());
  Json no_max = CrBuilder().Set("/spec/autoscaling/enabled", true).Build();
  EXPECT_FALSE(ParseInferenceDeployment(no_max).ok());
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder().Recreate().MaxUnavailable(2).Build()).ok());
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder()
                                            .Set("/spec/engine/prefixCaching", true)
                                            .Set("/spec/engine/kvPolicy", "reserve")
                                            .Build())
                   .ok());
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder()
                                            .Set("/spec/engine/maxBatchSize", 128)
                                            .Set("/spec/engine/maxBatchedTokens", 64)
                                            .Build())
                   .ok());
  EXPECT_FALSE(
      ParseInferenceDeployment(CrBuilder().Set("/spec/ingress/tls/secretName", "s").Build()).ok());
  auto request_prefix =
      ParseInferenceDeployment(CrBuilder()
                                   .Set("/spec/engine/prefixCaching", true)
                                   .Set("/spec/engine/schedulingPolicy", "request")
                                   .Build());
  ASSERT_FALSE(request_prefix.ok());
  EXPECT_THAT(request_prefix.status().message(),
              HasSubstr("engine.prefixCaching requires engine.schedulingPolicy 'iteration'"));
  // The CPU stores 16-bit weights too (small_gemm.h).
  for (const char* dtype : {"float32", "bfloat16", "float16"}) {
    EXPECT_TRUE(ParseInferenceDeployment(CrBuilder()
                                             .Set("/spec/parallelism/device", "cpu")
                                             .Set("/spec/model/dtype", dtype)
                                             .Build())
                    .ok())
        << dtype;
  }
}

TEST(SpecTest, RejectsNonObjects) {
  EXPECT_FALSE(ParseInferenceDeployment(Json::array()).ok());
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder().Set("/spec/engine", 5).Build()).ok());
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder().Set("/kind", "Deployment").Build()).ok());
}

TEST(LayoutTest, RankArithmetic) {
  ParallelismSpec p;
  p.tensor = 8;
  p.pipeline = 2;
  p.gpus_per_pod = 4;
  EXPECT_EQ(PodsPerStage(p), 2);
  EXPECT_EQ(WorldSize(p), 16);
  EXPECT_EQ(WorkerPodsPerGroup(p), 4);
  EXPECT_EQ(SchedulerName("m", 3), "m-g3-scheduler");
  EXPECT_EQ(StageName("m", 3, 1), "m-g3-s1");
  EXPECT_EQ(SchedulerControlAddress("m", "ns", 0), "m-g0-scheduler.ns.svc:8002");
  EXPECT_EQ(SchedulerSelector("m"),
            "serving.orca.dev/deployment=m,serving.orca.dev/role=scheduler");
}

TEST(LayoutTest, RestartBackoffDoublesAndCaps) {
  EXPECT_EQ(RestartBackoffSeconds(10, 0), 10);
  EXPECT_EQ(RestartBackoffSeconds(10, 3), 80);
  EXPECT_EQ(RestartBackoffSeconds(10, 30), 3600);
  EXPECT_EQ(RestartBackoffSeconds(0, 5), 0);
}

TEST(LayoutTest, RevisionIgnoresReplicasAndServiceButNotImage) {
  auto a = ParseInferenceDeployment(CrBuilder().Build());
  auto b = ParseInferenceDeployment(CrBuilder().Replicas(7).Ingress("x.example.com").Build());
  auto c = ParseInferenceDeployment(CrBuilder().Image("orca:v2").Build());
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(RevisionHash(a->spec), RevisionHash(b->spec));
  EXPECT_NE(RevisionHash(a->spec), RevisionHash(c->spec));
  EXPECT_EQ(RevisionHash(a->spec).size(), 10u);
}

TEST(SpecTest, ParsesTheControlPlaneTokenAndTls) {
  auto none = ParseInferenceDeployment(CrBuilder().Build());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->spec.control_plane.token_secret.has_value());
  EXPECT_FALSE(none->spec.tls.has_value());
  auto d = ParseInferenceDeployment(CrBuilder()
                                        .Set("/spec/controlPlane/tokenSecretRef/name", "orca-ctl")
                                        .Set("/spec/tls/secretName", "orca-tls")
                                        .Build());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->spec.control_plane.token_secret.has_value());
  EXPECT_EQ(d->spec.control_plane.token_secret->name, "orca-ctl");
  EXPECT_EQ(d->spec.control_plane.token_secret->key, "token");  // the CRD's default
  ASSERT_TRUE(d->spec.tls.has_value());
  EXPECT_EQ(d->spec.tls->secret_name, "orca-tls");
  auto keyed = ParseInferenceDeployment(
      CrBuilder()
          .Set("/spec/controlPlane/tokenSecretRef", Json{{"name", "s"}, {"key", "ctl.token"}})
          .Build());
  ASSERT_TRUE(keyed.ok()) << keyed.status();
  EXPECT_EQ(keyed->spec.control_plane.token_secret->key, "ctl.token");
}

// The messages of tests/controller/testdata/bad-crs/{control-token-without-name,
// tls-without-secret-name}.yaml, and the patterns of the schema.
TEST(SpecTest, RejectsIncompleteControlPlaneTokenAndTls) {
  struct Case {
    const char* path;
    Json value;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"/spec/controlPlane/tokenSecretRef", Json{{"key", "token"}},
            "spec.controlPlane.tokenSecretRef.name: is required"},
           {"/spec/controlPlane/tokenSecretRef", Json{{"name", "Not_A_Name"}},
            "spec.controlPlane.tokenSecretRef.name: \"Not_A_Name\" does not match"},
           {"/spec/controlPlane/tokenSecretRef", Json{{"name", "s"}, {"key", "a/b"}},
            "spec.controlPlane.tokenSecretRef.key: \"a/b\" does not match"},
           {"/spec/tls", Json::object(), "spec.tls.secretName: is required"},
           {"/spec/tls", Json{{"secretName", ""}}, "spec.tls.secretName: must not be empty"},
           {"/spec/controlPlane", Json("x"), "spec.controlPlane: must be an object"},
       }) {
    auto d = ParseInferenceDeployment(CrBuilder().Set(c.path, c.value).Build());
    ASSERT_FALSE(d.ok()) << c.path << " = " << c.value.dump();
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(c.message));
  }
}

TEST(SpecTest, ParsesPipelineLayers) {
  auto unset = ParseInferenceDeployment(CrBuilder().Pipeline(2).Build());
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_TRUE(unset->spec.parallelism.pipeline_layers.empty());
  auto d = ParseInferenceDeployment(
      CrBuilder().Pipeline(3).Set("/spec/parallelism/pipelineLayers", Json{10, 12, 10}).Build());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec.parallelism.pipeline_layers, (std::vector<int>{10, 12, 10}));
}

// The messages of tests/controller/testdata/bad-crs/pipeline-layers-*.yaml (the CRD's rule
// and item bounds), and what the schema's types refuse.
TEST(SpecTest, RejectsPipelineLayersThatDoNotGiveEveryStageItsLayers) {
  const char* kPerStage =
      "spec.parallelism: parallelism.pipelineLayers must give one layer count per stage";
  struct Case {
    int pipeline;
    Json layers;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {2, Json{7, 4, 1}, kPerStage},
           {2, Json{12}, kPerStage},
           {1, Json::array(), kPerStage},
           {2, Json{12, 0},
            "spec.parallelism.pipelineLayers[1]: must be between 1 and 100000, got 0"},
           {2, Json{"7", 5}, "spec.parallelism.pipelineLayers[0]: must be an integer"},
           {2, Json{7.5, 4.5}, "spec.parallelism.pipelineLayers[0]: must be an integer"},
           {2, Json("7,5"), "spec.parallelism.pipelineLayers: must be an array"},
           {32, Json(std::vector<int>(33, 1)),
            "spec.parallelism.pipelineLayers: must have at most 32 items"},
       }) {
    auto d = ParseInferenceDeployment(
        CrBuilder().Pipeline(c.pipeline).Set("/spec/parallelism/pipelineLayers", c.layers).Build());
    ASSERT_FALSE(d.ok()) << c.layers.dump();
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(c.message)) << c.layers.dump();
  }
}

// Fields added after a release change no revision of a deployment that does not use
// them (a controller upgrade must not roll every group): the revision of an example is
// the one the controller before them computed (its golden's revision label).
TEST(LayoutTest, RevisionOfDeploymentsWithoutLaterFieldsIsUnchanged) {
  auto d = ParseInferenceDeployment(
      CrBuilder("tinyllama", "default")
          .Set("/spec/model", Json{{"name", "tinyllama-1.1b-chat"},
                                   {"uri", "pvc://models/TinyLlama-1.1B-Chat-v1.0"}})
          .Image("ghcr.io/orca-serving/orca:0.1.0")
          .Build());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(RevisionHash(d->spec), "b5d907217f");  // crds/examples/single-gpu.yaml
  for (const char* path : {"/spec/controlPlane/tokenSecretRef/name", "/spec/tls/secretName"}) {
    auto with = ParseInferenceDeployment(CrBuilder().Set(path, "s").Build());
    auto without = ParseInferenceDeployment(CrBuilder().Build());
    ASSERT_TRUE(with.ok() && without.ok());
    EXPECT_NE(RevisionHash(with->spec), RevisionHash(without->spec)) << path << " rolls the pods";
  }
  // engine.targetItlMs: 0 (its default) is the revision without it; a target rolls.
  auto zero = ParseInferenceDeployment(CrBuilder().Set("/spec/engine/targetItlMs", 0).Build());
  auto target = ParseInferenceDeployment(CrBuilder().Set("/spec/engine/targetItlMs", 80).Build());
  auto unset = ParseInferenceDeployment(CrBuilder().Build());
  ASSERT_TRUE(zero.ok() && target.ok() && unset.ok());
  EXPECT_EQ(RevisionHash(zero->spec), RevisionHash(unset->spec));
  EXPECT_NE(RevisionHash(target->spec), RevisionHash(unset->spec));
  // parallelism.pipelineLayers: a split rolls the groups (their workers hold other layers).
  auto pp = ParseInferenceDeployment(CrBuilder().Pipeline(2).Build());
  auto split = ParseInferenceDeployment(
      CrBuilder().Pipeline(2).Set("/spec/parallelism/pipelineLayers", Json{7, 5}).Build());
  ASSERT_TRUE(pp.ok() && split.ok());
  EXPECT_NE(RevisionHash(split->spec), RevisionHash(pp->spec));
}

}  // namespace
}  // namespace orca::controller
