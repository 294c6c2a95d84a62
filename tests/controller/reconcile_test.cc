// The controller end to end against the fake API server: convergence, scaling,
// group-atomic rollouts, deletion, faults, leader election, invalid input, restarts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <httplib.h>

#include <atomic>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/api/spec.h"
#include "controller/builders/layout.h"
#include "controller/client/kube_errors.h"
#include "tests/controller/cr_builder.h"
#include "tests/controller/harness.h"

namespace orca::controller {
namespace {

using testing::CrBuilder;
using testing::FakeApiServerOptions;
using testing::Harness;
using ::testing::HasSubstr;
using testing::kCrPlural;

constexpr char kDeployments[] = "apps/v1/deployments";
constexpr char kStatefulSets[] = "apps/v1/statefulsets";

std::string LabelOf(const Json& o, const char* key) {
  const Json& l = o["metadata"]["labels"];
  return l.contains(key) ? l[key].get<std::string>() : "";
}

// Returns the revision label of each group's scheduler Deployment.
std::map<int, std::string> GroupRevisions(testing::FakeApiServer& fake) {
  std::map<int, std::string> out;
  for (const Json& d : fake.List(kDeployments, "default")) {
    out[std::stoi(LabelOf(d, kLabelGroup))] = LabelOf(d, kLabelRevision);
  }
  return out;
}

size_t Count(testing::FakeApiServer& fake, const std::string& plural) {
  return fake.List(plural, "default").size();
}

TEST(ReconcileTest, CreateConvergesToAvailableOncePodsAreReady) {
  Harness h;
  ASSERT_TRUE(h.ok());
  std::atomic<bool> ready{false};
  h.fake().SetPodReadiness([&](const Json&) { return ready.load(); });
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Tensor(2).Pipeline(2).Build()).ok());

  ASSERT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "Available").value("reason", "") == "GroupsNotReady";
  })) << h.Cr("demo").dump(2);
  EXPECT_EQ(Count(h.fake(), kDeployments), 1u);
  EXPECT_EQ(Count(h.fake(), kStatefulSets), 2u);
  EXPECT_EQ(Count(h.fake(), "services"), 3u);  // client, scheduler, headless
  EXPECT_EQ(Count(h.fake(), "configmaps"), 1u);
  EXPECT_EQ(Count(h.fake(), "pods"), 5u);  // scheduler + 2 stages x 2 ranks
  EXPECT_FALSE(h.Converged("demo"));

  ready = true;
  h.fake().Resimulate();
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);
  Json status = h.Cr("demo")["status"];
  EXPECT_EQ(status["replicas"], 1);
  EXPECT_EQ(status["readyReplicas"], 1);
  EXPECT_EQ(status["updatedReplicas"], 1);
  EXPECT_EQ(status["currentRevision"], status["updateRevision"]);
  EXPECT_EQ(status["url"], "http://demo.default.svc:8000");
  EXPECT_EQ(Harness::Condition(h.Cr("demo"), "Degraded")["status"], "False");
  bool created_event = false;
  for (const Json& e : h.fake().List("events", "default")) {
    if (e["reason"] == "CreatedGroup") created_event = true;
  }
  EXPECT_TRUE(created_event);
}

TEST(ReconcileTest, ScalesThroughTheScaleSubresourceAndNeverWritesReplicas) {
  Harness h;
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }));

  httplib::Client http(h.fake().url());
  std::string scale_path =
      ResourcePath(resources::kInferenceDeployment, "default", "demo") + "/scale";
  auto put_scale = [&](int n) {
    Json scale = {{"apiVersion", "autoscaling/v1"}, {"kind", "Scale"}, {"spec", {{"replicas", n}}}};
    auto r = http.Put(scale_path.c_str(), scale.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  };
  put_scale(3);
  ASSERT_TRUE(Harness::WaitFor([&] {
    return h.Converged("demo") && h.Cr("demo")["status"]["readyReplicas"] == 3;
  })) << h.Cr("demo").dump(2);
  EXPECT_EQ(Count(h.fake(), kDeployments), 3u);
  auto scale = http.Get(scale_path.c_str());
  ASSERT_TRUE(scale);
  Json s = Json::parse(scale->body);
  EXPECT_EQ(s["status"]["replicas"], 3);
  EXPECT_EQ(s["status"]["selector"], SchedulerSelector("demo"));

  put_scale(1);
  ASSERT_TRUE(Harness::WaitFor([&] {
    return h.Converged("demo") && Count(h.fake(), kDeployments) == 1 &&
           h.Cr("demo")["status"]["replicas"] == 1;
  })) << h.Cr("demo").dump(2);
  EXPECT_EQ(Count(h.fake(), kStatefulSets), 1u);
  EXPECT_EQ(Count(h.fake(), "pods"), 2u) << "pods of removed groups are garbage-collected";
  EXPECT_EQ(Count(h.fake(), "services"), 3u);

  for (const auto& r : h.fake().Requests()) {
    bool cr_write = r.method != "GET" && r.path.find("/inferencedeployments/") != std::string::npos;
    if (cr_write && r.user_agent.find("orca-controller") != std::string::npos) {
      EXPECT_THAT(r.path, ::testing::EndsWith("/status"))
          << "the controller wrote the CR itself: " << r.method << " " << r.path;
    }
  }
}

