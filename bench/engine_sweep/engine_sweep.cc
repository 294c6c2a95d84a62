#include "bench/engine_sweep/engine_sweep.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench/engine_sweep/gemm_rate.h"
#include "bench/engine_sweep/op_timing_backend.h"
#include "bench/engine_sweep/read_probe.h"
#include "engine/backend/backend.h"
#include "engine/backend/cpu/openblas_core.h"
#include "engine/backend/cpu/packed_gemm_bf16.h"
#include "engine/backend/cpu/simd.h"
#include "engine/common/status_macros.h"
#include "engine/kv/kv_block_pool.h"
#include "engine/model/model_config.h"
#include "engine/runner/model_runner.h"

namespace orca::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

DecodeWork WorkOf(const ModelConfig& c, DType kv_dtype, DType weight_dtype) {
  const double h = c.hidden_size, v = c.vocab_size, i = c.intermediate_size;
  const double q = double(c.num_heads) * c.head_dim, kv = double(c.num_kv_heads) * c.head_dim;
  double per_layer = c.family == ModelFamily::kGpt2 ? h * 3 * h + h * h + 2 * h * i
                                                    : h * (q + 2 * kv) + q * h + 3 * h * i;
  DecodeWork w;
  w.head_params = v * h;
  w.gemm_params = c.num_layers * per_layer + w.head_params;
  w.kv_bytes_per_token = c.num_layers * 2.0 * kv * static_cast<double>(DTypeSize(kv_dtype));
  w.attn_flops_per_ctx = c.num_layers * 4.0 * q;
  w.bf16_weights = weight_dtype == DType::kBF16;
  return w;
}

// Returns the CPU time (user + system) this process has used, in seconds.
double ProcessCpuSeconds() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct BatchRun {
  double cpu_s = 0;  // CPU time used, all threads
  double prefill_s = 0;
  std::vector<double> decode_s;
  OpTimingBackend::Totals prefill_ops;  // the prefill iteration's backend operations
  OpTimingBackend::Totals decode_ops;   // the decode iterations' backend operations
  double total_s() const {
    return prefill_s + std::accumulate(decode_s.begin(), decode_s.end(), 0.0);
  }
};

// `ops`: the backend the runner uses (reset here), whose totals become the run's
// prefill_ops and decode_ops.
absl::StatusOr<BatchRun> RunBatch(ModelRunner& runner, OpTimingBackend& ops, KvBlockPool& pool,
                                  int32_t batch, int32_t input_len, int32_t output_len) {
  const int32_t vocab = runner.config().vocab_size;
  std::vector<BlockTable> tables(batch);
  auto release = [&] {
    for (auto& t : tables) t.Release(pool);
  };
  std::vector<int32_t> prompt(input_len);
  for (int32_t i = 0; i < input_len; ++i) prompt[i] = (i * 7919 + 13) % vocab;
  IterationPlan plan;
  for (int32_t s = 0; s < batch; ++s) {
    if (auto st = tables[s].EnsureCapacity(pool, input_len + output_len); !st.ok()) {
      release();
      return st;
    }
    ScheduledSequence seq;
    seq.seq_id = static_cast<uint64_t>(s);
    seq.token_ids = prompt;
    seq.block_table = tables[s].blocks();
    seq.sample = true;
    seq.sampling.temperature = 0;
    plan.seqs.push_back(std::move(seq));
  }
  BatchRun run;
  const double cpu0 = ProcessCpuSeconds();
  ops.Reset();
  auto t0 = Clock::now();
  auto result = runner.Execute(plan);
  run.prefill_s = Since(t0);
  run.prefill_ops = ops.totals();
  ops.Reset();
  for (int32_t step = 1; step < output_len && result.ok(); ++step) {
    for (int32_t s = 0; s < batch; ++s) {
      plan.seqs[s].start_pos = input_len + step - 1;
      plan.seqs[s].token_ids = {result->tokens[s].token_id};
      plan.seqs[s].output_index = step;
    }
    t0 = Clock::now();
    result = runner.Execute(plan);
    run.decode_s.push_back(Since(t0));
  }
  run.cpu_s = ProcessCpuSeconds() - cpu0;
  run.decode_ops = ops.totals();
  release();
  if (!result.ok()) return result.status();
  return run;
}

