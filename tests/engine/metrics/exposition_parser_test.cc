// Cross-checks the exposition with an independent parser: the Prometheus Python
// client's (Debian python3-prometheus-client). The test writes a registry full of
// awkward names, label values, help texts and numbers, plus a JSON file of the
// samples it expects; check_exposition.py parses the text and compares every
// family and sample.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "engine/metrics/metrics.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testutil/testutil.h"

namespace orca::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr char kPython[] = "/usr/bin/python3";

// Records the families and samples the exposition should contain, in order.
class Expectation {
 public:
  void Family(const std::string& name, const std::string& type, const std::string& help) {
    json_["families"].push_back({{"name", name}, {"type", type}, {"help", help}});
    json_["families"].back()["samples"] = nlohmann::json::array();
  }
  void Sample(const std::string& name, const Labels& labels, double value) {
    nlohmann::json v = value;
    if (std::isnan(value)) v = "NaN";
    if (std::isinf(value)) v = value > 0 ? "+Inf" : "-Inf";
    json_["families"].back()["samples"].push_back(
        {{"name", name}, {"labels", labels}, {"value", v}});
  }
  // Records the samples of a histogram that observed `values`, computing the
  // cumulative buckets directly from the definition.
  void HistogramSamples(const std::string& name, const Labels& labels,
                        const BucketBoundaries& bounds, const std::vector<double>& values) {
    for (size_t i = 0; i <= bounds.size(); ++i) {
      double bound = kInf;
      if (i < bounds.size()) bound = bounds[i];
      const auto n =
          std::count_if(values.begin(), values.end(), [bound](double v) { return v <= bound; });
      Labels with_le = labels;
      // Any spelling that parses to the bound will do; the checker compares numbers.
      with_le["le"] = i < bounds.size() ? nlohmann::json(bound).dump() : "+Inf";
      Sample(name + "_bucket", with_le, static_cast<double>(n));
    }
    // Left to right, as the histogram adds them, so the double sum is identical.
    Sample(name + "_sum", labels, std::accumulate(values.begin(), values.end(), 0.0));
    Sample(name + "_count", labels, static_cast<double>(values.size()));
  }
  const nlohmann::json& json() const { return json_; }

 private:
  nlohmann::json json_ = {{"families", nlohmann::json::array()}};
};

bool ParserInstalled() {
  return testing::RunCommand(std::string(kPython) +
                             " -c 'import prometheus_client.parser' >/dev/null 2>&1") == 0;
}

