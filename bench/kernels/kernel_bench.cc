// orca-bench-kernels: GPU benchmark of the CUDA backend. Prints one JSON document:
//   - "peak": the device's measured peak memory bandwidth (a large device-to-device
//     copy) and GEMM throughput (large cuBLAS GEMMs, BF16 and F32);
//   - "kernels": each backend operation on llama-1B shapes at several token counts:
//     time, achieved bandwidth and FLOP/s, and the fraction of the measured peak that
//     bounds it;
//   - "iterations": whole ModelRunner iterations (decode at several batch sizes,
//     prefill at several lengths) on a random llama-1B-shaped BF16 checkpoint;
//   - "sampling": Backend::SampleRows on random logits (rows x vocabulary) for each kind
//     of request the device sampler takes (greedy, the whole vocabulary, top-k by
//     selection, top-p / min-p / large top-k by radix selection, logprobs, penalties), against
//     copying the rows to the host and drawing them there on every core, as the runner
//     did before.
// Usage: orca-bench-kernels [--device 0] [--model-dir DIR] [--reps 20]
//                           [--decode-batches 1,8,32,64,128,256] [--context 512]
//                           [--prefill-lens 128,512,2048] [--tokens 1,16,128,1024]
//                           [--kv-cache-dtypes float32,float16,bfloat16]
//                           [--sampling device,host] [--graphs on,off]
//                           [--activations 16,32]
//                           [--sampling-rows 1,64,256] [--sampling-vocab 128256]
//                           [--skip-iterations] [--skip-sampling]
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_status.h"
#include "engine/common/status_macros.h"
#include "engine/common/thread_pool.h"
#include "engine/config/engine_config.h"
#include "engine/model/random_checkpoint.h"
#include "engine/runner/model_runner.h"
#include "engine/runner/sampler.h"
#include "nlohmann/json.hpp"

namespace orca {
namespace {

using json = nlohmann::json;

struct Peak {
  double bytes_per_s = 0;      // device memory, read + write
  double bf16_flop_per_s = 0;  // cuBLAS BF16 GEMM, F32 accumulation
  double f32_flop_per_s = 0;   // cuBLAS F32 GEMM (no TF32)
};

// Times `fn` (which issues work on `stream`) over `reps` runs after one warm-up;
// returns seconds per run.
absl::StatusOr<double> TimeOnStream(cudaStream_t stream, int reps,
                                    const std::function<absl::Status()>& fn) {
  ORCA_RETURN_IF_ERROR(fn());
  cudaEvent_t start, stop;
  ORCA_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  ORCA_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  ORCA_CUDA_RETURN_IF_ERROR(cudaEventRecord(start, stream));
  absl::Status s;
  for (int i = 0; i < reps && s.ok(); ++i) s = fn();
  ORCA_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop, stream));
  ORCA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
  float ms = 0;
  ORCA_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start, stop));
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  ORCA_RETURN_IF_ERROR(s);
  return ms * 1e-3 / reps;
}

absl::StatusOr<Peak> MeasurePeak(CudaBackend& b) {
  Peak peak;
  cudaStream_t st = b.stream();
  const size_t copy_bytes = size_t{1} << 30;
  ORCA_ASSIGN_OR_RETURN(auto src, b.Allocate(copy_bytes));
  ORCA_ASSIGN_OR_RETURN(auto dst, b.Allocate(copy_bytes));
  ORCA_ASSIGN_OR_RETURN(double copy_s, TimeOnStream(st, 10, [&] {
                          return ORCA_CUDA_STATUS(cudaMemcpyAsync(
                              dst->data(), src->data(), copy_bytes, cudaMemcpyDeviceToDevice, st));
                        }));
  peak.bytes_per_s = 2.0 * copy_bytes / copy_s;
  src.reset();
  dst.reset();

  cublasHandle_t h;
  ORCA_CUDA_RETURN_IF_ERROR(cublasCreate(&h));
  ORCA_CUDA_RETURN_IF_ERROR(cublasSetStream(h, st));
  for (bool bf16 : {true, false}) {
    const int n = bf16 ? 8192 : 4096;
    const size_t es = bf16 ? 2 : 4;
    ORCA_ASSIGN_OR_RETURN(auto a, b.Allocate(es * n * n));
    ORCA_ASSIGN_OR_RETURN(auto bb, b.Allocate(es * n * n));
    ORCA_ASSIGN_OR_RETURN(auto c, b.Allocate(4 * size_t{1} * n * n));
    ORCA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(a->data(), 0, es * n * n, st));
    ORCA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bb->data(), 0, es * n * n, st));
    const float alpha = 1, beta = 0;
    const cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    ORCA_ASSIGN_OR_RETURN(
        double s, TimeOnStream(st, 5, [&] {
          return ORCA_CUDA_STATUS(cublasGemmEx(
              h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a->data(), t, n, bb->data(), t, n,
              &beta, c->data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }));
    (bf16 ? peak.bf16_flop_per_s : peak.f32_flop_per_s) = 2.0 * n * n * double(n) / s;
  }
  (void)cublasDestroy(h);
  return peak;
}

