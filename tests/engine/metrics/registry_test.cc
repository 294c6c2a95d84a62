// Registry, Family and Builder: registration, series identity, validation and the
// exact text they expose.
#include "engine/metrics/registry.h"

#include <limits>
#include <string>

#include "absl/status/status.h"
#include "engine/metrics/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orca::metrics {
namespace {

using ::testing::HasSubstr;

TEST(RegistryTest, SerializesFamiliesInRegistrationOrderAndSeriesInCreationOrder) {
  Registry registry;
  auto& success = BuildCounter()
                      .Name("orca_request_success_total")
                      .Help("Finished requests.")
                      .Labels({{"model_name", "m"}})
                      .Register(registry);
  auto& running = BuildGauge()
                      .Name("orca_num_requests_running")
                      .Help("Requests running.")
                      .Labels({{"model_name", "m"}})
                      .Register(registry);
  success.Add({{"finished_reason", "stop"}}).Increment(3);
  success.Add({{"finished_reason", "length"}}).Increment();
  running.Add({}).Set(2);
  EXPECT_EQ(registry.Serialize(),
            "# HELP orca_request_success_total Finished requests.\n"
            "# TYPE orca_request_success_total counter\n"
            "orca_request_success_total{finished_reason=\"stop\",model_name=\"m\"} 3\n"
            "orca_request_success_total{finished_reason=\"length\",model_name=\"m\"} 1\n"
            "# HELP orca_num_requests_running Requests running.\n"
            "# TYPE orca_num_requests_running gauge\n"
            "orca_num_requests_running{model_name=\"m\"} 2\n");
}

TEST(RegistryTest, EscapesHelpAndLabelValues) {
  Registry registry;
  auto& family =
      BuildGauge().Name("g").Help("say \"hi\"\\\nbye").Labels({{"c", "x\"y"}}).Register(registry);
  family.Add({{"v", "a\\b\nc"}}).Set(-0.5);
  EXPECT_EQ(registry.Serialize(),
            "# HELP g say \"hi\"\\\\\\nbye\n"
            "# TYPE g gauge\n"
            "g{c=\"x\\\"y\",v=\"a\\\\b\\nc\"} -0.5\n");
}

TEST(RegistryTest, SpellsSpecialValuesAsPrometheusExpects) {
  Registry registry;
  auto& family = BuildGauge().Name("g").Register(registry);
  family.Add({{"v", "inf"}}).Set(std::numeric_limits<double>::infinity());
  family.Add({{"v", "-inf"}}).Set(-std::numeric_limits<double>::infinity());
  family.Add({{"v", "nan"}}).Set(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(registry.Serialize(),
            "# TYPE g gauge\n"  // no HELP line without help text
            "g{v=\"inf\"} +Inf\n"
            "g{v=\"-inf\"} -Inf\n"
            "g{v=\"nan\"} NaN\n");
}

TEST(RegistryTest, ExposesFamilyWithoutSeriesAsHelpAndType) {
  Registry registry;
  BuildCounter().Name("c_total").Help("C.").Register(registry);
  EXPECT_EQ(registry.Serialize(), "# HELP c_total C.\n# TYPE c_total counter\n");
}

TEST(RegistryTest, AddReturnsSameSeriesForSameLabels) {
  Registry registry;
  auto& family = BuildCounter().Name("c_total").Labels({{"model_name", "m"}}).Register(registry);
  Counter& a = family.Add({{"x", "1"}, {"y", "2"}});
  Counter& b = family.Add({{"y", "2"}, {"x", "1"}});
  Counter& c = family.Add({{"x", "2"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_EQ(family.size(), 2u);
}

TEST(RegistryTest, MergesIdenticalRegistrationAndRejectsConflicts) {
  Registry registry;
  auto& first = BuildCounter().Name("c_total").Help("C.").Register(registry);
  auto& again = BuildCounter().Name("c_total").Help("C.").Register(registry);
  EXPECT_EQ(&first, &again);

  EXPECT_EQ(BuildGauge().Name("c_total").Help("C.").TryRegister(registry).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(BuildCounter().Name("c_total").Help("other").TryRegister(registry).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(BuildCounter()
                .Name("c_total")
                .Help("C.")
                .Labels({{"a", "b"}})
                .TryRegister(registry)
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(RegistryTest, RejectsHistogramSampleNameCollisions) {
  Registry registry;
  ASSERT_TRUE(BuildGauge().Name("latency_sum").TryRegister(registry).ok());
  EXPECT_EQ(BuildHistogram().Name("latency").TryRegister(registry).status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(BuildHistogram().Name("ttft").TryRegister(registry).ok());
  EXPECT_EQ(BuildCounter().Name("ttft_count").TryRegister(registry).status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(RegistryTest, RejectsInvalidNames) {
  Registry registry;
  EXPECT_EQ(BuildCounter().Name("").TryRegister(registry).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildCounter().Name("bad-name").TryRegister(registry).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildCounter().Name("c").Labels({{"__x", "v"}}).TryRegister(registry).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildHistogram().Name("h").Labels({{"le", "1"}}).TryRegister(registry).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildGauge().Name("g").Help("\xff").TryRegister(registry).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Serialize(), "");
}

// vLLM's names (vllm:num_requests_waiting, which endpoint pickers read) are legal
// Prometheus names: the colon is allowed anywhere in a metric name, though never in a
// label name, and the other rules still hold.
TEST(RegistryTest, AcceptsColonsInMetricNamesOnly) {
  Registry registry;
  auto waiting =
      BuildGauge().Name("vllm:num_requests_waiting").Help("Waiting.").TryRegister(registry);
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  (*waiting)->Add({{"model_name", "m"}}).Set(3);
  for (const char* bad : {"vllm-x:waiting", "9vllm:waiting", "vllm:waiting.now", "vllm: x"}) {
    EXPECT_EQ(BuildGauge().Name(bad).TryRegister(registry).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(BuildGauge()
                .Name("vllm:info")
                .Labels({{"block:size", "16"}})
                .TryRegister(registry)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Serialize(),
            "# HELP vllm:num_requests_waiting Waiting.\n"
            "# TYPE vllm:num_requests_waiting gauge\n"
            "vllm:num_requests_waiting{model_name=\"m\"} 3\n");
}

TEST(RegistryTest, TryAddRejectsInvalidLabels) {
  Registry registry;
  auto& counter = BuildCounter().Name("c_total").Labels({{"model_name", "m"}}).Register(registry);
  EXPECT_EQ(counter.TryAdd({{"a-b", "v"}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(counter.TryAdd({{"model_name", "other"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(counter.TryAdd({{"v", "\xc3"}}).status().code(), absl::StatusCode::kInvalidArgument);
  auto& histogram = BuildHistogram().Name("h").Register(registry);
  EXPECT_EQ(histogram.TryAdd({{"le", "1"}}, {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(histogram.TryAdd({}, {2, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(counter.size(), 0u);
  EXPECT_EQ(histogram.size(), 0u);
}

TEST(RegistryTest, FailedAddAssertsInDebugAndDetachesInRelease) {
  Registry registry;
  auto& family = BuildCounter().Name("c_total").Register(registry);
  EXPECT_DEBUG_DEATH(
      {
        Counter& detached = family.Add({{"bad-label", "v"}});
        detached.Increment();
        EXPECT_EQ(detached.Value(), 1);
      },
      "invalid labels");
  EXPECT_DEBUG_DEATH(BuildGauge().Name("bad name").Register(registry).Add({}).Set(1),
                     "invalid metric family");
  EXPECT_EQ(registry.Serialize(), "# TYPE c_total counter\n");
}

TEST(CounterTest, IgnoresNegativeAndNanIncrements) {
  Counter c;
  c.Increment();
  c.Increment(2.5);
  c.Increment(-10);
  c.Increment(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(c.Value(), 3.5);
}

TEST(GaugeTest, SetsIncrementsAndDecrements) {
  Gauge g;
  g.Set(10);
  g.Increment();
  g.Increment(4);
  g.Decrement();
  g.Decrement(20);
  EXPECT_EQ(g.Value(), -6);
}

}  // namespace
}  // namespace orca::metrics