TEST(ReconcileTest, RollingUpdateReplacesWholeGroupsWithinMaxUnavailable) {
  Harness h;
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(h.fake()
                  .Upsert(kCrPlural, CrBuilder().Replicas(3).Pipeline(2).MaxUnavailable(1).Build())
                  .ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }));
  std::string old_rev = h.Cr("demo")["status"]["updateRevision"];

  // New-revision pods stay unready until their group is released.
  absl::Mutex mu;
  std::set<std::string> released;
  std::string new_rev;
  h.fake().SetPodReadiness([&](const Json& pod) {
    absl::MutexLock lock(&mu);
    std::string rev = LabelOf(pod, kLabelRevision);
    return rev == old_rev || released.count(LabelOf(pod, kLabelGroup)) > 0;
  });
  // Invariant, sampled throughout: at most maxUnavailable groups are off the old,
  // ready state, and every group's workloads carry a single revision.
  std::atomic<bool> sampling{true};
  std::atomic<int> worst{0};
  std::thread sampler([&] {
    while (sampling) {
      std::map<int, std::set<std::string>> revs;
      for (const Json& w : h.fake().List(kDeployments, "default")) {
        revs[std::stoi(LabelOf(w, kLabelGroup))].insert(LabelOf(w, kLabelRevision));
      }
      for (const Json& w : h.fake().List(kStatefulSets, "default")) {
        revs[std::stoi(LabelOf(w, kLabelGroup))].insert(LabelOf(w, kLabelRevision));
      }
      int moving = 0;
      for (auto& [g, set] : revs) {
        // Applies of one group land one object at a time, so a group may briefly
        // mix revisions; it then counts as moving.
        if (!set.count(old_rev) || set.size() > 1) {
          absl::MutexLock lock(&mu);
          if (!released.count(std::to_string(g))) ++moving;
        }
      }
      worst = std::max(worst.load(), moving);
      absl::SleepFor(absl::Milliseconds(2));
    }
  });

  Json cr = h.Cr("demo");
  cr["spec"]["image"] = "orca:v2";
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  ASSERT_TRUE(
      Harness::WaitFor([&] { return h.Cr("demo")["status"]["updateRevision"] != old_rev; }));
  new_rev = h.Cr("demo")["status"]["updateRevision"];

  for (int g = 0; g < 3; ++g) {
    ASSERT_TRUE(Harness::WaitFor([&] { return GroupRevisions(h.fake())[g] == new_rev; }))
        << "group " << g << " never moved";
    // Only group g moved; later groups wait for it.
    auto revs = GroupRevisions(h.fake());
    for (int later = g + 1; later < 3; ++later) EXPECT_EQ(revs[later], old_rev) << later;
    // Its worker pods were all replaced together (StatefulSets are OnDelete).
    ASSERT_TRUE(Harness::WaitFor([&] {
      for (const Json& p : h.fake().List("pods", "default")) {
        if (LabelOf(p, kLabelGroup) == std::to_string(g) && LabelOf(p, kLabelRevision) != new_rev) {
          return false;
        }
      }
      return true;
    }));
    // Updated = every pod carries the new revision (readiness is separate).
    EXPECT_TRUE(Harness::WaitFor([&] {
      Json st = h.Cr("demo")["status"];
      return st["updatedReplicas"] == g + 1 && st["readyReplicas"] == 2;
    })) << h.Cr("demo")["status"].dump(2);
    {
      absl::MutexLock lock(&mu);
      released.insert(std::to_string(g));
    }
    h.fake().Resimulate();
  }
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);
  sampling = false;
  sampler.join();
  EXPECT_LE(worst.load(), 1) << "more than maxUnavailable groups were down at once";
  EXPECT_EQ(h.Cr("demo")["status"]["currentRevision"], new_rev);
  EXPECT_EQ(Count(h.fake(), "configmaps"), 1u) << "the old revision's ConfigMap is pruned";
}

TEST(ReconcileTest, DeletionCascadesToEveryOwnedObject) {
  Harness h;
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(
      h.fake()
          .Upsert(kCrPlural,
                  CrBuilder().Replicas(2).Ingress("x.example.com").Autoscaling("HPA", 1, 3).Build())
          .ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);
  EXPECT_EQ(Count(h.fake(), "networking.k8s.io/v1/ingresses"), 1u);
  EXPECT_EQ(Count(h.fake(), "autoscaling/v2/horizontalpodautoscalers"), 1u);
  auto client = h.NewClient("user");
  ASSERT_TRUE(
      client->Delete(resources::kInferenceDeployment, "default", "demo", Propagation::kBackground)
          .ok());
  for (const char* plural :
       {kDeployments, kStatefulSets, "services", "configmaps", "pods",
        "networking.k8s.io/v1/ingresses", "autoscaling/v2/horizontalpodautoscalers"}) {
    EXPECT_EQ(Count(h.fake(), plural), 0u) << plural;
  }
  // The controller notices the CR is gone and does not recreate anything.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(Count(h.fake(), kDeployments), 0u);
}