// Model shape the per-kernel figures use (TinyLlama-1.1B).
struct Shape {
  int64_t hidden = 2048, inter = 5632, heads = 32, kv_heads = 4, head_dim = 64, vocab = 32000;
  int32_t block_size = 16;
};

class KernelBench {
 public:
  KernelBench(CudaBackend& b, const Peak& peak, int reps) : b_(b), peak_(peak), reps_(reps) {}

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Filled(size_t bytes) {
    ORCA_ASSIGN_OR_RETURN(auto buf, b_.Allocate(bytes));
    // Small finite values (0x3c003c00: 1.0 in F16, ~0.0078 in F32 and BF16 halves).
    ORCA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(buf->data(), 0x3c, bytes, b_.stream()));
    return buf;
  }

  // Records one row of "kernels".
  absl::Status Run(const std::string& name, json shape, double bytes, double flops, bool gemm,
                   const std::function<void()>& op) {
    ORCA_ASSIGN_OR_RETURN(double s, TimeOnStream(b_.stream(), reps_, [&] {
                            op();
                            return absl::OkStatus();
                          }));
    ORCA_RETURN_IF_ERROR(b_.Synchronize());
    json row = {{"kernel", name},
                {"shape", std::move(shape)},
                {"time_us", s * 1e6},
                {"bandwidth_gb_s", bytes / s / 1e9},
                {"tflop_s", flops / s / 1e12},
                {"fraction_of_peak_bandwidth", bytes / s / peak_.bytes_per_s}};
    if (gemm) row["fraction_of_peak_bf16_gemm"] = flops / s / peak_.bf16_flop_per_s;
    rows_.push_back(std::move(row));
    return absl::OkStatus();
  }

  absl::Status RunAll(const std::vector<int64_t>& token_counts) {
    const Shape m;
    const int64_t q_w = m.heads * m.head_dim, kv_w = m.kv_heads * m.head_dim,
                  qkv_w = q_w + 2 * kv_w;
    const int64_t max_t = token_counts.back();
    ORCA_ASSIGN_OR_RETURN(auto x, Filled(4 * max_t * m.inter * 2));
    ORCA_ASSIGN_OR_RETURN(auto y, Filled(4 * max_t * m.inter * 2));
    ORCA_ASSIGN_OR_RETURN(auto w, Filled(2 * m.inter * 2 * m.hidden));  // gate|up BF16
    ORCA_ASSIGN_OR_RETURN(auto table, Filled(2 * m.vocab * m.hidden));
    ORCA_ASSIGN_OR_RETURN(auto norm_w, Filled(4 * m.hidden));
    // Token ids (also used as positions), then row indices 0..max_t-1.
    std::vector<int32_t> host_ids(static_cast<size_t>(2 * max_t));
    for (int64_t i = 0; i < max_t; ++i) {
      host_ids[i] = static_cast<int32_t>((i * 7919) % m.vocab);
      host_ids[max_t + i] = static_cast<int32_t>(i);
    }
    ORCA_ASSIGN_OR_RETURN(auto ids, b_.Allocate(4 * host_ids.size()));
    ORCA_RETURN_IF_ERROR(b_.CopyToDevice(ids->data(), host_ids.data(), 4 * host_ids.size()));
    const int32_t* id_ptr = static_cast<const int32_t*>(ids->data());
    const int32_t* row_ptr = id_ptr + max_t;
    auto f32 = [](DeviceBuffer& buf, int64_t rows, int64_t cols) {
      return Tensor{buf.data(), DType::kF32, rows, cols, 0};
    };
    // The same buffers as 16-bit activations (ModelRunnerOptions::sixteen_bit_activations).
    auto bf16 = [](DeviceBuffer& buf, int64_t rows, int64_t cols) {
      return Tensor{buf.data(), DType::kBF16, rows, cols, 0};
    };
    const Tensor wt{table->data(), DType::kBF16, m.vocab, m.hidden, 0};
    const Tensor nw = f32(*norm_w, 1, m.hidden);
    for (int64_t t : token_counts) {
      const json tj = {{"tokens", t}};
      const double th = double(t) * m.hidden;
      ORCA_RETURN_IF_ERROR(Run("embedding_bf16", tj, th * 2 + th * 4, 0, false,
                               [&] { b_.Embedding(id_ptr, t, wt, f32(*x, t, m.hidden), false); }));
      ORCA_RETURN_IF_ERROR(Run("rms_norm", tj, th * 8 + m.hidden * 4, 0, false, [&] {
        b_.RmsNorm(f32(*x, t, m.hidden), nw, 1e-5f, f32(*y, t, m.hidden));
      }));
      ORCA_RETURN_IF_ERROR(Run("rms_norm_to_bf16", tj, th * 6 + m.hidden * 4, 0, false, [&] {
        b_.RmsNorm(f32(*x, t, m.hidden), nw, 1e-5f, bf16(*y, t, m.hidden));
      }));
      ORCA_RETURN_IF_ERROR(Run("add", tj, th * 12, 0, false,
                               [&] { b_.Add(f32(*x, t, m.hidden), f32(*y, t, m.hidden)); }));
      ORCA_RETURN_IF_ERROR(Run("rope_q_k", tj, double(t) * (q_w + kv_w) * 8, 0, false, [&] {
        Tensor qkv = f32(*x, t, qkv_w);
        b_.Rope(qkv.Cols(0, q_w), id_ptr, static_cast<int32_t>(m.heads),
                static_cast<int32_t>(m.head_dim), 10000.0);
        b_.Rope(qkv.Cols(q_w, kv_w), id_ptr, static_cast<int32_t>(m.kv_heads),
                static_cast<int32_t>(m.head_dim), 10000.0);
      }));
      ORCA_RETURN_IF_ERROR(Run("gated_silu", tj, double(t) * m.inter * 12, 0, false, [&] {
        b_.GatedActivation(f32(*x, t, 2 * m.inter), Activation::kSilu, f32(*y, t, m.inter));
      }));
      ORCA_RETURN_IF_ERROR(Run("gated_silu_bf16", tj, double(t) * m.inter * 6, 0, false, [&] {
        b_.GatedActivation(bf16(*x, t, 2 * m.inter), Activation::kSilu, bf16(*y, t, m.inter));
      }));
      ORCA_RETURN_IF_ERROR(Run("gather_rows", tj, th * 8, 0, false, [&] {
        b_.GatherRows(f32(*x, t, m.hidden), row_ptr, t, f32(*y, t, m.hidden));
      }));
      // The MLP gate|up projection, the largest GEMM of a layer: BF16 weights.
      const double n = 2.0 * m.inter, k = double(m.hidden);
      const Tensor wg{w->data(), DType::kBF16, 2 * m.inter, m.hidden, 0};
      ORCA_RETURN_IF_ERROR(
          Run("linear_bf16_gate_up", {{"tokens", t}, {"n", n}, {"k", k}},
              n * k * 2 + double(t) * (k + n) * 4, 2 * double(t) * n * k, true,
              [&] { b_.Linear(f32(*x, t, m.hidden), wg, nullptr, f32(*y, t, 2 * m.inter)); }));
      // The same with 16-bit activations in and out: no conversion kernel, half the bytes.
      ORCA_RETURN_IF_ERROR(
          Run("linear_bf16_gate_up_bf16_io", {{"tokens", t}, {"n", n}, {"k", k}},
              n * k * 2 + double(t) * (k + n) * 2, 2 * double(t) * n * k, true,
              [&] { b_.Linear(bf16(*x, t, m.hidden), wg, nullptr, bf16(*y, t, 2 * m.inter)); }));
    }
    return absl::OkStatus();
  }

  // Attention alone: `seqs` sequences of `q_len` new tokens over `kv_len` cached ones.
  absl::Status RunAttention(const std::string& name, int32_t seqs, int32_t q_len, int32_t kv_len) {
    const Shape m;
    const int32_t blocks_per_seq = (kv_len + m.block_size - 1) / m.block_size;
    const int32_t num_blocks = seqs * blocks_per_seq;
    const int64_t kv_w = m.kv_heads * m.head_dim, q_w = m.heads * m.head_dim,
                  t = int64_t{seqs} * q_len;
    ORCA_ASSIGN_OR_RETURN(auto kc, Filled(4 * int64_t{num_blocks} * m.block_size * kv_w));
    ORCA_ASSIGN_OR_RETURN(auto vc, Filled(4 * int64_t{num_blocks} * m.block_size * kv_w));
    ORCA_ASSIGN_OR_RETURN(auto q, Filled(4 * t * q_w));
    ORCA_ASSIGN_OR_RETURN(auto out, Filled(4 * t * q_w));
    std::vector<int32_t> idx;
    for (int32_t s = 0; s <= seqs; ++s) idx.push_back(s * q_len);
    for (int32_t s = 0; s < seqs; ++s) idx.push_back(kv_len);
    for (int32_t i = 0; i < num_blocks; ++i) idx.push_back(i);
    ORCA_ASSIGN_OR_RETURN(auto dev, b_.Allocate(4 * idx.size()));
    ORCA_RETURN_IF_ERROR(b_.CopyToDevice(dev->data(), idx.data(), 4 * idx.size()));
    const int32_t* d = static_cast<const int32_t*>(dev->data());
    AttentionBatch batch{seqs, d, d + seqs + 1, d + 2 * seqs + 1, blocks_per_seq, q_len, kv_len};
    KvCacheShape shape{num_blocks, m.block_size, static_cast<int32_t>(m.kv_heads),
                       static_cast<int32_t>(m.head_dim)};
    // Keys each query row sees (causal), summed.
    double pairs = 0;
    for (int32_t i = 0; i < q_len; ++i) pairs += kv_len - q_len + i + 1;
    pairs *= seqs;
    const double flops = 4.0 * pairs * m.heads * m.head_dim;
    const double bytes = 2.0 * 4 * double(seqs) * kv_len * kv_w + 2.0 * 4 * t * q_w;
    return Run(name, {{"seqs", seqs}, {"q_len", q_len}, {"kv_len", kv_len}}, bytes, flops, false,
               [&] {
                 b_.Attention(Tensor{q->data(), DType::kF32, t, q_w, 0},
                              Tensor{kc->data(), DType::kF32, 0, kv_w, 0},
                              Tensor{vc->data(), DType::kF32, 0, kv_w, 0}, batch, shape,
                              static_cast<int32_t>(m.heads), 0.125f,
                              Tensor{out->data(), DType::kF32, t, q_w, 0});
               });
  }

  json rows() const { return rows_; }

 private:
  CudaBackend& b_;
  Peak peak_;
  int reps_;
  json rows_ = json::array();
};

