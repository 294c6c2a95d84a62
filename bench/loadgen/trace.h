// Request traces for the load generator: which requests to send, when, and with how
// many input and output tokens.
//
//   - the ORCA paper's synthetic trace (section 6.2): Poisson arrivals at rate λ, input
//     length uniform in [32, 512], output length uniform in [1, 128] (bounds adjustable);
//     `burstiness` B != 1 draws the gaps from a gamma distribution of shape B instead
//     (mean 1/λ, coefficient of variation 1/sqrt(B): burstier below 1, steadier above),
//     as vLLM's benchmark does;
//   - a fixed-length trace (every request the same lengths), Poisson or closed-loop;
//   - a JSONL trace file, one request per line:
//       {"arrival_s": 0.25, "input_len": 100, "output_len": 20}
//     optionally with "prompt": [token ids] (then input_len may be left out).
//
// Everything is drawn from one seeded generator (std::mt19937_64 with our own
// distribution code, so a seed gives the same trace on every standard library).
// Lengths and prompts do not depend on the rate: the trace of a sweep point at rate λ
// is the rate-1 trace with its arrival times divided by λ, so the points of a sweep
// differ only in load. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace orca::bench {

struct TraceRequest {
  double arrival_s = 0;  // offset from the start of the run (ignored in closed loop)
  int32_t input_len = 0;
  int32_t output_len = 0;
  std::vector<int32_t> prompt;  // input_len token ids
};

struct TraceOptions {
  int64_t num_requests = 100;
  // Poisson arrival rate in requests/s; <= 0 or infinity sends everything at t = 0.
  double rate = 1.0;
  // Shape of the gamma-distributed gaps between arrivals (> 0); 1 is Poisson. Lengths
  // and prompts do not depend on it.
  double burstiness = 1.0;
  // Input and output lengths, uniform over the closed ranges (min == max: fixed).
  int32_t input_min = 32, input_max = 512;
  int32_t output_min = 1, output_max = 128;
  // Prompt token ids are drawn uniformly from [token_id_min, token_id_max]; choose a
  // range inside the served model's vocabulary.
  int32_t token_id_min = 1, token_id_max = 500;
  uint64_t seed = 1;
};

// Returns the paper's trace (or, with min == max, a fixed-length one) for `options`.
// Fails with InvalidArgument on empty or inverted ranges or a burstiness <= 0.
absl::StatusOr<std::vector<TraceRequest>> GenerateTrace(const TraceOptions& options);

// Returns `trace` with every prompt redrawn, lengths kept, from a stream keyed by
// `options.seed` and `salt`; salt 0 draws the prompts GenerateTrace drew. Sweep points
// use their index as salt, so a server's prefix cache cannot carry over between them.
std::vector<TraceRequest> RedrawPrompts(std::vector<TraceRequest> trace,
                                        const TraceOptions& options, uint64_t salt);

// Returns `trace` with every arrival time multiplied by `factor` (> 0).
std::vector<TraceRequest> ScaleArrivals(std::vector<TraceRequest> trace, double factor);

// Returns the mean arrival rate of `trace` (requests / last arrival), or 0.
double MeanRate(const std::vector<TraceRequest>& trace);

// Parses a JSONL trace (see above); prompts missing from the file are drawn from
// `options` (token range and seed). `source` names the input in errors, which give the
// line number. Arrival times must be non-decreasing and lengths positive.
absl::StatusOr<std::vector<TraceRequest>> ParseJsonlTrace(const std::string& text,
                                                          const std::string& source,
                                                          const TraceOptions& options);
// Reads and parses the JSONL trace file `path`.
absl::StatusOr<std::vector<TraceRequest>> LoadJsonlTrace(const std::string& path,
                                                         const TraceOptions& options);

// Serialises `trace` as JSONL (with prompts when `with_prompts`).
std::string TraceToJsonl(const std::vector<TraceRequest>& trace, bool with_prompts);

}  // namespace orca::bench