TEST(ReconcileTest, ConvergesThroughConflictsDroppedWatchesGoneAnd500s) {
  Harness h;
  ASSERT_TRUE(h.ok());
  Harness::Instance& inst = h.StartController("a");
  h.fake().ConflictNextWrites(4);
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Build()).ok());  // in-process: no fault
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);

  // Someone edits an owned field; the controller takes it back (forced apply).
  Json dep = *h.fake().Get(kDeployments, "default", "demo-g0-scheduler");
  dep["spec"]["replicas"] = 5;
  ASSERT_TRUE(h.fake().Upsert(kDeployments, dep).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return (*h.fake().Get(kDeployments, "default", "demo-g0-scheduler"))["spec"]["replicas"] == 1;
  }));

  // History expires and every watch drops while the spec changes; requests fail too.
  h.fake().Compact();
  h.fake().DropWatches();
  h.fake().FailNextRequests(3, 500);
  Json cr = h.Cr("demo");
  cr["spec"]["replicas"] = 2;
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  h.fake().Compact();
  ASSERT_TRUE(Harness::WaitFor([&] {
    return h.Converged("demo") && h.Cr("demo")["status"]["readyReplicas"] == 2;
  })) << h.Cr("demo").dump(2);
  EXPECT_GE(inst.manager->watch_restarts(), 1);
  EXPECT_GE(inst.manager->relists(), 1) << "a 410 must lead to a relist";
  // No duplicates: exactly the objects of two groups.
  EXPECT_EQ(Count(h.fake(), kDeployments), 2u);
  EXPECT_EQ(Count(h.fake(), kStatefulSets), 2u);
  EXPECT_EQ(Count(h.fake(), "services"), 5u);
  EXPECT_EQ(Count(h.fake(), "configmaps"), 1u);
  EXPECT_GE(inst.manager->metrics().reconciles("error"), 1) << "the injected faults were seen";
}

TEST(ReconcileTest, OnlyTheLeaseHolderWrites) {
  Harness h;
  ASSERT_TRUE(h.ok());
  Harness::Instance& a = h.StartController("alpha", /*leader_elect=*/true);
  ASSERT_TRUE(Harness::WaitFor([&] { return a.manager->IsLeader(); }));
  Harness::Instance& b = h.StartController("beta", /*leader_elect=*/true);
  ASSERT_TRUE(Harness::WaitFor([&] { return b.manager->Ready(); }));
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Replicas(2).Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }));
  EXPECT_FALSE(b.manager->IsLeader());
  auto writes_by = [&](const std::string& who) {
    int n = 0;
    for (const auto& r : h.fake().Requests()) {
      if (r.method != "GET" && r.path.find("/leases") == std::string::npos &&
          r.user_agent.find(who) != std::string::npos) {
        ++n;
      }
    }
    return n;
  };
  EXPECT_GT(writes_by("alpha"), 0);
  EXPECT_EQ(writes_by("beta"), 0) << "the standby instance wrote";

  // The leader steps down (releasing the Lease); the standby takes over.
  Harness::StopInstance(a);
  ASSERT_TRUE(Harness::WaitFor([&] { return b.manager->IsLeader(); }));
  Json cr = h.Cr("demo");
  cr["spec"]["replicas"] = 1;
  h.fake().ClearRequests();
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  ASSERT_TRUE(
      Harness::WaitFor([&] { return h.Converged("demo") && Count(h.fake(), kDeployments) == 1; }));
  EXPECT_GT(writes_by("beta"), 0);
  EXPECT_EQ(writes_by("alpha"), 0);
}

TEST(ReconcileTest, LosingTheLeaseStopsTheLeader) {
  Harness h;
  ASSERT_TRUE(h.ok());
  Harness::Instance& a = h.StartController("alpha", /*leader_elect=*/true);
  ASSERT_TRUE(Harness::WaitFor([&] { return a.manager->IsLeader(); }));
  // Another holder steals the Lease (as after a network partition).
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto lease = h.fake().Get("coordination.k8s.io/v1/leases", "default", "orca-controller");
    if (!lease.ok()) return false;
    Json l = *lease;
    l["spec"]["holderIdentity"] = "intruder";
    l["spec"]["renewTime"] = "2999-01-01T00:00:00.000000Z";
    l["spec"]["leaseDurationSeconds"] = 3600;
    return h.fake().Upsert("coordination.k8s.io/v1/leases", l).ok();
  }));
  a.thread.join();
  EXPECT_TRUE(absl::IsAborted(a.result)) << a.result;
  EXPECT_FALSE(a.manager->IsLeader());
}

