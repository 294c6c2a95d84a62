#include "engine/backend/cuda/cuda_backend.h"

#include <cublas_v2.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_status.h"
#include "engine/backend/cuda/internal/device_memory.h"
#include "engine/backend/cuda/internal/pinned_uploader.h"
#include "engine/common/status_macros.h"
#include "kernels/activation.cuh"
#include "kernels/add.cuh"
#include "kernels/convert.cuh"
#include "kernels/embedding.cuh"
#include "kernels/gather_rows.cuh"
#include "kernels/kv_write.cuh"
#include "kernels/norm.cuh"
#include "kernels/paged_attention.cuh"
#include "kernels/rope.cuh"
#include "kernels/sampling.cuh"

namespace orca {

// SampleRowParams is uploaded as the kernel's parameter rows.
static_assert(
    sizeof(SampleRowParams) == sizeof(kernels::DeviceSamplingParams) &&
    offsetof(SampleRowParams, temperature) ==
        offsetof(kernels::DeviceSamplingParams, temperature) &&
    offsetof(SampleRowParams, top_k) == offsetof(kernels::DeviceSamplingParams, top_k) &&
    offsetof(SampleRowParams, top_p) == offsetof(kernels::DeviceSamplingParams, top_p) &&
    offsetof(SampleRowParams, min_p) == offsetof(kernels::DeviceSamplingParams, min_p) &&
    offsetof(SampleRowParams, uniform) == offsetof(kernels::DeviceSamplingParams, uniform) &&
    offsetof(SampleRowParams, mask_row) == offsetof(kernels::DeviceSamplingParams, mask_row) &&
    offsetof(SampleRowParams, logprobs) == offsetof(kernels::DeviceSamplingParams, logprobs) &&
    offsetof(SampleRowParams, repetition_penalty) ==
        offsetof(kernels::DeviceSamplingParams, repetition_penalty) &&
    offsetof(SampleRowParams, edits_begin) ==
        offsetof(kernels::DeviceSamplingParams, edits_begin) &&
    offsetof(SampleRowParams, edits_end) == offsetof(kernels::DeviceSamplingParams, edits_end));
// LogitEdit is uploaded as the kernel's edits.
static_assert(sizeof(LogitEdit) == sizeof(kernels::DeviceLogitEdit) &&
              offsetof(LogitEdit, token) == offsetof(kernels::DeviceLogitEdit, token) &&
              offsetof(LogitEdit, ops) == offsetof(kernels::DeviceLogitEdit, ops) &&
              offsetof(LogitEdit, bias) == offsetof(kernels::DeviceLogitEdit, bias) &&
              offsetof(LogitEdit, subtract) == offsetof(kernels::DeviceLogitEdit, subtract) &&
              LogitEdit::kBias == kernels::kEditBias &&
              LogitEdit::kSubtract == kernels::kEditSubtract &&
              LogitEdit::kRepeat == kernels::kEditRepeat);
// RowLogprobs is what the kernel writes.
static_assert(sizeof(RowLogprobs) == sizeof(kernels::DeviceRowLogprobs) &&
              kMaxBackendLogprobs == kernels::kMaxDeviceLogprobs &&
              offsetof(RowLogprobs, top_ids) == offsetof(kernels::DeviceRowLogprobs, top_ids) &&
              offsetof(RowLogprobs, top_logprobs) ==
                  offsetof(kernels::DeviceRowLogprobs, top_logprobs));
namespace {

using cuda_internal::DeviceMemory;
using cuda_internal::PinnedUploader;

kernels::ScalarType ToScalarType(DType t) {
  switch (t) {
    case DType::kF16:
      return kernels::ScalarType::kF16;
    case DType::kBF16:
      return kernels::ScalarType::kBF16;
    case DType::kF32:
      break;
  }
  return kernels::ScalarType::kF32;
}

kernels::ActivationKind ToActivationKind(Activation a) {
  switch (a) {
    case Activation::kGeluTanh:
      return kernels::ActivationKind::kGeluTanh;
    case Activation::kGeluErf:
      return kernels::ActivationKind::kGeluErf;
    case Activation::kSilu:
      break;
  }
  return kernels::ActivationKind::kSilu;
}

cudaDataType CudaDataType(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kF32:
      break;
  }
  return CUDA_R_32F;
}

bool IsContiguous(const Tensor& t) { return t.stride == 0 || t.stride == t.cols; }
// A norm's output as its kernel takes it (any activation dtype).
kernels::RowMatrix RowsOf(const Tensor& t) { return {t.data, t.ld(), ToScalarType(t.dtype)}; }
bool SameShape(const Tensor& a, const Tensor& b) { return a.rows == b.rows && a.cols == b.cols; }

class CudaBackendImpl : public CudaBackend {
 public:
  CudaBackendImpl(std::shared_ptr<DeviceMemory> memory, cublasHandle_t cublas, bool allow_tf32)
      : memory_(std::move(memory)), cublas_(cublas), allow_tf32_(allow_tf32) {
    // Split-KV attention sizes its grid by the SM count; without it, it never splits.
    if (cudaDeviceGetAttribute(&num_sms_, cudaDevAttrMultiProcessorCount, memory_->device()) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      num_sms_ = 0;
    }
  }

