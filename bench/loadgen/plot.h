// PNG line charts for `orca bench`, drawn by matplotlib (Debian's python3-matplotlib)
// from a small spec: the script is built in, so the tool works from any directory.
//
// The interpreter is $ORCA_BENCH_PYTHON when set, else /usr/bin/python3 (where Debian
// installs matplotlib; a virtualenv's python3 first on PATH may lack it), else python3.
// Functions that render run a child process; they are thread-compatible.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/loadgen/report.h"

namespace orca::bench {

struct PlotSeries {
  std::string label;
  std::vector<double> x, y;
  // "line" (with markers), "dashed" (a bound, no markers), "points" (markers only).
  std::string style = "line";
};

struct PlotPanel {
  std::string title, xlabel, ylabel;
  int logx = 0;  // 0: linear; otherwise the log base
  bool logy = false;
  bool y_from_zero = true;  // with a linear y axis
  std::vector<PlotSeries> series;
};

struct PlotSpec {
  std::string title;
  std::vector<PlotPanel> panels;  // side by side
  int dpi = 100;
};

// Returns the python interpreter used for plotting (see above).
std::string PlotPython();
// Returns OK when the interpreter can import matplotlib, else FailedPrecondition
// saying what to install.
absl::Status PlottingAvailable();
// Renders `spec` to the PNG file `png_path`. Fails with FailedPrecondition when
// plotting is unavailable and Internal (with the script's stderr) when it fails.
absl::Status RenderPng(const PlotSpec& spec, const std::string& png_path);

// A latency bound drawn across Figure 10, e.g. {"2x unloaded", 37.1}.
struct LatencyTarget {
  std::string label;
  double ms = 0;
};

// Returns the paper's Figure 10 for `points`: median normalized latency (ms/token)
// against throughput (req/s), one curve per label, points sorted by offered rate
// (then throughput), and each of `targets` as a dashed horizontal line across the
// points' throughputs.
PlotSpec LatencyThroughputPlot(const std::vector<CurvePoint>& points, const std::string& title,
                               const std::vector<LatencyTarget>& targets = {});

// Returns the engine microbenchmark's plot for orca.bench.engine/v1 documents (one
// curve each, named by `labels`): time to run the batch to completion against batch
// size with its roofline floor, and the decode iteration time with the bandwidth and
// FLOP floors. Fails with InvalidArgument when a document lacks points.
absl::StatusOr<PlotSpec> EngineSweepPlot(const std::vector<nlohmann::json>& docs,
                                         const std::vector<std::string>& labels,
                                         const std::string& title);

}  // namespace orca::bench