TEST(ReconcileTest, InvalidSpecIsDegradedNotACrash) {
  Harness h;
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  // The fake has no CEL: the CR is stored, and the controller must report it.
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder("bad").Tensor(3).GpusPerPod(2).Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("bad"), "Degraded").value("reason", "") == "InvalidSpec";
  })) << h.Cr("bad").dump(2);
  EXPECT_THAT(Harness::Condition(h.Cr("bad"), "Degraded")["message"].get<std::string>(),
              HasSubstr("multiple of parallelism.gpusPerPod"));
  EXPECT_EQ(Count(h.fake(), kDeployments), 0u);
  bool warned = false;
  for (const Json& e : h.fake().List("events", "default")) {
    if (e["reason"] == "InvalidSpec" && e["type"] == "Warning") warned = true;
  }
  EXPECT_TRUE(warned);

  // With admission (schema + CEL) in place the API refuses it outright.
  h.fake().SetValidator([](const Json& obj) -> absl::Status {
    auto d = ParseInferenceDeployment(obj);
    return d.ok() ? absl::OkStatus() : absl::InvalidArgumentError(d.status().message());
  });
  auto client = h.NewClient("user");
  absl::Status refused = client
                             ->Create(resources::kInferenceDeployment,
                                      CrBuilder("bad2").Set("/spec/replicas", -3).Build())
                             .status();
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;

  // Fixing the spec recovers.
  Json fixed = h.Cr("bad");
  fixed["spec"]["parallelism"]["gpusPerPod"] = 1;
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, fixed).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("bad"); })) << h.Cr("bad").dump(2);
  EXPECT_EQ(Harness::Condition(h.Cr("bad"), "Degraded")["status"], "False");
}

TEST(ReconcileTest, FailingGroupIsRestartedWholeUntilTheLimit) {
  Harness h;
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(
      h.fake()
          .Upsert(kCrPlural, CrBuilder().Pipeline(2).MaxGroupRestarts(1).RestartBackoff(0).Build())
          .ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }));
  auto crash = [&](const std::string& pod) {
    Json p = *h.fake().Get("pods", "default", pod);
    Json status = p["status"];
    status["containerStatuses"][0]["restartCount"] = 1;
    status["containerStatuses"][0]["lastState"] = {
        {"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}};
    EXPECT_TRUE(h.fake().SetStatus("pods", "default", pod, status).ok());
    return p["metadata"]["uid"].get<std::string>();
  };
  std::string scheduler_pod;
  for (const Json& p : h.fake().List("pods", "default")) {
    if (LabelOf(p, kLabelRole) == "scheduler") scheduler_pod = p["metadata"]["name"];
  }
  std::string stage0_uid = (*h.fake().Get("pods", "default", "demo-g0-s0-0"))["metadata"]["uid"];
  crash("demo-g0-s1-0");
  // The whole group restarts: every pod of it, not only the one that failed.
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto p = h.fake().Get("pods", "default", "demo-g0-s0-0");
    return p.ok() && (*p)["metadata"]["uid"] != stage0_uid;
  }));
  EXPECT_TRUE(Harness::WaitFor([&] {
    return !h.fake().Get("pods", "default", scheduler_pod).ok();
  })) << "the scheduler pod is replaced too";
  ASSERT_TRUE(Harness::WaitFor([&] {
    Json g = h.Cr("demo")["status"]["groups"][0];
    return g.value("restarts", 0) == 1 && h.Converged("demo");
  })) << h.Cr("demo").dump(2);
  EXPECT_THAT(h.Cr("demo")["status"]["groups"][0]["lastFailure"].get<std::string>(),
              HasSubstr("OOMKilled"));

  // A second failure exceeds maxGroupRestarts 1: Degraded, and the group releases its
  // GPUs: its scheduler and worker workloads are scaled to zero and stay there.
  crash("demo-g0-s1-0");
  ASSERT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "Degraded").value("reason", "") ==
           "GroupRestartLimitExceeded";
  })) << h.Cr("demo").dump(2);
  auto replicas = [&](const char* plural, const std::string& name) {
    auto o = h.fake().Get(plural, "default", name);
    return o.ok() ? (*o)["spec"].value("replicas", -1) : -1;
  };
  auto group_pods = [&] {
    int n = 0;
    for (const Json& p : h.fake().List("pods", "default")) n += LabelOf(p, kLabelGroup) == "0";
    return n;
  };
  ASSERT_TRUE(Harness::WaitFor([&] {
    return replicas(kDeployments, "demo-g0-scheduler") == 0 &&
           replicas(kStatefulSets, "demo-g0-s0") == 0 &&
           replicas(kStatefulSets, "demo-g0-s1") == 0 && group_pods() == 0;
  })) << "the released group still holds pods";
  std::string message = Harness::Condition(h.Cr("demo"), "Degraded")["message"];
  EXPECT_THAT(message, HasSubstr("scaled to zero to release their GPUs"));
  EXPECT_THAT(message, HasSubstr("OOMKilled"));
  EXPECT_THAT(message, HasSubstr("raise groupPolicy.maxGroupRestarts"));
  bool released_event = false;
  for (const Json& e : h.fake().List("events", "default")) {
    if (e["reason"] == "GroupReleased" && e["type"] == "Warning") released_event = true;
  }
  EXPECT_TRUE(released_event);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(replicas(kStatefulSets, "demo-g0-s0"), 0) << "a released group came back by itself";
  EXPECT_EQ(Harness::Condition(h.Cr("demo"), "Degraded")["reason"], "GroupRestartLimitExceeded");

  // Raising the limit retries: the group is scaled back up and serves.
  Json cr = h.Cr("demo");
  cr["spec"]["groupPolicy"]["maxGroupRestarts"] = 3;
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return h.Converged("demo") && replicas(kStatefulSets, "demo-g0-s1") == 1 &&
           Harness::Condition(h.Cr("demo"), "Degraded")["status"] == "False";
  })) << h.Cr("demo").dump(2);
}