  ~CudaBackendImpl() override {
    (void)cudaSetDevice(memory_->device());
    (void)cudaStreamSynchronize(memory_->stream());
    // Workspaces go back to the pool before the handle and the stream go away.
    conversion_.reset();
    attention_ws_.reset();
    sampling_ws_.reset();
    (void)cublasDestroy(cublas_);
  }

  std::string name() const override { return absl::StrCat("cuda:", memory_->device()); }
  bool SupportsWeightDType(DType) const override { return true; }
  bool SupportsKvCacheDType(DType) const override { return true; }
  bool SupportsActivationDType(DType) const override { return true; }
  cudaStream_t stream() const override { return memory_->stream(); }
  int device() const override { return memory_->device(); }

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) override {
    return memory_->Allocate(bytes);
  }

  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device()));
    ORCA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()));
    // The caller may reuse `src` at once (it may be pinned, where the copy is truly async).
    ORCA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
    return TakeError();
  }

  // From pinned staging memory (internal/pinned_uploader.h): no wait for the GPU.
  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes) override {
    if (capturing_) {
      return absl::FailedPreconditionError(
          "cuda backend: CopyToDeviceAsync while a graph is captured");
    }
    ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device()));
    ORCA_CUDA_RETURN_IF_ERROR(uploader_.Upload(dst, src, bytes, stream()));
    return absl::OkStatus();
  }

  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device()));
    if (bytes != 0) {
      ORCA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()));
    }
    ORCA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
    return TakeError();
  }

  absl::Status Synchronize() override {
    ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device()));
    ORCA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
    return TakeError();
  }

  MemoryInfo GetMemoryInfo() const override {
    MemoryInfo info;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(device()) != cudaSuccess ||
        cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      return info;
    }
    const size_t budget = memory_->budget(), used = memory_->allocated();
    info.total_bytes = budget;
    info.free_bytes = used >= budget ? 0 : std::min(budget - used, free_bytes);
    return info;
  }

  void Embedding(const int32_t* ids, int64_t n, const Tensor& table, Tensor out,
                 bool accumulate) override {
    if (!Expect(out.dtype == DType::kF32 && out.cols == table.cols && IsContiguous(table),
                "Embedding", "out must be F32 [n, hidden] and the table contiguous")) {
      return;
    }
    Launched(kernels::LaunchEmbedding(ids, n, table.data, ToScalarType(table.dtype), table.rows,
                                      table.cols, out.f32(), out.ld(), accumulate, BeginOp()),
             "LaunchEmbedding");
  }

  void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) override;

  void Add(Tensor x, const Tensor& y) override {
    if (!Expect(x.rows == y.rows && x.cols == y.cols && x.dtype == DType::kF32 &&
                    y.dtype == DType::kF32,
                "Add", "x and y must be F32 of one shape")) {
      return;
    }
    Launched(kernels::LaunchAdd(x.f32(), x.ld(), y.f32(), y.ld(), x.rows, x.cols, BeginOp()),
             "LaunchAdd");
  }

  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) override {
    if (!Expect(weight.dtype == DType::kF32 && weight.rows * weight.cols == x.cols &&
                    out.cols == x.cols && out.rows == x.rows && x.dtype == DType::kF32,
                "RmsNorm", "x and weight must be F32, weight [1, cols], out the shape of x")) {
      return;
    }
    Launched(kernels::LaunchRmsNorm({x.data, x.ld()}, {}, weight.f32(), eps, x.rows, x.cols,
                                    RowsOf(out), BeginOp()),
             "LaunchRmsNorm");
  }

  void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                 Tensor out) override {
    if (!Expect(weight.dtype == DType::kF32 && bias.dtype == DType::kF32 &&
                    weight.rows * weight.cols == x.cols && bias.rows * bias.cols == x.cols &&
                    out.cols == x.cols && out.rows == x.rows && x.dtype == DType::kF32,
                "LayerNorm",
                "x, weight and bias must be F32, weight and bias [1, cols], out the shape of x")) {
      return;
    }
    Launched(kernels::LaunchLayerNorm({x.data, x.ld()}, {}, weight.f32(), bias.f32(), eps, x.rows,
                                      x.cols, RowsOf(out), BeginOp()),
             "LaunchLayerNorm");
  }

  void AddRmsNorm(Tensor residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor out) override {
    if (!Expect(weight.dtype == DType::kF32 && weight.rows * weight.cols == residual.cols &&
                    SameShape(residual, delta) && SameShape(residual, out) &&
                    residual.dtype == DType::kF32 && delta.dtype == DType::kF32,
                "AddRmsNorm",
                "residual, delta and weight must be F32, weight [1, cols], delta and out the "
                "shape of residual")) {
      return;
    }
    Launched(kernels::LaunchRmsNorm({delta.data, delta.ld()}, {residual.data, residual.ld()},
                                    weight.f32(), eps, residual.rows, residual.cols, RowsOf(out),
                                    BeginOp()),
             "LaunchRmsNorm");
  }

  void AddLayerNorm(Tensor residual, const Tensor& delta, const Tensor& weight, const Tensor& bias,
                    float eps, Tensor out) override {
    if (!Expect(weight.dtype == DType::kF32 && bias.dtype == DType::kF32 &&
                    weight.rows * weight.cols == residual.cols &&
                    bias.rows * bias.cols == residual.cols && SameShape(residual, delta) &&
                    SameShape(residual, out) && residual.dtype == DType::kF32 &&
                    delta.dtype == DType::kF32,
                "AddLayerNorm",
                "residual, delta, weight and bias must be F32, weight and bias [1, cols], delta "
                "and out the shape of residual")) {
      return;
    }
    Launched(kernels::LaunchLayerNorm({delta.data, delta.ld()}, {residual.data, residual.ld()},
                                      weight.f32(), bias.f32(), eps, residual.rows, residual.cols,
                                      RowsOf(out), BeginOp()),
             "LaunchLayerNorm");
  }

  void Rope(Tensor x, const int32_t* positions, int32_t num_heads, int32_t head_dim,
            double theta) override {
    if (!Expect(int64_t{num_heads} * head_dim <= x.cols, "Rope",
                "num_heads * head_dim exceeds the row")) {
      return;
    }
    Launched(kernels::LaunchRope(x.data, x.ld(), x.rows, positions, num_heads, head_dim, theta,
                                 BeginOp(), ToScalarType(x.dtype)),
             "LaunchRope");
  }

  void GatedActivation(const Tensor& gate_up, Activation act, Tensor out) override {
    if (!Expect(
            gate_up.cols == 2 * out.cols && gate_up.rows == out.rows && gate_up.dtype == out.dtype,
            "GatedActivation", "gate_up must be [T, 2I] for out [T, I], of one dtype")) {
      return;
    }
    Launched(kernels::LaunchGatedActivation(gate_up.data, gate_up.ld(), gate_up.rows, out.cols,
                                            ToActivationKind(act), out.data, out.ld(), BeginOp(),
                                            ToScalarType(out.dtype)),
             "LaunchGatedActivation");
  }

  void ActivationInPlace(Tensor x, Activation act) override {
    Launched(kernels::LaunchActivationInPlace(x.data, x.ld(), x.rows, x.cols, ToActivationKind(act),
                                              BeginOp(), ToScalarType(x.dtype)),
             "LaunchActivationInPlace");
  }

  void KvWrite(const Tensor& k, const Tensor& v, const int32_t* slot_mapping,
               const KvCacheShape& shape, Tensor k_cache, Tensor v_cache) override {
    if (!Expect(k.rows == v.rows && k.cols == v.cols && k_cache.cols == k.cols &&
                    v_cache.cols == k.cols && k_cache.rows == v_cache.rows &&
                    k.cols == int64_t{shape.num_kv_heads} * shape.head_dim &&
                    k_cache.dtype == shape.dtype && v_cache.dtype == shape.dtype &&
                    IsContiguous(k_cache) && IsContiguous(v_cache) && k.dtype == v.dtype,
                "KvWrite",
                "k/v rows (of one dtype) must match the contiguous caches' shape and dtype")) {
      return;
    }
    Launched(kernels::LaunchKvWrite(k.data, k.ld(), v.data, v.ld(), k.rows, shape.num_kv_heads,
                                    shape.head_dim, shape.block_size, slot_mapping,
                                    ToScalarType(shape.dtype), k_cache.data, v_cache.data,
                                    k_cache.rows, BeginOp(), ToScalarType(k.dtype)),
             "LaunchKvWrite");
  }

  void Attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                 const AttentionBatch& batch, const KvCacheShape& shape, int32_t num_heads,
                 float scale, Tensor out) override;

  void GatherRows(const Tensor& x, const int32_t* rows, int64_t n, Tensor out) override {
    if (!Expect(out.cols == x.cols && x.dtype == DType::kF32 && out.dtype == DType::kF32,
                "GatherRows", "x and out must be F32 with the same columns")) {
      return;
    }
    Launched(kernels::LaunchGatherRows(x.f32(), x.ld(), x.rows, x.cols, rows, n, out.f32(),
                                       out.ld(), BeginOp()),
             "LaunchGatherRows");
  }

  bool SupportsGraphs() const override { return true; }
  absl::Status BeginCapture() override;
  absl::StatusOr<std::unique_ptr<BackendGraph>> EndCapture() override;
  absl::Status Replay(BackendGraph& graph) override;
  int64_t workspace_generation() const override { return workspace_generation_; }

  // Any truncation (top-k up to kMaxSampleCandidates by selection, beyond it and top-p /
  // min-p alone by bisection), logprobs up to OpenAI's 20, logit bias and penalties
  // (kernels/sampling.cuh).
  SamplingCaps Sampling() const override {
    return SamplingCaps{true, INT32_MAX, kernels::kMaxDeviceLogprobs, true};
  }
  absl::Status SampleRows(const Tensor& logits, absl::Span<const SampleRowParams> params,
                          absl::Span<const uint32_t> masks, absl::Span<const LogitEdit> edits,
                          int32_t* host_tokens, RowLogprobs* host_logprobs) override;

 private:
  // Selects the device and returns the stream for the next launch.
  cudaStream_t BeginOp() {
    Record(ORCA_CUDA_STATUS(cudaSetDevice(device())));
    return stream();
  }
  void Record(absl::Status s) {
    if (!s.ok() && first_error_.ok()) first_error_ = std::move(s);
  }
  void Launched(cudaError_t err, const char* launcher) {
    if (err != cudaSuccess) {
      Record(
          absl::InternalError(absl::StrCat("CUDA error in ", launcher, ": ", cudaGetErrorName(err),
                                           " (", cudaGetErrorString(err), ")")));
    }
  }
  bool Expect(bool ok, const char* op, const char* what) {
    if (!ok) Record(absl::InvalidArgumentError(absl::StrCat("cuda backend ", op, ": ", what)));
    return ok;
  }
  absl::Status TakeError() { return std::exchange(first_error_, absl::OkStatus()); }
  // Returns a device workspace of at least `bytes`, grown (stream-ordered) as needed;
  // null (with the error recorded) on failure.
  void* Workspace(std::unique_ptr<DeviceBuffer>& ws, size_t bytes) {
    if (absl::Status s = Grow(ws, bytes); !s.ok()) {
      Record(std::move(s));
      return nullptr;
    }
    return ws->data();
  }
  // Makes `ws` hold at least `bytes` (with headroom); a workspace that moves changes
  // workspace_generation(), and none may move while a graph is recorded (the graph
  // would name the old buffer, and a capture cannot allocate). On failure `ws` is empty.
  absl::Status Grow(std::unique_ptr<DeviceBuffer>& ws, size_t bytes) {
    if (ws != nullptr && ws->size() >= bytes) return absl::OkStatus();
    if (capturing_) {
      return absl::FailedPreconditionError(
          "cuda backend: a workspace would have to grow during graph capture");
    }
    ++workspace_generation_;
    ws.reset();
    ORCA_ASSIGN_OR_RETURN(ws, memory_->Allocate(bytes + bytes / 2));
    return absl::OkStatus();
  }

  std::shared_ptr<DeviceMemory> memory_;
  PinnedUploader uploader_;  // host-to-device copies that do not wait
  cublasHandle_t cublas_;
  bool allow_tf32_;
  absl::Status first_error_;
  std::unique_ptr<DeviceBuffer> conversion_;  // activations converted for 16-bit GEMMs
  std::unique_ptr<DeviceBuffer> biased_;      // float32 GEMM results a bias joins before rounding
  // Paged attention's tile offsets and split-KV partials, sized by the largest batch
  // seen (the profiling pass's) up to a bound fixed by the SM count and head dim.
  std::unique_ptr<DeviceBuffer> attention_ws_;
  bool attention_splits_ = true;  // false once the device had no room for the partials
  // SampleRows' parameter rows and token ids, sized by the most rows sampled at once
  // (the profiling pass's).
  std::unique_ptr<DeviceBuffer> sampling_ws_;
  bool capturing_ = false;
  int64_t workspace_generation_ = 0;  // bumped whenever a workspace moves
  int num_sms_ = 0;
};

