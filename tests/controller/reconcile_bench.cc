// Reconcile latency benchmark: time from an InferenceDeployment change to all of its
// objects being applied, against the fake API server over loopback HTTP, for N CRs
// changed at once. Prints one JSON object.
//
//   orca-controller-bench [--deployments 1,100] [--workers 4] [--latency-ms 0]
//
// Each CR: 1 group, tensor 2 x pipeline 2 (ConfigMap, 3 Services, 1 Deployment,
// 2 StatefulSets). Phases: "create" (CRs created), "update" (image changed: a new
// revision), each measured to "applied" (every object of the CR's revision stored)
// and "available" (status Available with the new revision observed).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/api/spec.h"
#include "controller/builders/builders.h"
#include "controller/builders/layout.h"
#include "engine/common/log.h"
#include "tests/controller/cr_builder.h"
#include "tests/controller/harness.h"

namespace orca::controller {
namespace {

using testing::CrBuilder;
using testing::Harness;

struct Tracker {
  std::mutex mu;
  // (cr name, revision) -> objects stored at that revision, and when the last came.
  std::map<std::pair<std::string, std::string>, std::set<std::string>> seen;
  std::map<std::pair<std::string, std::string>, absl::Time> complete_at;
  std::map<std::string, size_t> expected;  // revision-labelled objects per CR
};

Json Stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))];
  };
  double sum = 0;
  for (double m : ms) sum += m;
  return Json{{"n", ms.size()},
              {"mean_ms", ms.empty() ? 0.0 : sum / ms.size()},
              {"p50_ms", pct(0.5)},
              {"p90_ms", pct(0.9)},
              {"max_ms", ms.empty() ? 0.0 : ms.back()}};
}

Json RunOnce(int n, int workers, int latency_ms) {
  Harness h;
  if (!h.ok()) return Json{{"error", "fake API server did not start"}};
  if (latency_ms > 0) h.fake().SetLatency(absl::Milliseconds(latency_ms));
  Tracker t;
  h.fake().SetWriteObserver([&t](const std::string&, const Json& o) {
    const Json& labels = o["metadata"].value("labels", Json::object());
    if (!labels.contains(kLabelDeployment) || !labels.contains(kLabelRevision)) return;
    if (o.value("kind", "") == "Pod") return;
    std::string cr = labels[kLabelDeployment];
    std::string rev = labels[kLabelRevision];
    std::lock_guard<std::mutex> lock(t.mu);
    auto key = std::make_pair(cr, rev);
    t.seen[key].insert(o.value("kind", "") + "/" + o["metadata"].value("name", ""));
    if (t.seen[key].size() == t.expected[cr] && !t.complete_at.count(key)) {
      t.complete_at[key] = absl::Now();
    }
  });
  h.StartController("bench", false, [workers](ManagerOptions& o) { o.workers = workers; });

  auto phase = [&](const std::string& image) {
    std::map<std::string, std::string> revision;
    std::map<std::string, absl::Time> written;
    for (int i = 0; i < n; ++i) {
      std::string name = absl::StrCat("bench-", i);
      Json cr = CrBuilder(name).Tensor(2).Pipeline(2).Image(image).Build();
      auto d = ParseInferenceDeployment(cr);
      revision[name] = RevisionHash(d->spec);
      {
        std::lock_guard<std::mutex> lock(t.mu);
        size_t count = 0;
        for (const Json& o : BuildAllObjects(*d)) {
          if (o["metadata"]["labels"].contains(kLabelRevision)) ++count;
        }
        t.expected[name] = count;
      }
      Json existing = h.Cr(name);
      if (!existing.is_null()) cr["metadata"] = existing["metadata"];
      written[name] = absl::Now();
      (void)h.fake().Upsert(testing::kCrPlural, cr);
    }
    std::vector<double> applied_ms, available_ms;
    std::map<std::string, bool> available;
    absl::Time give_up = absl::Now() + absl::Seconds(300);
    while (absl::Now() < give_up) {
      for (auto& [name, rev] : revision) {
        if (available[name]) continue;
        Json cr = h.Cr(name);
        if (h.Converged(name) && cr["status"].value("currentRevision", "") == rev) {
          available[name] = true;
          available_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - written[name]));
        }
      }
      if (available_ms.size() == revision.size()) break;
      absl::SleepFor(absl::Milliseconds(20));
    }
    std::lock_guard<std::mutex> lock(t.mu);
    for (auto& [name, rev] : revision) {
      auto it = t.complete_at.find({name, rev});
      if (it != t.complete_at.end()) {
        applied_ms.push_back(absl::ToDoubleMilliseconds(it->second - written[name]));
      }
    }
    return Json{{"applied", Stats(applied_ms)}, {"available", Stats(available_ms)}};
  };
  Json create = phase("orca:v1");
  Json update = phase("orca:v2");
  return Json{
      {"deployments", n}, {"workers", workers}, {"api_latency_ms", latency_ms},
      {"create", create}, {"update", update},   {"api_requests", h.fake().Requests().size()}};
}

}  // namespace
}  // namespace orca::controller

int main(int argc, char** argv) {
  std::vector<int> sizes = {1, 100};
  int workers = 4;
  int latency_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--deployments") {
      sizes.clear();
      for (absl::string_view s : absl::StrSplit(argv[i + 1], ',')) {
        int v;
        if (absl::SimpleAtoi(s, &v)) sizes.push_back(v);
      }
    } else if (flag == "--workers") {
      (void)absl::SimpleAtoi(argv[i + 1], &workers);
    } else if (flag == "--latency-ms") {
      (void)absl::SimpleAtoi(argv[i + 1], &latency_ms);
    }
  }
  setenv("ORCA_LOG_LEVEL", "error", 0);
  orca::controller::Json runs = orca::controller::Json::array();
  for (int n : sizes) {
    runs.push_back(orca::controller::RunOnce(n, workers, latency_ms));
    std::cerr << "deployments=" << n << " done" << std::endl;
  }
  std::cout << orca::controller::Json{{"benchmark", "orca-controller reconcile latency"},
                                      {"server", "in-process fake API server over loopback HTTP"},
                                      {"runs", runs}}
                   .dump(2)
            << std::endl;
  return 0;
}