TEST(ReconcileTest, MissingKedaIsReportedInScalingReady) {
  FakeApiServerOptions opts;
  opts.unserved = {"scaledobjects"};
  Harness h(opts);
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Autoscaling("KEDA", 1, 3).Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "ScalingReady").value("reason", "") ==
           "KedaNotInstalled";
  })) << h.Cr("demo").dump(2);
  EXPECT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << "KEDA missing is not fatal";

  // Switching to the HPA backend fixes it.
  Json cr = h.Cr("demo");
  cr["spec"]["autoscaling"]["backend"] = "HPA";
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "ScalingReady").value("reason", "") ==
           "AutoscalerConfigured";
  }));
  EXPECT_EQ(Count(h.fake(), "autoscaling/v2/horizontalpodautoscalers"), 1u);
}

TEST(ReconcileTest, EndpointsServeHealthReadinessAndMetrics) {
  Harness h;
  ASSERT_TRUE(h.ok());
  Harness::Instance& inst = h.StartController("a");
  ASSERT_TRUE(
      Harness::WaitFor([&] { return inst.manager->Ready() && inst.manager->health_port() > 0; }));
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }));
  httplib::Client health("127.0.0.1", inst.manager->health_port());
  auto hz = health.Get("/healthz");
  ASSERT_TRUE(hz);
  EXPECT_EQ(hz->status, 200);
  auto rz = health.Get("/readyz");
  ASSERT_TRUE(rz);
  EXPECT_EQ(rz->status, 200);
  httplib::Client metrics("127.0.0.1", inst.manager->metrics_port());
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto m = metrics.Get("/metrics");
    return m && m->body.find("orca_controller_reconcile_total{result=\"success\"} 0") ==
                    std::string::npos;
  }));
  auto m = metrics.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("orca_controller_reconcile_duration_seconds_count"));
  EXPECT_THAT(m->body, HasSubstr("orca_controller_workqueue_depth"));
  EXPECT_THAT(m->body, HasSubstr("orca_controller_is_leader 1"));
}

// ---- Lifecycle: the scheduler stops before its workers ----

bool IsTerminating(const Json& o) { return o["metadata"].contains("deletionTimestamp"); }

// Returns the pods of group `g` with role `role` ("scheduler" or "worker").
std::vector<Json> PodsOf(testing::FakeApiServer& fake, int g, const std::string& role) {
  std::vector<Json> out;
  for (const Json& p : fake.List("pods", "default")) {
    if (LabelOf(p, kLabelGroup) == std::to_string(g) && LabelOf(p, kLabelRole) == role) {
      out.push_back(p);
    }
  }
  return out;
}

// Ends the termination of every terminating pod (the kubelet saw the containers exit).
void FinishTerminatingPods(testing::FakeApiServer& fake) {
  for (const Json& p : fake.List("pods", "default")) {
    if (IsTerminating(p)) (void)fake.FinishTermination("default", p["metadata"]["name"]);
  }
}

FakeApiServerOptions GracefulPods() {
  FakeApiServerOptions opts;
  opts.graceful_pod_deletion = true;
  return opts;
}

TEST(LifecycleTest, ScaleDownStopsTheSchedulerBeforeItsWorkers) {
  Harness h(GracefulPods());
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Replicas(2).Pipeline(2).Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);

  Json cr = h.Cr("demo");
  cr["spec"]["replicas"] = 1;
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  // The scheduler of group 1 is told to stop: its Deployment goes, its pod terminates.
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto s = PodsOf(h.fake(), 1, "scheduler");
    return s.size() == 1 && IsTerminating(s[0]) &&
           !h.fake().Get(kDeployments, "default", "demo-g1-scheduler").ok();
  })) << "the scheduler of the removed group was not stopped";
  // While it drains, its workers keep running.
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_TRUE(h.fake().Get(kStatefulSets, "default", "demo-g1-s0").ok());
  EXPECT_TRUE(h.fake().Get(kStatefulSets, "default", "demo-g1-s1").ok());
  std::vector<Json> workers = PodsOf(h.fake(), 1, "worker");
  ASSERT_EQ(workers.size(), 2u);
  for (const Json& w : workers) {
    EXPECT_FALSE(IsTerminating(w)) << w["metadata"]["name"] << " stopped before its scheduler";
  }

  // The scheduler exits: now the workers go.
  FinishTerminatingPods(h.fake());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return !h.fake().Get(kStatefulSets, "default", "demo-g1-s0").ok() &&
           !h.fake().Get(kStatefulSets, "default", "demo-g1-s1").ok();
  })) << "the workers of the removed group were kept after its scheduler stopped";
  for (const Json& w : PodsOf(h.fake(), 1, "worker")) EXPECT_TRUE(IsTerminating(w));
  FinishTerminatingPods(h.fake());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return h.Converged("demo") && h.Cr("demo")["status"]["replicas"] == 1;
  })) << h.Cr("demo").dump(2);
  EXPECT_EQ(Count(h.fake(), kStatefulSets), 2u);
  for (const Json& p : h.fake().List("pods", "default")) EXPECT_EQ(LabelOf(p, kLabelGroup), "0");
}