// An instantiated CUDA graph.
class CudaGraph : public BackendGraph {
 public:
  CudaGraph(cudaGraphExec_t exec, int device) : exec_(exec), device_(device) {}
  ~CudaGraph() override {
    (void)cudaSetDevice(device_);
    (void)cudaGraphExecDestroy(exec_);
  }
  cudaGraphExec_t exec() const { return exec_; }

 private:
  cudaGraphExec_t exec_;
  int device_;
};

absl::Status CudaBackendImpl::BeginCapture() {
  ORCA_RETURN_IF_ERROR(TakeError());
  if (capturing_) return absl::FailedPreconditionError("cuda backend: already capturing");
  ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device()));
  // Thread-local: only this thread's calls that cannot be captured fail the capture.
  ORCA_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BackendGraph>> CudaBackendImpl::EndCapture() {
  if (!capturing_) return absl::FailedPreconditionError("cuda backend: not capturing");
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  absl::Status ended = ORCA_CUDA_STATUS(cudaStreamEndCapture(stream(), &graph));
  absl::Status recorded = TakeError();  // an op that failed while recorded
  if (ended.ok() && !recorded.ok()) ended = recorded;
  if (!ended.ok()) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return ended;
  }
  cudaGraphExec_t exec = nullptr;
  absl::Status made = ORCA_CUDA_STATUS(cudaGraphInstantiate(&exec, graph, 0));
  (void)cudaGraphDestroy(graph);
  ORCA_RETURN_IF_ERROR(made);
  return std::unique_ptr<BackendGraph>(new CudaGraph(exec, device()));
}