// The iterations' time per iteration by backend operation (ms; the operations that
// ran), and "unattributed": the iteration's time outside them (the runner's own work:
// batch layout, host sampling).
json OpMsPerIteration(const OpTimingBackend::Totals& ops, const std::vector<double>& iteration_ms) {
  json out = json::object();
  if (iteration_ms.empty()) return out;
  const double n = static_cast<double>(iteration_ms.size());
  double attributed = 0;
  for (int op = 0; op < OpTimingBackend::kNumOps; ++op) {
    if (ops.calls[op] == 0) continue;
    const double ms = ops.seconds[op] * 1e3 / n;
    out[OpTimingBackend::OpName(static_cast<OpTimingBackend::Op>(op))] = ms;
    attributed += ms;
  }
  out["unattributed"] =
      std::accumulate(iteration_ms.begin(), iteration_ms.end(), 0.0) / n - attributed;
  return out;
}

// The floors of an iteration that reads `weight_bytes` and `kv_bytes` and computes
// `gemm_flops` in the GEMMs and `attn_flops` in attention.
DecodeFloors FloorsOf(double weight_bytes, double kv_bytes, double gemm_flops, double attn_flops,
                      bool bf16_weights, const Roofline& roof) {
  auto ms = [](double work, double rate_per_s) {
    return rate_per_s > 0 ? work / rate_per_s * 1e3 : 0;
  };
  const double bw = roof.read_gbs * 1e9, gemm_rate = roof.GemmGflops(bf16_weights) * 1e9,
               attn_rate = roof.sgemm_gflops * 1e9;
  DecodeFloors f;
  f.bandwidth_ms = ms(weight_bytes + kv_bytes, bw);
  f.flops_ms = ms(gemm_flops, gemm_rate) + ms(attn_flops, attn_rate);
  f.sequential_ms = std::max(ms(weight_bytes, bw), ms(gemm_flops, gemm_rate)) +
                    std::max(ms(kv_bytes, bw), ms(attn_flops, attn_rate));
  return f;
}

}  // namespace

Roofline MeasureRoofline(double seconds, bool bf16, int threads) {
  Roofline r;
  r.sgemm_gflops = std::max(SgemmGflops(1024, seconds / 2), SgemmGflops(2048, seconds / 2));
  if (bf16) {
    r.bf16_gemm_gflops = std::max(Bf16GemmGflops(1024, seconds / 2, threads),
                                  Bf16GemmGflops(2048, seconds / 2, threads));
  }
  r.llc_bytes = LastLevelCacheBytes();
  r.read_probe_bytes = ReadProbeBytes(r.llc_bytes);
  const std::vector<uint64_t> probe(r.read_probe_bytes / sizeof(uint64_t), 1);
  r.read_gbs = ReadBandwidthGbs(seconds, probe, threads);
  r.read_gbs_one_core = ReadBandwidthGbs(seconds / 2, probe, 1);
  return r;
}

DecodeFloors DecodeFloorsMs(const DecodeWork& w, double bytes_per_param, int32_t batch,
                            double context, const Roofline& roof) {
  return FloorsOf(w.gemm_params * bytes_per_param, batch * context * w.kv_bytes_per_token,
                  2.0 * w.gemm_params * batch, batch * context * w.attn_flops_per_ctx,
                  w.bf16_weights, roof);
}

DecodeFloors PrefillFloorsMs(const DecodeWork& w, double bytes_per_param, int32_t batch,
                             int32_t input_len, const Roofline& roof) {
  const double tokens = double(batch) * input_len;
  const double body = w.gemm_params - w.head_params;
  return FloorsOf(w.gemm_params * bytes_per_param, tokens * w.kv_bytes_per_token,
                  2.0 * body * tokens + 2.0 * w.head_params * batch,
                  tokens * (input_len / 2.0) * w.attn_flops_per_ctx, w.bf16_weights, roof);
}

