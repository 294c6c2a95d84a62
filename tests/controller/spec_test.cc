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
}

TEST(SpecTest, RejectsNonObjects) {
  EXPECT_FALSE(ParseInferenceDeployment(Json::array()).ok());
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder().Set("/spec/engine", 5).Build()).ok());
  EXPECT_FALSE(ParseInferenceDeployment(CrBuilder().Set("/kind", "Deployment").Build()).ok());
}

TEST(LayoutTest, RankArithmetic) {
  ParallelismSpec p{8, 2, 4, "gpu"};
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

}  // namespace
}  // namespace orca::controller