absl::Status CudaBackendImpl::Replay(BackendGraph& graph) {
  auto* g = dynamic_cast<CudaGraph*>(&graph);
  if (g == nullptr) return absl::InvalidArgumentError("cuda backend: not a CUDA graph");
  Record(ORCA_CUDA_STATUS(cudaGraphLaunch(g->exec(), BeginOp())));
  return absl::OkStatus();
}

absl::Status CudaBackendImpl::SampleRows(const Tensor& logits,
                                         absl::Span<const SampleRowParams> params,
                                         absl::Span<const uint32_t> masks,
                                         absl::Span<const LogitEdit> edits, int32_t* host_tokens,
                                         RowLogprobs* host_logprobs) {
  const int64_t rows = static_cast<int64_t>(params.size());
  if (rows == 0) return TakeError();
  const int64_t words = kernels::MaskWords(logits.cols);
  if (logits.dtype != DType::kF32 || logits.rows < rows ||
      static_cast<int64_t>(masks.size()) % words != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda backend SampleRows: expects F32 logits of at least ", rows,
                     " rows and masks of whole rows (", words, " words each)"));
  }
  bool any_logprobs = false;
  for (const SampleRowParams& p : params) {
    if (p.mask_row >= static_cast<int64_t>(masks.size()) / words) {
      return absl::InvalidArgumentError(
          absl::StrCat("cuda backend SampleRows: mask row ", p.mask_row, " out of range"));
    }
    if (p.logprobs > kMaxBackendLogprobs) {
      return absl::InvalidArgumentError(absl::StrCat("cuda backend SampleRows: ", p.logprobs,
                                                     " top logprobs asked, at most ",
                                                     kMaxBackendLogprobs));
    }
    any_logprobs = any_logprobs || p.logprobs >= 0;
    if (p.edits_begin < 0 || p.edits_begin > p.edits_end ||
        p.edits_end > static_cast<int64_t>(edits.size())) {
      return absl::InvalidArgumentError(absl::StrCat("cuda backend SampleRows: edits [",
                                                     p.edits_begin, ", ", p.edits_end,
                                                     ") outside the ", edits.size(), " given"));
    }
  }
  if (any_logprobs && host_logprobs == nullptr) {
    return absl::InvalidArgumentError("cuda backend SampleRows: logprobs asked, nowhere to write");
  }
  // [params][logprobs][edits][masks][tokens]: the parameters' 8-byte alignment holds for
  // what follows (the rest is 4-byte aligned). The logprobs' room is there whether asked
  // or not, so the profiling pass sizes the workspace for them too; edits and masks grow
  // it only for rows that have them.
  const size_t params_bytes = sizeof(SampleRowParams) * static_cast<size_t>(rows);
  const size_t logprob_bytes = sizeof(RowLogprobs) * static_cast<size_t>(rows);
  const size_t edit_bytes = sizeof(LogitEdit) * edits.size();
  const size_t mask_bytes = sizeof(uint32_t) * masks.size();
  const size_t token_bytes = sizeof(int32_t) * static_cast<size_t>(rows);
  char* at = static_cast<char*>(Workspace(
      sampling_ws_, params_bytes + logprob_bytes + edit_bytes + mask_bytes + token_bytes));
  if (at == nullptr) return TakeError();
  auto take = [&at](size_t bytes) { return std::exchange(at, at + bytes); };
  auto* dev_params = reinterpret_cast<kernels::DeviceSamplingParams*>(take(params_bytes));
  auto* dev_logprobs = reinterpret_cast<kernels::DeviceRowLogprobs*>(take(logprob_bytes));
  auto* dev_edits = reinterpret_cast<kernels::DeviceLogitEdit*>(take(edit_bytes));
  auto* dev_masks = reinterpret_cast<uint32_t*>(take(mask_bytes));
  auto* dev_tokens = reinterpret_cast<int32_t*>(take(token_bytes));
  if (!any_logprobs) dev_logprobs = nullptr;
  if (edits.empty()) dev_edits = nullptr;
  if (masks.empty()) dev_masks = nullptr;
  cudaStream_t s = BeginOp();
  Record(ORCA_CUDA_STATUS(uploader_.Upload(dev_params, params.data(), params_bytes, s)));
  if (dev_masks != nullptr) {
    Record(ORCA_CUDA_STATUS(uploader_.Upload(dev_masks, masks.data(), mask_bytes, s)));
  }
  if (dev_edits != nullptr) {
    Record(ORCA_CUDA_STATUS(uploader_.Upload(dev_edits, edits.data(), edit_bytes, s)));
  }
  Launched(kernels::LaunchSample(logits.f32(), logits.ld(), rows, logits.cols, dev_params,
                                 dev_masks, dev_edits, dev_tokens, dev_logprobs, s),
           "LaunchSample");
  Record(ORCA_CUDA_STATUS(
      cudaMemcpyAsync(host_tokens, dev_tokens, sizeof(int32_t) * rows, cudaMemcpyDeviceToHost, s)));
  if (any_logprobs) {
    Record(ORCA_CUDA_STATUS(
        cudaMemcpyAsync(host_logprobs, dev_logprobs, logprob_bytes, cudaMemcpyDeviceToHost, s)));
  }
  Record(ORCA_CUDA_STATUS(cudaStreamSynchronize(s)));
  return TakeError();
}

