#include "bench/engine_sweep/op_timing_backend.h"

namespace orca::bench {

using Clock = std::chrono::steady_clock;

const char* OpTimingBackend::OpName(Op op) {
  switch (op) {
    case kLinear:
      return "linear";
    case kAttention:
      return "attention";
    case kKvWrite:
      return "kv_write";
    case kNorm:
      return "norm";
    case kAdd:
      return "add";
    case kRope:
      return "rope";
    case kActivation:
      return "activation";
    case kEmbedding:
      return "embedding";
    case kGather:
      return "gather";
    case kSample:
      return "sample";
    case kNumOps:
      break;
  }
  return "?";
}

void OpTimingBackend::Count(Op op, Clock::time_point start) {
  totals_.seconds[op] += std::chrono::duration<double>(Clock::now() - start).count();
  ++totals_.calls[op];
}

void OpTimingBackend::Embedding(const int32_t* ids, int64_t n, const Tensor& table, Tensor out,
                                bool accumulate) {
  const auto start = Clock::now();
  inner_->Embedding(ids, n, table, out, accumulate);
  Count(kEmbedding, start);
}

void OpTimingBackend::Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  const auto start = Clock::now();
  inner_->Linear(x, w, bias, out);
  Count(kLinear, start);
}

void OpTimingBackend::Add(Tensor x, const Tensor& y) {
  const auto start = Clock::now();
  inner_->Add(x, y);
  Count(kAdd, start);
}

void OpTimingBackend::RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) {
  const auto start = Clock::now();
  inner_->RmsNorm(x, weight, eps, out);
  Count(kNorm, start);
}

void OpTimingBackend::LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                float eps, Tensor out) {
  const auto start = Clock::now();
  inner_->LayerNorm(x, weight, bias, eps, out);
  Count(kNorm, start);
}

void OpTimingBackend::AddRmsNorm(Tensor residual, const Tensor& delta, const Tensor& weight,
                                 float eps, Tensor out) {
  const auto start = Clock::now();
  inner_->AddRmsNorm(residual, delta, weight, eps, out);
  Count(kNorm, start);
}

void OpTimingBackend::AddLayerNorm(Tensor residual, const Tensor& delta, const Tensor& weight,
                                   const Tensor& bias, float eps, Tensor out) {
  const auto start = Clock::now();
  inner_->AddLayerNorm(residual, delta, weight, bias, eps, out);
  Count(kNorm, start);
}

void OpTimingBackend::Rope(Tensor x, const int32_t* positions, int32_t num_heads, int32_t head_dim,
                           double theta) {
  const auto start = Clock::now();
  inner_->Rope(x, positions, num_heads, head_dim, theta);
  Count(kRope, start);
}

void OpTimingBackend::GatedActivation(const Tensor& gate_up, Activation act, Tensor out) {
  const auto start = Clock::now();
  inner_->GatedActivation(gate_up, act, out);
  Count(kActivation, start);
}

void OpTimingBackend::ActivationInPlace(Tensor x, Activation act) {
  const auto start = Clock::now();
  inner_->ActivationInPlace(x, act);
  Count(kActivation, start);
}

void OpTimingBackend::KvWrite(const Tensor& k, const Tensor& v, const int32_t* slot_mapping,
                              const KvCacheShape& shape, Tensor k_cache, Tensor v_cache) {
  const auto start = Clock::now();
  inner_->KvWrite(k, v, slot_mapping, shape, k_cache, v_cache);
  Count(kKvWrite, start);
}

void OpTimingBackend::Attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                const AttentionBatch& batch, const KvCacheShape& shape,
                                int32_t num_heads, float scale, Tensor out) {
  const auto start = Clock::now();
  inner_->Attention(q, k_cache, v_cache, batch, shape, num_heads, scale, out);
  Count(kAttention, start);
}

void OpTimingBackend::GatherRows(const Tensor& x, const int32_t* rows, int64_t n, Tensor out) {
  const auto start = Clock::now();
  inner_->GatherRows(x, rows, n, out);
  Count(kGather, start);
}

absl::Status OpTimingBackend::SampleRows(const Tensor& logits,
                                         absl::Span<const SampleRowParams> params,
                                         absl::Span<const uint32_t> masks,
                                         absl::Span<const LogitEdit> edits, int32_t* host_tokens,
                                         RowLogprobs* host_logprobs) {
  const auto start = Clock::now();
  absl::Status status =
      inner_->SampleRows(logits, params, masks, edits, host_tokens, host_logprobs);
  Count(kSample, start);
  return status;
}

}  // namespace orca::bench