TEST(ExpositionParserTest, PythonPrometheusClientParsesEverySample) {
  if (!ParserInstalled()) {
    if (testing::InCi()) FAIL() << "python3-prometheus-client is missing in CI";
    GTEST_SKIP() << "python3-prometheus-client not installed (apt-get install "
                    "python3-prometheus-client); skipping the parser cross-check";
  }
  Registry registry;
  Expectation expect;
  const std::vector<std::string> nasty_values = {
      "plain",
      "quote\"d",
      "back\\slash",
      "new\nline",
      "ends with backslash\\",
      "literal \\n, not a newline",
      "\\\"",
      "a=b,c=\"d\"} {",
      "",
      "UTF-8: \xe6\xa8\xa1\xe5\x9e\x8b \xc3\xbc \xf0\x9f\x9a\x80",
  };
  const std::string model = "llama \"7b\"\\v2\n";

  // Counters: constant labels merged into every series, several label sets.
  const std::string counter_help =
      "Prompt tokens: \"quotes\", a back\\slash, a\nnewline, \xe2\x9c\x93";
  auto& tokens = BuildCounter()
                     .Name("orca_prompt_tokens_total")
                     .Help(counter_help)
                     .Labels({{"model_name", model}})
                     .Register(registry);
  expect.Family("orca_prompt_tokens_total", "counter", counter_help);
  const std::vector<std::pair<std::string, double>> increments = {
      {"stop", 5}, {"length", 1e6 + 0.5}, {"abort", 0}};
  for (const auto& [reason, amount] : increments) {
    tokens.Add({{"finished_reason", reason}}).Increment(amount);
    expect.Sample("orca_prompt_tokens_total", {{"finished_reason", reason}, {"model_name", model}},
                  amount);
  }
  auto& plain = BuildCounter().Name("orca_plain_total").Help("No labels.").Register(registry);
  plain.Add({}).Increment(7);
  expect.Family("orca_plain_total", "counter", "No labels.");
  expect.Sample("orca_plain_total", {}, 7);

  // Gauges: every awkward label value, paired with an awkward number.
  const std::vector<double> numbers = {0.1,  1.0 / 3, -2.5,         5e-324, 1.7976931348623157e308,
                                       kInf, -kInf,   std::nan(""), 0,      123456789012345680.0};
  auto& gauges = BuildGauge().Name("orca:gauge_values").Help("Gauge.").Register(registry);
  expect.Family("orca:gauge_values", "gauge", "Gauge.");
  for (size_t i = 0; i < nasty_values.size(); ++i) {
    const double v = numbers[i % numbers.size()];
    const Labels labels = {{"value", nasty_values[i]}, {"_i", std::to_string(i)}};
    gauges.Add(labels).Set(v);
    expect.Sample("orca:gauge_values", labels, v);
  }

  // A family with no series yet is still well-formed.
  BuildGauge().Name("orca_group_ready").Help("Ready.").Register(registry);
  expect.Family("orca_group_ready", "gauge", "Ready.");

  // Histograms: exponential and linear buckets, two label sets, values on bounds.
  const BucketBoundaries ttft_bounds = ExponentialBuckets(0.001, 2, 12);
  auto& ttft = BuildHistogram()
                   .Name("orca_time_to_first_token_seconds")
                   .Help("TTFT.")
                   .Labels({{"model_name", model}})
                   .Register(registry);
  expect.Family("orca_time_to_first_token_seconds", "histogram", "TTFT.");
  const std::vector<std::pair<std::string, std::vector<double>>> ttft_series = {
      {"new\nline", {0.001, 0.0015, 0.004, 0.3, 2.048, 9.5, 0}},
      {"\xc3\xbc", {}},
  };
  for (const auto& [value, observations] : ttft_series) {
    Histogram& h = ttft.Add({{"tenant", value}}, ttft_bounds);
    for (double o : observations) h.Observe(o);
    expect.HistogramSamples("orca_time_to_first_token_seconds",
                            {{"model_name", model}, {"tenant", value}}, ttft_bounds, observations);
  }
  const BucketBoundaries token_bounds = LinearBuckets(0, 64, 5);
  auto& iteration_tokens =
      BuildHistogram().Name("orca_iteration_tokens").Help("Tokens.").Register(registry);
  expect.Family("orca_iteration_tokens", "histogram", "Tokens.");
  const std::vector<double> token_counts = {0, 1, 64, 65, 128, 256, 257, 4096};
  Histogram& tokens_hist = iteration_tokens.Add({}, token_bounds);
  for (double t : token_counts) tokens_hist.Observe(t);
  expect.HistogramSamples("orca_iteration_tokens", {}, token_bounds, token_counts);

  testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  {
    std::ofstream text(dir.file("metrics.txt"), std::ios::binary);
    text << registry.Serialize();
    std::ofstream json(dir.file("expected.json"), std::ios::binary);
    json << expect.json().dump(2);
  }
  const std::string script = testing::SourceDir() + "/tests/engine/metrics/check_exposition.py";
  std::string output;
  const int rc =
      testing::RunCommand(std::string(kPython) + " " + script + " " + dir.file("metrics.txt") +
                              " " + dir.file("expected.json") + " 2>&1",
                          &output);
  EXPECT_EQ(rc, 0) << output << "\n--- exposition ---\n" << registry.Serialize();
  std::cout << output;
}

}  // namespace
}  // namespace orca::metrics
