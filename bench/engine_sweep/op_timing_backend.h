// A Backend that runs every call on another one and adds the wall time of each compute
// operation to a total per kind of operation: where a decode iteration's time goes, by
// kernel, without a profiler. (On a 2-vCPU VM, perf's samples put 11-21 % of a
// 16-sequence decode in attention where these timers measured half of it;
// docs/benchmarks.md section 18.) `orca bench engine` wraps its CPU backend in one.
//
// The times are those of calls that return when their work is done, as the CPU
// backend's do; for an asynchronous backend they would be launch times. Memory,
// copies, uploads and graphs are passed through untimed. Overhead: two clock reads per
// operation (a llama-110m decode iteration makes about 150). Not thread-safe, as the
// ModelRunner's use of a backend is not.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/backend/backend.h"

namespace orca::bench {

class OpTimingBackend final : public Backend {
 public:
  enum Op {
    kLinear,      // Linear
    kAttention,   // Attention
    kKvWrite,     // KvWrite
    kNorm,        // RmsNorm, LayerNorm, AddRmsNorm, AddLayerNorm
    kAdd,         // Add
    kRope,        // Rope
    kActivation,  // GatedActivation, ActivationInPlace
    kEmbedding,   // Embedding
    kGather,      // GatherRows
    kSample,      // SampleRows
    kNumOps
  };
  // The op's name in reports: "linear", "attention", "kv_write", ...
  static const char* OpName(Op op);

  struct Totals {
    std::array<double, kNumOps> seconds{};
    std::array<int64_t, kNumOps> calls{};
  };

  // `inner` must outlive this backend.
  explicit OpTimingBackend(Backend* inner) : inner_(inner) {}

  // The totals since construction or the last Reset.
  const Totals& totals() const { return totals_; }
  void Reset() { totals_ = Totals{}; }

  std::string name() const override { return inner_->name(); }
  bool SupportsWeightDType(DType dtype) const override {
    return inner_->SupportsWeightDType(dtype);
  }
  bool SupportsKvCacheDType(DType dtype) const override {
    return inner_->SupportsKvCacheDType(dtype);
  }
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override {
    return inner_->Allocate(bytes);
  }
  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    return inner_->CopyToDevice(dst, src, bytes);
  }
  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes) override {
    return inner_->CopyToDeviceAsync(dst, src, bytes);
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    return inner_->CopyToHost(dst, src, bytes);
  }
  absl::StatusOr<Tensor> UploadLinearWeight(const void* host, DType dtype, int64_t rows,
                                            int64_t cols,
                                            std::unique_ptr<DeviceBuffer>* storage) override {
    return inner_->UploadLinearWeight(host, dtype, rows, cols, storage);
  }
  absl::Status Synchronize() override { return inner_->Synchronize(); }
  MemoryInfo GetMemoryInfo() const override { return inner_->GetMemoryInfo(); }

  void Embedding(const int32_t* ids, int64_t n, const Tensor& table, Tensor out,
                 bool accumulate) override;
  void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) override;
  void Add(Tensor x, const Tensor& y) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) override;
  void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                 Tensor out) override;
  void AddRmsNorm(Tensor residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor out) override;
  void AddLayerNorm(Tensor residual, const Tensor& delta, const Tensor& weight, const Tensor& bias,
                    float eps, Tensor out) override;
  void Rope(Tensor x, const int32_t* positions, int32_t num_heads, int32_t head_dim,
            double theta) override;
  void GatedActivation(const Tensor& gate_up, Activation act, Tensor out) override;
  void ActivationInPlace(Tensor x, Activation act) override;
  void KvWrite(const Tensor& k, const Tensor& v, const int32_t* slot_mapping,
               const KvCacheShape& shape, Tensor k_cache, Tensor v_cache) override;
  void Attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 const AttentionBatch& batch, const KvCacheShape& shape, int32_t num_heads,
                 float scale, Tensor out) override;
  void GatherRows(const Tensor& x, const int32_t* rows, int64_t n, Tensor out) override;

  SamplingCaps Sampling() const override { return inner_->Sampling(); }
  absl::Status SampleRows(const Tensor& logits, absl::Span<const SampleRowParams> params,
                          absl::Span<const uint32_t> masks, absl::Span<const LogitEdit> edits,
                          int32_t* host_tokens, RowLogprobs* host_logprobs) override;

  bool SupportsGraphs() const override { return inner_->SupportsGraphs(); }
  absl::Status BeginCapture() override { return inner_->BeginCapture(); }
  absl::StatusOr<std::unique_ptr<BackendGraph>> EndCapture() override {
    return inner_->EndCapture();
  }
  absl::Status Replay(BackendGraph& graph) override { return inner_->Replay(graph); }
  int64_t workspace_generation() const override { return inner_->workspace_generation(); }

 private:
  // Adds the time since `start` to `op`'s total.
  void Count(Op op, std::chrono::steady_clock::time_point start);

  Backend* inner_;
  Totals totals_;
};

}  // namespace orca::bench
