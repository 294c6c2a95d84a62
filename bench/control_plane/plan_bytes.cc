// Control-plane bytes per plan: a real IterationScheduler runs N requests (512-token
// prompts, 256 output tokens each, all admitted at once) and every plan is encoded both
// whole (ToProto, what the scheduler sent before plans became deltas) and as the delta a
// group's ranks receive (PlanEncoder). Printed per decode iteration at 64 and 256
// running sequences, with and without a penalty (which sends the token history), at
// the first and last decode iteration and on average.
//
// usage: orca-bench-plan-bytes [--out FILE.json]; plot: /usr/bin/python3
//        bench/control_plane/plot.py FILE.json FILE.png
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>

#include "engine/group/plan_codec.h"
#include "engine/sched/scheduler.h"
#include "nlohmann/json.hpp"

namespace orca {
namespace {

constexpr int32_t kPrompt = 512;
constexpr int32_t kOutput = 256;

nlohmann::json Run(int32_t running, bool penalty) {
  SchedulerConfig c;
  c.max_model_len = 2048;
  c.max_batch_size = running;
  c.max_batched_tokens = 8192;
  c.prefix_caching = false;
  KvBlockPool pool(running * (kPrompt + kOutput) / 16 + running, 16);
  IterationScheduler sched(c, &pool);
  std::mt19937 rng(1);
  for (int32_t i = 0; i < running; ++i) {
    auto r = std::make_unique<Request>();
    r->id = static_cast<uint64_t>(i + 1);
    for (int32_t t = 0; t < kPrompt; ++t)
      r->prompt_tokens.push_back(static_cast<int32_t>(rng() % 32000));
    r->max_tokens = kOutput;
    r->sampling.temperature = 0.8f;
    r->sampling.top_p = 0.95f;
    r->sampling.seed = r->id;
    if (penalty) r->sampling.frequency_penalty = 0.3f;
    (void)sched.Add(std::move(r));
  }
  PlanEncoder encoder;
  nlohmann::json steps = nlohmann::json::array();
  double sum_full = 0, sum_delta = 0;
  int decodes = 0;
  for (uint64_t it = 1; sched.has_work(); ++it) {
    ScheduledBatch b = sched.Schedule();
    b.plan.iteration = it;
    v1::IterationPlan full, delta;
    ToProto(b.plan, &full);
    encoder.Encode(b.plan, &delta);
    if (b.num_prefill_tokens == 0 && b.num_decode_tokens == running) {
      const double f = static_cast<double>(full.ByteSizeLong());
      const double d = static_cast<double>(delta.ByteSizeLong());
      steps.push_back({{"decode_step", decodes}, {"full_bytes", f}, {"delta_bytes", d}});
      sum_full += f;
      sum_delta += d;
      ++decodes;
    }
    IterationResult result;
    for (const ScheduledSequence& s : b.plan.seqs) {
      if (!s.sample) continue;
      SampledToken t;
      t.seq_id = s.seq_id;
      t.token_id = 1 + static_cast<int32_t>(rng() % 31999);
      result.tokens.push_back(t);
    }
    sched.Update(b, result);
  }
  nlohmann::json out = {{"running", running},
                        {"penalty", penalty},
                        {"decode_iterations", decodes},
                        {"mean_full_bytes", sum_full / decodes},
                        {"mean_delta_bytes", sum_delta / decodes},
                        {"steps", steps}};
  std::cout << running << " sequences, " << (penalty ? "frequency penalty" : "no penalty  ")
            << ": bytes per decode plan, whole " << steps.front()["full_bytes"] << " -> "
            << steps.back()["full_bytes"] << " (mean " << static_cast<int64_t>(sum_full / decodes)
            << "), delta " << steps.front()["delta_bytes"] << " -> " << steps.back()["delta_bytes"]
            << " (mean " << static_cast<int64_t>(sum_delta / decodes) << "), "
            << sum_full / sum_delta << "x smaller\n";
  return out;
}

}  // namespace
}  // namespace orca

int main(int argc, char** argv) {
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_path = argv[++i];
    } else {
      std::cerr << "usage: orca-bench-plan-bytes [--out FILE.json]\n";
      return 2;
    }
  }
  nlohmann::json runs = nlohmann::json::array();
  for (int32_t running : {64, 256}) {
    for (bool penalty : {false, true}) runs.push_back(orca::Run(running, penalty));
  }
  if (!out_path.empty()) {
    std::ofstream(out_path) << nlohmann::json{{"prompt_tokens", orca::kPrompt},
                                              {"output_tokens", orca::kOutput},
                                              {"runs", runs}}
                                   .dump(1)
                            << "\n";
  }
  return 0;
}