TEST(LifecycleTest, WorkersGoWhenTheSchedulerOutlivesItsGracePeriod) {
  Harness h(GracefulPods());
  ASSERT_TRUE(h.ok());
  std::atomic<int64_t> skew_s{0};
  h.StartController("a", false, [&](ManagerOptions& o) {
    o.reconciler.clock = [&] { return absl::Now() + absl::Seconds(skew_s.load()); };
  });
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Replicas(2).Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);
  Json cr = h.Cr("demo");
  cr["spec"]["replicas"] = 1;
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto s = PodsOf(h.fake(), 1, "scheduler");
    return s.size() == 1 && IsTerminating(s[0]);
  }));
  // The scheduler hangs in termination; the workers wait for its grace period
  // (spec.lifecycle.terminationGracePeriodSeconds, default 60) and no longer.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_TRUE(h.fake().Get(kStatefulSets, "default", "demo-g1-s0").ok());
  skew_s = 61;
  Json touch = h.Cr("demo");  // any event: the controller looks again
  touch["metadata"]["annotations"]["touch"] = "1";
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, touch).ok());
  EXPECT_TRUE(Harness::WaitFor([&] {
    return !h.fake().Get(kStatefulSets, "default", "demo-g1-s0").ok();
  })) << "workers kept after the scheduler's grace period";
}

TEST(LifecycleTest, RolloutReplacesWorkersOnlyAfterTheOldSchedulerStopped) {
  Harness h(GracefulPods());
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Pipeline(2).Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);
  std::string old_rev = h.Cr("demo")["status"]["updateRevision"];

  Json cr = h.Cr("demo");
  cr["spec"]["image"] = "orca:v2";
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  // The scheduler Deployment (Recreate) takes the new template: its old pod stops.
  ASSERT_TRUE(Harness::WaitFor([&] {
    for (const Json& s : PodsOf(h.fake(), 0, "scheduler")) {
      if (LabelOf(s, kLabelRevision) == old_rev && IsTerminating(s)) return true;
    }
    return false;
  })) << "the old scheduler was not stopped";
  absl::SleepFor(absl::Milliseconds(400));
  std::vector<Json> workers = PodsOf(h.fake(), 0, "worker");
  ASSERT_EQ(workers.size(), 2u);
  for (const Json& w : workers) {
    EXPECT_EQ(LabelOf(w, kLabelRevision), old_rev);
    EXPECT_FALSE(IsTerminating(w))
        << w["metadata"]["name"] << " was replaced while the old scheduler was draining";
  }
  // The old scheduler exits: the stale workers are replaced together.
  for (const Json& s : PodsOf(h.fake(), 0, "scheduler")) {
    if (IsTerminating(s)) {
      ASSERT_TRUE(h.fake().FinishTermination("default", s["metadata"]["name"]).ok());
    }
  }
  ASSERT_TRUE(Harness::WaitFor([&] {
    std::vector<Json> w = PodsOf(h.fake(), 0, "worker");
    return w.size() == 2 && IsTerminating(w[0]) && IsTerminating(w[1]);
  })) << "stale workers were not replaced after the old scheduler stopped";
  FinishTerminatingPods(h.fake());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return h.Converged("demo") && h.Cr("demo")["status"]["currentRevision"] != old_rev;
  })) << h.Cr("demo").dump(2);
}

TEST(LifecycleTest, GroupRestartStopsTheSchedulerBeforeReplacingWorkers) {
  Harness h(GracefulPods());
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(
      h.fake()
          .Upsert(kCrPlural, CrBuilder().Pipeline(2).MaxGroupRestarts(2).RestartBackoff(0).Build())
          .ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }));
  std::string s0_uid = (*h.fake().Get("pods", "default", "demo-g0-s0-0"))["metadata"]["uid"];
  Json status = (*h.fake().Get("pods", "default", "demo-g0-s1-0"))["status"];
  status["containerStatuses"][0]["restartCount"] = 1;
  ASSERT_TRUE(h.fake().SetStatus("pods", "default", "demo-g0-s1-0", status).ok());

  // The scheduler is stopped first...
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto s = PodsOf(h.fake(), 0, "scheduler");
    return s.size() == 1 && IsTerminating(s[0]);
  })) << "the restart did not stop the scheduler";
  absl::SleepFor(absl::Milliseconds(400));
  for (const Json& w : PodsOf(h.fake(), 0, "worker")) {
    EXPECT_FALSE(IsTerminating(w)) << w["metadata"]["name"] << " stopped before its scheduler";
  }
  EXPECT_EQ(h.Cr("demo")["status"]["groups"][0]["restarts"], 1) << "one restart, counted once";

  // ...and once it has exited, the workers are replaced together and the group returns.
  FinishTerminatingPods(h.fake());
  ASSERT_TRUE(Harness::WaitFor([&] {
    std::vector<Json> w = PodsOf(h.fake(), 0, "worker");
    return w.size() == 2 && IsTerminating(w[0]) && IsTerminating(w[1]);
  })) << "the workers were not replaced after the scheduler stopped";
  FinishTerminatingPods(h.fake());
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto p = h.fake().Get("pods", "default", "demo-g0-s0-0");
    return p.ok() && (*p)["metadata"]["uid"] != s0_uid && h.Converged("demo");
  })) << h.Cr("demo").dump(2);
  Json g0 = h.Cr("demo")["status"]["groups"][0];
  EXPECT_EQ(g0["restarts"], 1);
  Json sched = *h.fake().Get(kDeployments, "default", "demo-g0-scheduler");
  EXPECT_EQ(sched["spec"]["replicas"], 1);
  EXPECT_FALSE(sched["metadata"].contains("annotations") &&
               sched["metadata"]["annotations"].contains("serving.orca.dev/restarting"));
}