// One kind of request the device sampler takes.
struct SamplingCase {
  const char* name;
  void (*set)(ScheduledSequence& s);
};

const SamplingCase kSamplingCases[] = {
    {"greedy", [](ScheduledSequence& s) { s.sampling.temperature = 0.0f; }},
    {"whole vocabulary", [](ScheduledSequence&) {}},
    {"top-k 40 + top-p 0.9 (selection)",
     [](ScheduledSequence& s) {
       s.sampling.top_k = 40;
       s.sampling.top_p = 0.9f;
     }},
    {"top-p 0.9 (radix)", [](ScheduledSequence& s) { s.sampling.top_p = 0.9f; }},
    {"min-p 0.05 (radix)", [](ScheduledSequence& s) { s.sampling.min_p = 0.05f; }},
    {"top-k 5000 (radix)", [](ScheduledSequence& s) { s.sampling.top_k = 5000; }},
    {"logprobs 5", [](ScheduledSequence& s) { s.sampling.logprobs = 5; }},
    {"frequency + repetition penalties, 512-token history",
     [](ScheduledSequence& s) {
       s.sampling.frequency_penalty = 0.5f;
       s.sampling.repetition_penalty = 1.1f;
       for (int32_t i = 0; i < 512; ++i) s.penalty_history.push_back((i * 7919) % 30000);
       s.penalty_prompt_len = 128;
     }},
};

