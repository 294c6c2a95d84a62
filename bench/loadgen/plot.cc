#include "bench/loadgen/plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/common/file_util.h"
#include "engine/common/status_macros.h"

extern char** environ;

namespace orca::bench {
namespace {

constexpr char kPlotScript[] = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker

spec = json.load(open(sys.argv[1]))
panels = spec["panels"]
fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.4), squeeze=False)
for ax, p in zip(axes[0], panels):
    for s in p["series"]:
        style = s.get("style", "line")
        if style == "dashed":
            ax.plot(s["x"], s["y"], linestyle="--", linewidth=1.2, label=s["label"])
        elif style == "points":
            ax.plot(s["x"], s["y"], linestyle="none", marker="x", label=s["label"])
        else:
            ax.plot(s["x"], s["y"], marker="o", markersize=4, label=s["label"])
    if p.get("logx"):
        ax.set_xscale("log", base=p["logx"])
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    if p.get("logy"):
        ax.set_yscale("log")
    elif p.get("y_from_zero", True):
        ax.set_ylim(bottom=0)
    ax.set_xlabel(p.get("xlabel", ""))
    ax.set_ylabel(p.get("ylabel", ""))
    ax.set_title(p.get("title", ""), fontsize=10)
    ax.grid(True, alpha=0.3)
    if any(s.get("label") for s in p["series"]):
        ax.legend(fontsize=8)
if spec.get("title"):
    fig.suptitle(spec["title"], fontsize=11)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=int(spec.get("dpi", 100)))
)PY";

// Runs argv with stdout and stderr sent to `log_path`; returns the exit status.
absl::StatusOr<int> Spawn(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot run ", args[0], ": ", strerror(rc)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A temporary directory removed on destruction.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/orca-plot.XXXXXX";
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

nlohmann::json SpecJson(const PlotSpec& spec) {
  nlohmann::json panels = nlohmann::json::array();
  for (const auto& p : spec.panels) {
    nlohmann::json series = nlohmann::json::array();
    for (const auto& s : p.series) {
      series.push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}, {"style", s.style}});
    }
    panels.push_back({{"title", p.title},
                      {"xlabel", p.xlabel},
                      {"ylabel", p.ylabel},
                      {"logx", p.logx},
                      {"logy", p.logy},
                      {"y_from_zero", p.y_from_zero},
                      {"series", series}});
  }
  return {{"title", spec.title}, {"panels", panels}, {"dpi", spec.dpi}};
}

}  // namespace

std::string PlotPython() {
  if (const char* p = std::getenv("ORCA_BENCH_PYTHON"); p && *p) return p;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

absl::Status PlottingAvailable() {
  TempDir dir;
  if (dir.path().empty()) return absl::InternalError("cannot create a temporary directory");
  ORCA_ASSIGN_OR_RETURN(int rc,
                        Spawn({PlotPython(), "-c", "import matplotlib"}, dir.path() + "/log"));
  if (rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        PlotPython(), " cannot import matplotlib: install python3-matplotlib (Debian) or set ",
        "ORCA_BENCH_PYTHON to an interpreter that has it"));
  }
  return absl::OkStatus();
}

absl::Status RenderPng(const PlotSpec& spec, const std::string& png_path) {
  if (spec.panels.empty()) return absl::InvalidArgumentError("nothing to plot");
  TempDir dir;
  if (dir.path().empty()) return absl::InternalError("cannot create a temporary directory");
  const std::string script = dir.path() + "/plot.py", data = dir.path() + "/spec.json";
  const std::string log = dir.path() + "/log";
  ORCA_RETURN_IF_ERROR(WriteFile(script, kPlotScript));
  ORCA_RETURN_IF_ERROR(WriteFile(data, SpecJson(spec).dump()));
  ORCA_ASSIGN_OR_RETURN(int rc, Spawn({PlotPython(), script, data, png_path}, log));
  if (rc != 0) {
    std::string err = ReadFile(log).value_or("");
    if (err.find("No module named 'matplotlib'") != std::string::npos) {
      return PlottingAvailable();
    }
    if (err.size() > 2000) err = err.substr(err.size() - 2000);
    return absl::InternalError(absl::StrCat("plotting ", png_path, " failed: ", err));
  }
  if (!FileExists(png_path)) return absl::InternalError(png_path + " was not written");
  return absl::OkStatus();
}