absl::StatusOr<json> RunEngineSweep(const EngineSweepOptions& o,
                                    const std::function<void(const std::string&)>& progress) {
  if (o.batch_sizes.empty()) return absl::InvalidArgumentError("no batch sizes given");
  if (o.input_len < 1 || o.output_len < 1 || o.repeats < 1) {
    return absl::InvalidArgumentError("input and output lengths and repeats must be >= 1");
  }
  const int32_t max_batch = *std::max_element(o.batch_sizes.begin(), o.batch_sizes.end());
  auto cpu = CreateCpuBackend(o.threads);
  OpTimingBackend backend(cpu.get());
  ModelRunnerOptions ro;
  ro.kv_cache_dtype = o.kv_cache_dtype;
  ro.dtype = o.weight_dtype;
  ro.num_kv_blocks = max_batch * ((o.input_len + o.output_len + 15) / 16) + 8;
  ORCA_ASSIGN_OR_RETURN(auto runner, ModelRunner::Create(o.model_dir, &backend, ro));
  const ModelConfig& cfg = runner->config();
  if (o.input_len + o.output_len > cfg.max_position_embeddings) {
    return absl::InvalidArgumentError(
        absl::StrFormat("input_len + output_len = %d exceeds the model's context of %d",
                        o.input_len + o.output_len, cfg.max_position_embeddings));
  }
  KvBlockPool pool(runner->num_kv_blocks(), runner->block_size());
  const double params = static_cast<double>(CountParameters(cfg));
  const double bytes_per_param = static_cast<double>(runner->weight_bytes()) / params;
  const DecodeWork work = WorkOf(cfg, o.kv_cache_dtype, runner->linear_weight_dtype());

  if (progress) {
    progress(work.bf16_weights ? "measuring the roofline (sgemm, bfloat16 GEMM, read bandwidth)"
                               : "measuring the roofline (sgemm, read bandwidth)");
  }
  const Roofline roof = MeasureRoofline(o.roofline_s, work.bf16_weights, o.threads);
  if (progress) {
    progress(absl::StrFormat(
        "roofline: sgemm %.0f GFLOP/s%s; reads %.1f GB/s (one core alone: %.1f GB/s)",
        roof.sgemm_gflops,
        roof.bf16_gemm_gflops > 0
            ? absl::StrFormat(", bfloat16 GEMM %.0f GFLOP/s", roof.bf16_gemm_gflops)
            : std::string(),
        roof.read_gbs, roof.read_gbs_one_core));
  }
  // Warm-up at the largest batch: the first run of a size touches its workspace and KV
  // blocks for the first time, and the kernel's zeroing of those pages would count as
  // prefill (in a VM whose host backs the memory lazily, up to a few seconds a GiB on
  // huge pages). Later runs reuse them (the pool hands out the blocks freed last).
  if (progress) progress("warming up (batch " + std::to_string(max_batch) + ")");
  ORCA_RETURN_IF_ERROR(RunBatch(*runner, backend, pool, max_batch, o.input_len, 2).status());

  const double cores =
      o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  json points = json::array();
  for (int32_t b : o.batch_sizes) {
    if (b < 1) return absl::InvalidArgumentError("batch sizes must be >= 1");
    BatchRun best;
    for (int32_t r = 0; r < o.repeats; ++r) {
      ORCA_ASSIGN_OR_RETURN(BatchRun run,
                            RunBatch(*runner, backend, pool, b, o.input_len, o.output_len));
      if (r == 0 || run.total_s() < best.total_s()) best = run;
    }
    std::vector<double> ms;
    for (double s : best.decode_s) ms.push_back(s * 1e3);
    std::sort(ms.begin(), ms.end());
    const double mean_ms = ms.empty() ? 0 : std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
    const double median_ms = ms.empty() ? 0 : ms[ms.size() / 2];
    const double mean_ctx = o.input_len + o.output_len / 2.0;
    const DecodeFloors f = DecodeFloorsMs(work, bytes_per_param, b, mean_ctx, roof);
    const DecodeFloors pf = PrefillFloorsMs(work, bytes_per_param, b, o.input_len, roof);
    const double floor_prefill_s = pf.roof_ms() / 1e3;
    const double floor_total_s = floor_prefill_s + (o.output_len - 1) * f.roof_ms() / 1e3;
    json p = {{"batch", b},
              {"total_s", best.total_s()},
              {"prefill_s", best.prefill_s},
              {"decode_iterations", static_cast<int64_t>(ms.size())},
              {"decode_iter_ms",
               {{"mean", mean_ms},
                {"p50", median_ms},
                {"min", ms.empty() ? 0 : ms.front()},
                {"max", ms.empty() ? 0 : ms.back()}}},
              {"floor_decode_bandwidth_ms", f.bandwidth_ms},
              {"floor_decode_flops_ms", f.flops_ms},
              {"decode_roof_fraction", mean_ms > 0 ? f.roof_ms() / mean_ms : 0},
              {"floor_decode_sequential_ms", f.sequential_ms},
              {"decode_sequential_roof_fraction", mean_ms > 0 ? f.sequential_ms / mean_ms : 0},
              {"floor_prefill_s", floor_prefill_s},
              {"prefill_roof_fraction", best.prefill_s > 0 ? floor_prefill_s / best.prefill_s : 0},
              {"floor_total_s", floor_total_s},
              {"total_roof_fraction", floor_total_s / best.total_s()},
              {"output_tokens_per_s", b * o.output_len / best.total_s()},
              {"decode_op_ms", OpMsPerIteration(best.decode_ops, ms)},
              {"prefill_op_ms", OpMsPerIteration(best.prefill_ops, {best.prefill_s * 1e3})},
              // Below 1 when other processes took cores from the benchmark.
              {"cpu_utilization", best.cpu_s / best.total_s() / cores}};
    if (progress) {
      progress(absl::StrFormat(
          "batch %3d: %.3f s to completion (prefill %.3f s, %.0f%% of its roof; decode %.2f "
          "ms/iter, of which GEMMs %.2f ms, attention %.2f ms; floors: bandwidth %.2f ms, "
          "FLOPs %.2f ms, sequential %.2f ms; %.0f%% of the roof, %.0f%% of the sequential "
          "one; CPU share %.0f%%)",
          b, best.total_s(), best.prefill_s, 100.0 * p["prefill_roof_fraction"].get<double>(),
          mean_ms, p["decode_op_ms"].value("linear", 0.0),
          p["decode_op_ms"].value("attention", 0.0), f.bandwidth_ms, f.flops_ms, f.sequential_ms,
          100.0 * p["decode_roof_fraction"].get<double>(),
          100.0 * p["decode_sequential_roof_fraction"].get<double>(),
          100.0 * p["cpu_utilization"].get<double>()));
    }
    points.push_back(std::move(p));
  }
  return json{{"schema", kEngineSchema},
              {"model",
               {{"dir", o.model_dir},
                {"architecture", cfg.architecture},
                {"parameters", params},
                {"gemm_parameters", work.gemm_params},
                {"weight_bytes", runner->weight_bytes()},
                {"hidden_size", cfg.hidden_size},
                {"num_layers", cfg.num_layers},
                {"vocab_size", cfg.vocab_size}}},
              {"options",
               {{"batch_sizes", o.batch_sizes},
                {"input_len", o.input_len},
                {"output_len", o.output_len},
                {"threads", o.threads},
                {"repeats", o.repeats},
                {"kv_cache_dtype", std::string(DTypeName(o.kv_cache_dtype))},
                {"dtype", std::string(WeightDTypeName(o.weight_dtype))},
                {"simd", SimdLevelName(CpuSimdLevel())},
                {"bf16_products", CpuBf16DotsEnabled()},
                {"bf16_products_by", Bf16ProductsName(CpuBf16Products())}}},
              {"roofline",
               {{"sgemm_gflops", roof.sgemm_gflops},
                {"bf16_gemm_gflops", roof.bf16_gemm_gflops},
                {"gemm_gflops", roof.GemmGflops(work.bf16_weights)},
                {"read_gbs", roof.read_gbs},
                {"read_gbs_one_core", roof.read_gbs_one_core},
                {"openblas_core", OpenBlasCoreName()},
                {"read_probe_simd", SimdLevelName(CpuSimdLevel())},
                {"read_probe_mib", roof.read_probe_bytes >> 20},
                {"llc_mib", roof.llc_bytes >> 20},
                {"method",
                 "OpenBLAS sgemm 1024^3/2048^3 (best); for bfloat16 weights oneDNN's bfloat16 "
                 "matmul 1024^3/2048^3 (best; the GEMMs' FLOPs count at gemm_gflops, the faster "
                 "of the two); a sum over max(256 MiB, 4 x LLC) on the benchmark's threads (and on "
                 "one: read_gbs_one_core) with the widest loads the CPU runs (read_probe_simd), "
                 "the fastest pass"}}},
              {"points", points}};
}

}  // namespace orca::bench