// SampleRows against the host path for each case, rows x vocab random logits (uploaded
// again before each repetition, untimed: the penalty case edits them in place).
absl::StatusOr<json> RunSampling(CudaBackend& b, int reps, const std::vector<int64_t>& row_counts,
                                 int32_t vocab) {
  json out = json::array();
  ThreadPool pool;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-12.0f, 12.0f);
  for (int64_t rows : row_counts) {
    std::vector<float> host(static_cast<size_t>(rows) * vocab);
    for (float& v : host) v = dist(rng);
    ORCA_ASSIGN_OR_RETURN(auto buf, b.Allocate(host.size() * sizeof(float)));
    const Tensor logits{buf->data(), DType::kF32, rows, vocab, 0};
    for (const SamplingCase& c : kSamplingCases) {
      std::vector<ScheduledSequence> seqs(static_cast<size_t>(rows));
      std::vector<SampleRowParams> params;
      std::vector<LogitEdit> edits;
      for (int64_t r = 0; r < rows; ++r) {
        ScheduledSequence& s = seqs[static_cast<size_t>(r)];
        s.seq_id = static_cast<uint64_t>(r);
        s.sampling.temperature = 1.0f;
        s.sampling.seed = static_cast<uint64_t>(r);
        c.set(s);
        SampleRowParams p = BackendSampleParams(s);
        p.edits_begin = static_cast<int32_t>(edits.size());
        AppendLogitEdits(s, vocab, &edits);
        p.edits_end = static_cast<int32_t>(edits.size());
        params.push_back(p);
      }
      std::vector<int32_t> ids(static_cast<size_t>(rows));
      std::vector<RowLogprobs> logprobs(static_cast<size_t>(rows));
      // Each repetition uploads the logits afresh (the penalty case edits them in place),
      // untimed, and synchronises; then the draw alone is timed: on the device, or
      // copying the rows to the host and drawing them there on every core.
      auto upload = [&]() -> absl::Status {
        ORCA_RETURN_IF_ERROR(b.CopyToDevice(buf->data(), host.data(), host.size() * sizeof(float)));
        return b.Synchronize();
      };
      auto device = [&]() -> absl::Status {
        return b.SampleRows(logits, params, {}, edits, ids.data(), logprobs.data());
      };
      std::vector<float> copy(host.size());
      auto on_host = [&]() -> absl::Status {
        ORCA_RETURN_IF_ERROR(b.CopyToHost(copy.data(), buf->data(), copy.size() * sizeof(float)));
        pool.ParallelFor(rows, [&](int64_t r) {
          ids[static_cast<size_t>(r)] =
              SampleToken(absl::MakeSpan(copy.data() + r * vocab, static_cast<size_t>(vocab)),
                          seqs[static_cast<size_t>(r)])
                  .token_id;
        });
        return absl::OkStatus();
      };
      auto time = [&](const std::function<absl::Status()>& fn) -> absl::StatusOr<double> {
        ORCA_RETURN_IF_ERROR(upload());
        ORCA_RETURN_IF_ERROR(fn());  // warm-up
        double seconds = 0;
        for (int i = 0; i < reps; ++i) {
          ORCA_RETURN_IF_ERROR(upload());
          const auto t0 = std::chrono::steady_clock::now();
          ORCA_RETURN_IF_ERROR(fn());
          seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        return seconds / reps;
      };
      ORCA_ASSIGN_OR_RETURN(double device_s, time(device));
      ORCA_ASSIGN_OR_RETURN(double host_s, time(on_host));
      out.push_back({{"case", c.name},
                     {"rows", rows},
                     {"vocab", vocab},
                     {"device_ms", device_s * 1e3},
                     {"host_ms", host_s * 1e3},
                     {"host_over_device", host_s / device_s}});
    }
  }
  return out;
}