TEST(LifecycleTest, ReleasedGroupScalesItsSchedulerToZeroFirst) {
  Harness h(GracefulPods());
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(
      h.fake()
          .Upsert(kCrPlural, CrBuilder().Pipeline(2).MaxGroupRestarts(0).RestartBackoff(0).Build())
          .ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }));
  Json status = (*h.fake().Get("pods", "default", "demo-g0-s1-0"))["status"];
  status["containerStatuses"][0]["restartCount"] = 3;
  ASSERT_TRUE(h.fake().SetStatus("pods", "default", "demo-g0-s1-0", status).ok());
  auto replicas = [&](const char* plural, const std::string& name) {
    auto o = h.fake().Get(plural, "default", name);
    return o.ok() ? (*o)["spec"].value("replicas", -1) : -1;
  };
  ASSERT_TRUE(Harness::WaitFor([&] {
    auto s = PodsOf(h.fake(), 0, "scheduler");
    return replicas(kDeployments, "demo-g0-scheduler") == 0 && s.size() == 1 && IsTerminating(s[0]);
  })) << h.Cr("demo").dump(2);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(replicas(kStatefulSets, "demo-g0-s0"), 1) << "workers scaled down before the scheduler";
  FinishTerminatingPods(h.fake());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return replicas(kStatefulSets, "demo-g0-s0") == 0 && replicas(kStatefulSets, "demo-g0-s1") == 0;
  }));
  FinishTerminatingPods(h.fake());
  EXPECT_TRUE(Harness::WaitFor([&] { return Count(h.fake(), "pods") == 0; }));
}

// ---- Quantities, waiting reasons, InferencePool ----

TEST(ReconcileTest, CanonicalQuantitiesFromTheServerDoNotCauseReapplies) {
  Harness h;
  ASSERT_TRUE(h.ok());
  Harness::Instance& inst = h.StartController("a");
  ASSERT_TRUE(
      h.fake()
          .Upsert(kCrPlural, CrBuilder()
                                 .Pipeline(2)
                                 .Set("/spec/worker/resources", {{"limits", {{"memory", "1024Mi"}}},
                                                                 {"requests", {{"cpu", "0.5"}}}})
                                 .Build())
          .ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);
  // The server stores every quantity canonically (the builder wrote nvidia.com/gpu: 1).
  Json sts = *h.fake().Get(kStatefulSets, "default", "demo-g0-s0");
  Json limits = sts["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpu"], "1") << limits.dump();
  EXPECT_EQ(limits["memory"], "1Gi") << limits.dump();

  h.fake().ClearRequests();
  int64_t before = inst.manager->metrics().reconciles("success");
  for (int i = 0; i < 3; ++i) {
    Json cr = h.Cr("demo");
    cr["metadata"]["annotations"]["touch"] = std::to_string(i);
    ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
    ASSERT_TRUE(Harness::WaitFor(
        [&] { return inst.manager->metrics().reconciles("success") >= before + i + 1; }));
  }
  for (const auto& r : h.fake().Requests()) {
    EXPECT_NE(r.method, "PATCH") << "a converged deployment was applied again: " << r.path;
  }
}