void CudaBackendImpl::Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) {
  const int64_t m = x.rows, k = x.cols, n = w.rows;
  // x and out: F32, or w's 16-bit type.
  auto of_weights = [&w](const Tensor& t) { return t.dtype == DType::kF32 || t.dtype == w.dtype; };
  if (!Expect(of_weights(x) && of_weights(out) && w.cols == k && out.rows == m && out.cols == n &&
                  IsContiguous(w),
              "Linear",
              "expects x [M, K] and out [M, N] F32 or of w's type, w contiguous [N, K]") ||
      !Expect(
          m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && x.ld() <= INT_MAX && out.ld() <= INT_MAX,
          "Linear", "dimensions exceed int32") ||
      !Expect(bias == nullptr || (bias->dtype == DType::kF32 && bias->rows * bias->cols == n),
              "Linear", "bias must be F32 [1, N]")) {
    return;
  }
  if (m == 0) return;
  cudaStream_t s = BeginOp();
  const void* b = x.data;
  int64_t ldb = x.ld();
  if (w.dtype != DType::kF32 && x.dtype == DType::kF32) {
    // cuBLAS multiplies 16-bit by 16-bit only: round the activations to the weight type
    // (F32 accumulation keeps the error at the input rounding, ~2^-9 for BF16).
    void* converted = Workspace(conversion_, static_cast<size_t>(m * k) * DTypeSize(w.dtype));
    if (converted == nullptr) return;
    Launched(kernels::LaunchConvertF32(x.f32(), x.ld(), m, k, ToScalarType(w.dtype), converted, s),
             "LaunchConvertF32");
    b = converted;
    ldb = k;
  }
  // A bias joins a 16-bit output before its one rounding: the GEMM writes float32 to a
  // workspace and the bias add rounds the sum into out.
  const bool bias_first = bias != nullptr && out.dtype != DType::kF32;
  void* c = out.data;
  cudaDataType c_type = CudaDataType(out.dtype);
  int64_t ldc = out.ld();
  if (bias_first) {
    c = Workspace(biased_, static_cast<size_t>(m * n) * sizeof(float));
    if (c == nullptr) return;
    c_type = CUDA_R_32F;
    ldc = n;
  }
  // Row-major out[M, N] = x[M, K] W[N, K]^T is column-major out^T[N, M] = W^T x^T.
  const float alpha = 1.0f, beta = 0.0f;
  const cublasComputeType_t compute =
      (w.dtype == DType::kF32 && allow_tf32_) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  Record(ORCA_CUDA_STATUS(
      cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                   static_cast<int>(k), &alpha, w.data, CudaDataType(w.dtype), static_cast<int>(k),
                   b, CudaDataType(w.dtype), static_cast<int>(ldb), &beta, c, c_type,
                   static_cast<int>(ldc), compute, CUBLAS_GEMM_DEFAULT)));
  if (bias_first) {
    Launched(kernels::LaunchAddBiasInto(static_cast<const float*>(c), ldc, bias->f32(), m, n,
                                        out.data, out.ld(), ToScalarType(out.dtype), s),
             "LaunchAddBiasInto");
  } else if (bias != nullptr) {
    Launched(kernels::LaunchAddBias(out.f32(), out.ld(), bias->f32(), m, n, s), "LaunchAddBias");
  }
}