// Whole iterations through ModelRunner; the KV contents are whatever the pool holds
// (timing does not depend on them).
// Each iteration runs as serving runs it (ModelRunner::Execute: forward pass and
// sampling at temperature 1 with no truncation), over a KV cache of `kv_dtype`, its
// tokens drawn on the device or, with `host_sampling`, on the host (on every core);
// decodes replayed from CUDA graphs or, without `graphs`, launched op by op; the layers
// in the weights' 16-bit type or, without `sixteen_bit`, with float32 activations.
absl::StatusOr<json> RunIterations(CudaBackend& b, const std::string& model_dir, const Peak& peak,
                                   int reps, const std::vector<int64_t>& decode_batches,
                                   int32_t context, const std::vector<int64_t>& prefill_lens,
                                   DType kv_dtype, bool host_sampling, bool graphs,
                                   bool sixteen_bit) {
  ModelRunnerOptions opts;
  opts.graphs = graphs;
  opts.sixteen_bit_activations = sixteen_bit;
  opts.kv_cache_dtype = kv_dtype;
  opts.sample_on_backend = !host_sampling;
  opts.sampler_threads = 0;  // every core, as serving samples on the host
  opts.block_size = 16;
  int64_t blocks = 0;
  for (int64_t bs : decode_batches) blocks = std::max<int64_t>(blocks, bs * ((context + 15) / 16));
  for (int64_t len : prefill_lens) blocks = std::max<int64_t>(blocks, (len + 15) / 16);
  opts.num_kv_blocks = static_cast<int32_t>(blocks);
  ORCA_ASSIGN_OR_RETURN(auto runner, ModelRunner::Create(model_dir, &b, opts));
  const ModelConfig& c = runner->config();
  const double params = static_cast<double>(CountParameters(c));
  json out = json::array();
  auto run = [&](const std::string& kind, int64_t seqs, int32_t q_len,
                 int32_t start) -> absl::Status {
    IterationPlan plan;
    const int32_t per_seq = (start + q_len + 15) / 16;
    for (int64_t s = 0; s < seqs; ++s) {
      ScheduledSequence seq;
      seq.seq_id = static_cast<uint64_t>(s);
      seq.start_pos = start;
      for (int32_t i = 0; i < q_len; ++i)
        seq.token_ids.push_back(static_cast<int32_t>((s * 31 + i) % c.vocab_size));
      for (int32_t j = 0; j < per_seq; ++j)
        seq.block_table.push_back(static_cast<int32_t>(s * per_seq + j));
      seq.sample = true;
      plan.seqs.push_back(std::move(seq));
    }
    ORCA_RETURN_IF_ERROR(runner->Execute(plan).status());  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) ORCA_RETURN_IF_ERROR(runner->Execute(plan).status());
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    const double tokens = double(seqs) * q_len;
    const double flops =
        2.0 * params * tokens;  // weights only; attention adds little at these lengths
    const double bytes = double(runner->weight_bytes());
    out.push_back({{"iteration", kind},
                   {"kv_cache_dtype", std::string(DTypeName(kv_dtype))},
                   {"sampling", host_sampling ? "host" : "device"},
                   {"graphs", graphs},
                   {"activations", std::string(DTypeName(runner->activation_dtype()))},
                   {"seqs", seqs},
                   {"tokens", tokens},
                   {"context", start + q_len},
                   {"time_ms", s * 1e3},
                   {"tokens_per_s", tokens / s},
                   {"weight_bandwidth_gb_s", bytes / s / 1e9},
                   {"fraction_of_peak_bandwidth", bytes / s / peak.bytes_per_s},
                   {"tflop_s", flops / s / 1e12},
                   {"fraction_of_peak_bf16_gemm", flops / s / peak.bf16_flop_per_s}});
    return absl::OkStatus();
  };
  for (int64_t bs : decode_batches) ORCA_RETURN_IF_ERROR(run("decode", bs, 1, context - 1));
  for (int64_t len : prefill_lens)
    ORCA_RETURN_IF_ERROR(run("prefill", 1, static_cast<int32_t>(len), 0));
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParseList(const std::string& s) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    int64_t v;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) return absl::InvalidArgumentError("bad list: " + s);
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// `--name value` / `--name=value` flags over defaults; unknown flags are errors.
class Args {
 public:
  Args(std::map<std::string, std::string> defaults) : values_(std::move(defaults)) {}
  absl::Status Parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) return absl::InvalidArgumentError("unexpected argument " + a);
      a = a.substr(2);
      std::string value;
      if (size_t eq = a.find('='); eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
      } else if (a == "skip-iterations" || a == "skip-sampling") {
        value = "1";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError("--" + a + " needs a value");
      }
      if (!values_.count(a)) return absl::InvalidArgumentError("unknown flag --" + a);
      values_[a] = value;
    }
    return absl::OkStatus();
  }
  const std::string& Get(const std::string& name) { return values_[name]; }
  absl::StatusOr<int64_t> GetInt(const std::string& name) {
    int64_t v;
    if (!absl::SimpleAtoi(values_[name], &v))
      return absl::InvalidArgumentError("--" + name + " wants an integer");
    return v;
  }

 private:
  std::map<std::string, std::string> values_;
};