TEST(ReconcileTest, BlockedPodsShowInConditionsAndEvents) {
  Harness h;
  ASSERT_TRUE(h.ok());
  absl::Mutex mu;
  std::set<std::string> unready;
  h.fake().SetPodReadiness([&](const Json& pod) {
    absl::MutexLock lock(&mu);
    return unready.count(pod["metadata"].value("name", "")) == 0;
  });
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, CrBuilder().Pipeline(2).Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); })) << h.Cr("demo").dump(2);
  EXPECT_EQ(Harness::Condition(h.Cr("demo"), "PodsBlocked")["status"], "False");

  {
    absl::MutexLock lock(&mu);
    unready.insert("demo-g0-s1-0");
  }
  Json status = (*h.fake().Get("pods", "default", "demo-g0-s1-0"))["status"];
  status["phase"] = "Pending";
  status["conditions"] = Json::array({{{"type", "Ready"}, {"status", "False"}}});
  status["containerStatuses"][0]["ready"] = false;
  status["containerStatuses"][0]["state"] = {
      {"waiting",
       {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image \"orca:missing\""}}}};
  ASSERT_TRUE(h.fake().SetStatus("pods", "default", "demo-g0-s1-0", status).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "PodsBlocked").value("reason", "") ==
           "ImagePullBackOff";
  })) << h.Cr("demo").dump(2);
  Json blocked = Harness::Condition(h.Cr("demo"), "PodsBlocked");
  EXPECT_EQ(blocked["status"], "True");
  EXPECT_THAT(blocked["message"].get<std::string>(), HasSubstr("pod demo-g0-s1-0 (group 0)"));
  EXPECT_THAT(blocked["message"].get<std::string>(), HasSubstr("orca:missing"));
  auto warned = [&](const std::string& reason, const std::string& text) {
    for (const Json& e : h.fake().List("events", "default")) {
      if (e["reason"] == reason && e["type"] == "Warning" &&
          e["message"].get<std::string>().find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(Harness::WaitFor([&] { return warned("ImagePullBackOff", "demo-g0-s1-0"); }));

  // An unschedulable scheduler pod (PodScheduled=False) is reported with its reason.
  {
    absl::MutexLock lock(&mu);
    unready.insert(PodsOf(h.fake(), 0, "scheduler")[0]["metadata"]["name"]);
  }
  std::string sched = PodsOf(h.fake(), 0, "scheduler")[0]["metadata"]["name"];
  Json pending = {
      {"phase", "Pending"},
      {"conditions",
       Json::array({{{"type", "PodScheduled"},
                     {"status", "False"},
                     {"reason", "Unschedulable"},
                     {"message", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}},
                    {{"type", "Ready"}, {"status", "False"}}})}};
  ASSERT_TRUE(h.fake().SetStatus("pods", "default", sched, pending).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    std::string m = Harness::Condition(h.Cr("demo"), "PodsBlocked").value("message", "");
    return m.find("Insufficient nvidia.com/gpu") != std::string::npos;
  })) << h.Cr("demo").dump(2);
  EXPECT_TRUE(Harness::WaitFor([&] { return warned("Unschedulable", sched); }));

  // Fixed: the condition clears.
  {
    absl::MutexLock lock(&mu);
    unready.clear();
  }
  for (const std::string& name : {std::string("demo-g0-s1-0"), sched}) {
    Json fixed = (*h.fake().Get("pods", "default", name))["status"];
    fixed["phase"] = "Running";
    fixed["conditions"] = Json::array({{{"type", "Ready"}, {"status", "True"}}});
    if (fixed.contains("containerStatuses")) fixed["containerStatuses"][0].erase("state");
    ASSERT_TRUE(h.fake().SetStatus("pods", "default", name, fixed).ok());
  }
  EXPECT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "PodsBlocked").value("status", "") == "False";
  })) << h.Cr("demo").dump(2);
}

CrBuilder WithInferencePool() {
  CrBuilder b;
  b.Set("/spec/routing/inferencePool/enabled", true);
  b.Set("/spec/routing/inferencePool/endpointPicker/name", "demo-epp");
  return b;
}

constexpr char kInferencePools[] = "inference.networking.k8s.io/v1/inferencepools";

TEST(ReconcileTest, InferencePoolIsAppliedWhenEnabledAndPrunedWhenDisabled) {
  Harness h;
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, WithInferencePool().Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return h.Converged("demo") && Count(h.fake(), kInferencePools) == 1;
  })) << h.Cr("demo").dump(2);
  Json pool = *h.fake().Get(kInferencePools, "default", "demo");
  EXPECT_EQ(pool["spec"]["endpointPickerRef"]["name"], "demo-epp");
  EXPECT_EQ(pool["metadata"]["ownerReferences"][0]["uid"], h.Cr("demo")["metadata"]["uid"]);
  EXPECT_EQ(Harness::Condition(h.Cr("demo"), "RoutingReady")["reason"], "InferencePoolConfigured");

  Json cr = h.Cr("demo");
  cr["spec"]["routing"]["inferencePool"]["enabled"] = false;
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, cr).ok());
  ASSERT_TRUE(Harness::WaitFor([&] { return Count(h.fake(), kInferencePools) == 0; }))
      << "a disabled InferencePool was not pruned";
  EXPECT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "RoutingReady").value("reason", "") ==
           "InferencePoolDisabled";
  }));
}

TEST(ReconcileTest, MissingInferencePoolApiIsReportedNotFatal) {
  FakeApiServerOptions opts;
  opts.unserved = {"inferencepools"};
  Harness h(opts);
  ASSERT_TRUE(h.ok());
  h.StartController("a");
  ASSERT_TRUE(h.fake().Upsert(kCrPlural, WithInferencePool().Build()).ok());
  ASSERT_TRUE(Harness::WaitFor([&] {
    return Harness::Condition(h.Cr("demo"), "RoutingReady").value("reason", "") ==
           "InferencePoolApiMissing";
  })) << h.Cr("demo").dump(2);
  EXPECT_THAT(Harness::Condition(h.Cr("demo"), "RoutingReady")["message"].get<std::string>(),
              HasSubstr("Gateway API Inference Extension"));
  EXPECT_TRUE(Harness::WaitFor([&] { return h.Converged("demo"); }))
      << "a missing InferencePool API is not fatal";
  EXPECT_EQ(Harness::Condition(h.Cr("demo"), "Degraded")["status"], "False");
}

}  // namespace
}  // namespace orca::controller