PlotSpec LatencyThroughputPlot(const std::vector<CurvePoint>& points, const std::string& title,
                               const std::vector<LatencyTarget>& targets) {
  std::vector<std::string> order;  // labels in first-seen order
  std::map<std::string, std::vector<CurvePoint>> by_label;
  for (const auto& p : points) {
    if (!by_label.count(p.label)) order.push_back(p.label);
    by_label[p.label].push_back(p);
  }
  PlotPanel panel;
  panel.title = title;
  panel.xlabel = "throughput (req/s)";
  panel.ylabel = "median normalized latency (ms/token)";
  for (const auto& label : order) {
    auto pts = by_label[label];
    std::stable_sort(pts.begin(), pts.end(), [](const CurvePoint& a, const CurvePoint& b) {
      return a.offered_rate != b.offered_rate ? a.offered_rate < b.offered_rate
                                              : a.throughput < b.throughput;
    });
    PlotSeries s;
    s.label = label;
    for (const auto& p : pts) {
      s.x.push_back(p.throughput);
      s.y.push_back(p.median_normalized_ms);
    }
    panel.series.push_back(std::move(s));
  }
  if (!points.empty()) {
    const auto [lo, hi] = std::minmax_element(
        points.begin(), points.end(),
        [](const CurvePoint& a, const CurvePoint& b) { return a.throughput < b.throughput; });
    for (const auto& t : targets) {
      panel.series.push_back({t.label, {lo->throughput, hi->throughput}, {t.ms, t.ms}, "dashed"});
    }
  }
  PlotSpec spec;
  spec.panels.push_back(std::move(panel));
  return spec;
}

absl::StatusOr<PlotSpec> EngineSweepPlot(const std::vector<nlohmann::json>& docs,
                                         const std::vector<std::string>& labels,
                                         const std::string& title) {
  PlotPanel total, decode;
  total.title = "batch of identical requests, run to completion";
  total.xlabel = decode.xlabel = "batch size";
  total.ylabel = "time to completion (s)";
  decode.title = "one decode iteration";
  decode.ylabel = "decode iteration time (ms)";
  total.logx = decode.logx = 2;
  for (size_t d = 0; d < docs.size(); ++d) {
    const nlohmann::json& doc = docs[d];
    if (!doc.is_object() || !doc.contains("points") || !doc["points"].is_array()) {
      return absl::InvalidArgumentError(labels[d] + ": not an orca bench engine result");
    }
    const std::string prefix = docs.size() > 1 ? labels[d] + ": " : "";
    PlotSeries t{prefix + "measured", {}, {}, "line"},
        tf{prefix + "roofline floor", {}, {}, "dashed"};
    PlotSeries m{prefix + "measured", {}, {}, "line"};
    PlotSeries bw{prefix + "memory-bandwidth floor", {}, {}, "dashed"};
    PlotSeries fl{prefix + "FLOP/s floor", {}, {}, "dashed"};
    try {
      for (const auto& p : doc["points"]) {
        const double b = p.at("batch").get<double>();
        t.x.push_back(b);
        t.y.push_back(p.at("total_s").get<double>());
        tf.x.push_back(b);
        tf.y.push_back(p.at("floor_total_s").get<double>());
        for (PlotSeries* s : {&m, &bw, &fl}) s->x.push_back(b);
        m.y.push_back(p.at("decode_iter_ms").at("mean").get<double>());
        bw.y.push_back(p.at("floor_decode_bandwidth_ms").get<double>());
        fl.y.push_back(p.at("floor_decode_flops_ms").get<double>());
      }
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(labels[d] + ": malformed point: " + e.what());
    }
    total.series.push_back(std::move(t));
    total.series.push_back(std::move(tf));
    decode.series.push_back(std::move(m));
    decode.series.push_back(std::move(bw));
    decode.series.push_back(std::move(fl));
  }
  PlotSpec spec;
  spec.title = title;
  spec.panels = {std::move(total), std::move(decode)};
  return spec;
}

}  // namespace orca::bench
