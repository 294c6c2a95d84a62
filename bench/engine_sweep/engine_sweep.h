// `orca bench engine`: the ORCA paper's engine microbenchmark (section 6.1). For each
// batch size B, a batch of B identical requests (input_len prompt tokens, output_len
// greedy output tokens) runs to completion on the selective-batching ModelRunner
// directly (no scheduler, no server): one prefill iteration for the whole batch, then
// output_len - 1 decode iterations. It reports the time to completion, the prefill
// time and the decode iteration time, next to this machine's roofline:
//
//   sgemm_gflops   OpenBLAS sgemm rate (1024^3 and 2048^3, the better);
//   bf16_gemm_gflops  for bfloat16 weights: oneDNN's bfloat16 GEMM rate (bfloat16
//                  operands, float32 sums; 1024^3 and 2048^3, the better), where the
//                  build has oneDNN and the CPU multiplies bfloat16 pairs; the GEMMs'
//                  FLOPs count at the faster of it and sgemm (Roofline::GemmGflops);
//   read_gbs       streaming read bandwidth over max(256 MiB, 4 x the last-level
//                  cache) on the benchmark's threads (every core by default), with the
//                  widest loads the CPU runs, the fastest pass (read_probe.h);
//   read_gbs_one_core  the same on one thread: what one core's outstanding misses
//                  fetch (a 2-vCPU Xeon: 10.5 GB/s of 21-29), so what a kernel running
//                  on fewer cores than the machine has, or a core busy multiplying, can
//                  read (docs/benchmarks.md section 21); not part of the floors;
//   floors         a decode iteration must at least stream the GEMM weights once and
//                  read the batch's KV history in the cache's dtype (bytes / read_gbs),
//                  and do 2 * GEMM params * B FLOPs at the GEMMs' rate and attention's
//                  at sgemm's; roof_fraction = max(floors) / measured (the classic
//                  roofline: reads and arithmetic overlapping perfectly);
//   sequential     the GEMMs at max(their weights' bytes, their FLOPs) plus attention
//                  at max(its KV bytes, its FLOPs): each kernel at its own roof, one
//                  after the other as a layer's dependencies run them (what a machine
//                  that cannot overlap them, as two cores without SMT, can reach);
//                  sequential_roof_fraction = sequential / measured.
//
// Each point also splits the decode iteration by backend operation (`decode_op_ms`:
// linear, attention, norm, ... per iteration, and the unattributed rest), timed around
// the CPU backend's calls (op_timing_backend.h), and the prefill the same way
// (`prefill_op_ms`).
//
// The result is one JSON document (schema orca.bench.engine/v1) with the model, the
// options, the machine's roofline and one point per batch size. Not thread-safe; it
// uses every core it is given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/common/dtype.h"
#include "engine/config/engine_config.h"

namespace orca::bench {

inline constexpr char kEngineSchema[] = "orca.bench.engine/v1";

struct EngineSweepOptions {
  std::string model_dir;
  std::vector<int32_t> batch_sizes = {1, 2, 4, 8, 16, 32};
  int32_t input_len = 32;
  int32_t output_len = 32;
  int32_t threads = 0;                 // CPU backend threads; 0 = all cores
  int32_t repeats = 1;                 // runs per batch size; the fastest is reported
  double roofline_s = 1.0;             // time spent on each roofline measurement
  DType kv_cache_dtype = DType::kF16;  // the CPU's default (ResolveKvCacheDType)
  WeightDType weight_dtype = WeightDType::kAuto;
};

struct Roofline {
  double sgemm_gflops = 0;
  double read_gbs = 0;
  double read_gbs_one_core = 0;
  size_t llc_bytes = 0;         // the last-level cache; 0 = unknown
  size_t read_probe_bytes = 0;  // the read probe's buffer
  double bf16_gemm_gflops = 0;  // 0 = not measured (see above)

  // The rate the GEMMs of a model can reach: sgemm's, and for bfloat16 weights the
  // faster of it and the bfloat16 products'.
  double GemmGflops(bool bf16_weights) const {
    return bf16_weights && bf16_gemm_gflops > sgemm_gflops ? bf16_gemm_gflops : sgemm_gflops;
  }
};

// Measures this machine's sgemm rate and read bandwidth (and, with `bf16`, its bfloat16
// GEMM rate), spending about `seconds` on each, with `threads` threads for the bfloat16
// GEMM and the reads (0: every core; sgemm runs on the threads OpenBLAS was given), and
// the read bandwidth of one core.
Roofline MeasureRoofline(double seconds, bool bf16 = false, int threads = 0);

// Per-token work of a decode step of `config`-shaped model (see the floors above).
struct DecodeWork {
  double gemm_params = 0;         // parameters the GEMMs read (not the embedding table)
  double head_params = 0;         // of which the LM head's (hidden x vocab)
  double kv_bytes_per_token = 0;  // K and V bytes of one cached token, all layers
  double attn_flops_per_ctx = 0;  // attention FLOPs per (query token x cached token)
  bool bf16_weights = false;      // the GEMMs' weights are bfloat16 (Roofline::GemmGflops)
};

// The floors of one decode iteration, in ms.
struct DecodeFloors {
  double bandwidth_ms = 0;
  double flops_ms = 0;
  double sequential_ms = 0;  // max(GEMMs' floors) + max(attention's floors)
  double roof_ms() const { return bandwidth_ms > flops_ms ? bandwidth_ms : flops_ms; }
};
// Returns the floors of a decode iteration of `batch` sequences with `context` cached
// tokens each, for weights of `bytes_per_param`.
DecodeFloors DecodeFloorsMs(const DecodeWork& work, double bytes_per_param, int32_t batch,
                            double context, const Roofline& roof);

// The floors of the prefill of `batch` prompts of `input_len` tokens, in ms: every
// prompt token through the layers' GEMMs and causal attention (input_len / 2 cached
// tokens on average), but only each sequence's last token through the LM head (the
// rows that sample), the weights read once.
DecodeFloors PrefillFloorsMs(const DecodeWork& work, double bytes_per_param, int32_t batch,
                             int32_t input_len, const Roofline& roof);

// Runs the sweep. `progress` (may be empty) receives one line per finished batch size.
// Fails when the model cannot be loaded, the lengths exceed its context or an
// iteration fails.
absl::StatusOr<nlohmann::json> RunEngineSweep(
    const EngineSweepOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace orca::bench