absl::Status Main(int argc, char** argv) {
  Args f({{"device", "0"},
          {"model-dir", ""},
          {"reps", "20"},
          {"tokens", "1,16,128,1024"},
          {"decode-batches", "1,8,32,64,128,256"},
          {"context", "512"},
          {"prefill-lens", "128,512,2048"},
          {"kv-cache-dtypes", "float32"},
          {"sampling", "device"},
          {"graphs", "on"},
          {"activations", "16"},
          {"sampling-rows", "1,64,256"},
          {"sampling-vocab", "128256"},
          {"skip-iterations", ""},
          {"skip-sampling", ""}});
  ORCA_RETURN_IF_ERROR(f.Parse(argc, argv));
  ORCA_ASSIGN_OR_RETURN(int64_t device, f.GetInt("device"));
  ORCA_ASSIGN_OR_RETURN(int64_t reps, f.GetInt("reps"));
  ORCA_ASSIGN_OR_RETURN(auto tokens, ParseList(f.Get("tokens")));
  ORCA_ASSIGN_OR_RETURN(auto batches, ParseList(f.Get("decode-batches")));
  ORCA_ASSIGN_OR_RETURN(auto prefill, ParseList(f.Get("prefill-lens")));
  ORCA_ASSIGN_OR_RETURN(int64_t context, f.GetInt("context"));
  ORCA_ASSIGN_OR_RETURN(auto sampling_rows, ParseList(f.Get("sampling-rows")));
  ORCA_ASSIGN_OR_RETURN(int64_t sampling_vocab, f.GetInt("sampling-vocab"));
  if (sampling_vocab <= 0 || sampling_vocab > INT32_MAX)
    return absl::InvalidArgumentError("--sampling-vocab must be a positive int32");
  if (reps <= 0 || context <= 0)
    return absl::InvalidArgumentError("--reps and --context must be positive");
  std::vector<DType> kv_dtypes;
  for (absl::string_view name : absl::StrSplit(f.Get("kv-cache-dtypes"), ',', absl::SkipEmpty())) {
    const std::optional<WeightDType> d = ParseWeightDType(name);
    if (!d.has_value() || *d == WeightDType::kAuto) {
      return absl::InvalidArgumentError(
          absl::StrCat("--kv-cache-dtypes: '", name, "' is not float32, float16 or bfloat16"));
    }
    ORCA_ASSIGN_OR_RETURN(DType kv, ResolveKvCacheDType(*d, Device::kCuda));
    kv_dtypes.push_back(kv);
  }
  std::vector<bool> host_sampling;
  for (absl::string_view where : absl::StrSplit(f.Get("sampling"), ',', absl::SkipEmpty())) {
    if (where != "device" && where != "host") {
      return absl::InvalidArgumentError("--sampling takes device, host or device,host");
    }
    host_sampling.push_back(where == "host");
  }
  std::vector<bool> graphs;
  for (absl::string_view g : absl::StrSplit(f.Get("graphs"), ',', absl::SkipEmpty())) {
    if (g != "on" && g != "off")
      return absl::InvalidArgumentError("--graphs takes on, off or on,off");
    graphs.push_back(g == "on");
  }
  std::vector<bool> sixteen_bit;
  for (absl::string_view a : absl::StrSplit(f.Get("activations"), ',', absl::SkipEmpty())) {
    if (a != "16" && a != "32")
      return absl::InvalidArgumentError("--activations takes 16, 32 or 16,32");
    sixteen_bit.push_back(a == "16");
  }

  CudaBackendOptions opts;
  opts.device = static_cast<int>(device);
  ORCA_ASSIGN_OR_RETURN(auto backend, CudaBackend::Create(opts));
  cudaDeviceProp prop;
  ORCA_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, opts.device));
  ORCA_ASSIGN_OR_RETURN(Peak peak, MeasurePeak(*backend));

  json doc;
  doc["device"] = {{"name", prop.name},
                   {"sm", prop.major * 10 + prop.minor},
                   {"sms", prop.multiProcessorCount},
                   {"memory_bytes", prop.totalGlobalMem}};
  doc["peak"] = {{"bandwidth_gb_s", peak.bytes_per_s / 1e9},
                 {"bf16_gemm_tflop_s", peak.bf16_flop_per_s / 1e12},
                 {"f32_gemm_tflop_s", peak.f32_flop_per_s / 1e12}};
  KernelBench kb(*backend, peak, static_cast<int>(reps));
  ORCA_RETURN_IF_ERROR(kb.RunAll(tokens));
  for (int64_t bs : batches) {
    ORCA_RETURN_IF_ERROR(kb.RunAttention("attention_decode", static_cast<int32_t>(bs), 1,
                                         static_cast<int32_t>(context)));
  }
  for (int64_t len : prefill) {
    ORCA_RETURN_IF_ERROR(kb.RunAttention("attention_prefill", 1, static_cast<int32_t>(len),
                                         static_cast<int32_t>(len)));
  }
  doc["kernels"] = kb.rows();
  if (f.Get("skip-sampling").empty()) {
    ORCA_ASSIGN_OR_RETURN(doc["sampling"],
                          RunSampling(*backend, static_cast<int>(reps), sampling_rows,
                                      static_cast<int32_t>(sampling_vocab)));
  }

  if (f.Get("skip-iterations").empty()) {
    std::string dir = f.Get("model-dir");
    std::filesystem::path tmp;
    if (dir.empty()) {
      tmp = std::filesystem::temp_directory_path() /
            ("orca-bench-llama-1b-" + std::to_string(::getpid()));
      ORCA_ASSIGN_OR_RETURN(ModelConfig c, PresetConfig("llama-1b"));
      ORCA_RETURN_IF_ERROR(WriteRandomCheckpoint(c, tmp.string(), 1));
      dir = tmp.string();
    }
    json iterations = json::array();
    absl::Status status;
    for (DType kv : kv_dtypes) {
      for (bool host : host_sampling) {
        for (bool g : graphs) {
          for (bool sixteen : sixteen_bit) {
            if (!status.ok()) break;
            auto iters =
                RunIterations(*backend, dir, peak, static_cast<int>(reps), batches,
                              static_cast<int32_t>(context), prefill, kv, host, g, sixteen);
            status = iters.status();
            if (iters.ok()) iterations.insert(iterations.end(), iters->begin(), iters->end());
          }
        }
      }
    }
    if (!tmp.empty()) std::filesystem::remove_all(tmp);
    ORCA_RETURN_IF_ERROR(status);
    doc["model"] = dir.empty() || !tmp.empty() ? "random llama-1b (BF16)" : dir;
    doc["iterations"] = iterations;
  }
  std::cout << doc.dump(2) << std::endl;
  return absl::OkStatus();
}

}  // namespace
}  // namespace orca

int main(int argc, char** argv) {
  absl::Status s = orca::Main(argc, argv);
  if (!s.ok()) {
    std::cout << nlohmann::json{{"error", s.ToString()}}.dump() << std::endl;
    return 1;
  }
  return 0;
}