void CudaBackendImpl::Attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                const AttentionBatch& batch, const KvCacheShape& shape,
                                int32_t num_heads, float scale, Tensor out) {
  const int64_t width = int64_t{num_heads} * shape.head_dim;
  if (!Expect(q.cols == width && out.cols == width && out.rows == q.rows &&
                  k_cache.cols == int64_t{shape.num_kv_heads} * shape.head_dim &&
                  k_cache.dtype == shape.dtype && v_cache.dtype == shape.dtype &&
                  IsContiguous(k_cache) && IsContiguous(v_cache),
              "Attention",
              "q/out must be [T, heads * head_dim] and the caches contiguous, of shape.dtype")) {
    return;
  }
  if (batch.num_seqs == 0 || q.rows == 0) return;
  cudaStream_t s = BeginOp();
  // Room for every split-KV split a batch of this many sequences and up to this many
  // tokens can get (reached in the profiling pass, so serving allocates nothing). The
  // partials are an optimisation: a device with no room for them runs without.
  if (attention_splits_) {
    const size_t with_splits = std::min(
        kernels::PagedAttentionFixedWorkspaceBytes(batch.num_seqs, shape.head_dim, num_sms_),
        kernels::PagedAttentionWorkspaceBytes(batch.num_seqs, q.rows, num_heads, shape.head_dim,
                                              kernels::kPagedAttentionMaxSplits));
    // (While capturing, the eager run before has grown it; if not, Workspace below
    // fails the capture when even one split has no room.)
    if (!capturing_ && !Grow(attention_ws_, with_splits).ok()) attention_splits_ = false;
  }
  void* ws = Workspace(attention_ws_, kernels::PagedAttentionWorkspaceBytes(
                                          batch.num_seqs, q.rows, num_heads, shape.head_dim, 1));
  if (ws == nullptr) return;
  kernels::PagedAttentionParams p;
  p.q = q.data;
  p.q_ld = q.ld();
  p.q_type = ToScalarType(q.dtype);
  p.num_tokens = q.rows;
  p.k_cache = k_cache.data;
  p.v_cache = v_cache.data;
  p.kv_type = ToScalarType(shape.dtype);
  p.query_start = batch.query_start;
  p.kv_len = batch.kv_len;
  p.block_tables = batch.block_tables;
  p.num_seqs = batch.num_seqs;
  p.max_blocks_per_seq = batch.max_blocks_per_seq;
  p.block_size = shape.block_size;
  p.num_heads = num_heads;
  p.num_kv_heads = shape.num_kv_heads;
  p.head_dim = shape.head_dim;
  p.scale = scale;
  p.out = out.data;
  p.out_ld = out.ld();
  p.out_type = ToScalarType(out.dtype);
  p.max_query_len = batch.max_query_len;
  p.max_kv_len = batch.max_kv_len;
  p.num_sms = num_sms_;
  Launched(kernels::LaunchPagedAttention(p, ws, attention_ws_->size(), s), "LaunchPagedAttention");
}

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    const CudaBackendOptions& options) {
  const int count = CudaDeviceCount();
  if (options.device < 0 || options.device >= count) {
    return absl::FailedPreconditionError(absl::StrCat(
        "CUDA device ", options.device, " not available (", count, " usable device(s))"));
  }
  ORCA_ASSIGN_OR_RETURN(std::shared_ptr<DeviceMemory> memory,
                        DeviceMemory::Create(options.device, options.memory_fraction));
  cublasHandle_t handle = nullptr;
  ORCA_CUDA_RETURN_IF_ERROR(cublasCreate(&handle));
  absl::Status s = ORCA_CUDA_STATUS(cublasSetStream(handle, memory->stream()));
  if (!s.ok()) {
    (void)cublasDestroy(handle);
    return s;
  }
  return std::unique_ptr<CudaBackend>(
      new CudaBackendImpl(std::move(memory), handle, options.allow_tf32));
}

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& options) {
  ORCA_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> backend, CudaBackend::Create(options));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace orca
