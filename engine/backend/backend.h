// Backend: the narrow device interface the model runner is written against
// (allocate, copy, the iteration's operations, synchronise, memory info), in the way
// ggml-backend separates buffers, streams and devices.
//
// Conventions for every operation:
//   - Tensors are row-major 2-D views into backend memory (`Tensor`); 1-D vectors are
//     [1, n]. Weights may be F32, F16 or BF16 (a backend accepts the dtypes it reports
//     in SupportsWeightDType) and math accumulates in F32. Activations are F32, or the
//     16-bit type of the weights they meet where the backend reports it in
//     SupportsActivationDType: then the GEMM inputs and outputs inside a layer (norm
//     outputs, Linear's x and out, Rope, KvWrite's k and v, Attention's q and out, the
//     activation functions) may be 16-bit, as each operation's comment says; the
//     residual stream (Add, the norms' x, residual and delta), Embedding, GatherRows,
//     logits and norm weights stay F32. 16-bit results are rounded to nearest even.
//   - Index arrays (token ids, positions, slot mappings, block tables) are int32 in
//     backend memory, uploaded with CopyToDevice.
//   - Operations may run asynchronously in issue order on the backend's single stream;
//     CopyToHost and Synchronize wait for all earlier work. Outputs may alias inputs
//     only where a comment says so.
// A Backend instance is used by one thread at a time (one per rank).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/common/dtype.h"

namespace orca {

// Memory owned by a backend; freed on destruction.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

// How a tensor's elements lie in memory. kRowMajor: as Tensor says. kPackedPanels: a
// linear weight as the CPU backend stores float32 ones (Backend::UploadLinearWeight,
// engine/backend/cpu/packed_gemm.h); only that backend's Linear reads it, and no views
// (Rows, Cols) of it are taken.
enum class TensorLayout : uint8_t { kRowMajor, kPackedPanels };

// A 2-D view, row-major unless `layout` says otherwise. `stride` is the distance between
// rows in elements (0 means `cols`, i.e. contiguous); only the operations that say so
// accept strided views.
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
  TensorLayout layout = TensorLayout::kRowMajor;

  int64_t ld() const { return stride ? stride : cols; }
  size_t nbytes() const { return static_cast<size_t>(rows * cols) * DTypeSize(dtype); }
  float* f32() const { return static_cast<float*>(data); }
  // Returns rows [begin, begin + count) as a view.
  Tensor Rows(int64_t begin, int64_t count) const {
    Tensor view = *this;
    view.data = static_cast<char*>(data) + begin * ld() * DTypeSize(dtype);
    view.rows = count;
    return view;
  }
  // Returns columns [begin, begin + count) as a strided view.
  Tensor Cols(int64_t begin, int64_t count) const {
    Tensor view = *this;
    view.data = static_cast<char*>(data) + begin * DTypeSize(dtype);
    view.cols = count;
    view.stride = ld();
    return view;
  }
};

struct MemoryInfo {
  size_t total_bytes = 0;
  size_t free_bytes = 0;
};

// Shape of the paged KV cache of one layer. K and V each hold num_blocks blocks; a block
// holds [num_kv_heads, block_size, head_dim] elements of `dtype`, head-major, so that one
// head's keys (or values) of a block are contiguous: attention over a sequence reads
// block_size x head_dim elements at a time instead of one head_dim run per
// num_kv_heads x head_dim row. Token slot s = block_id * block_size + offset_in_block.
// Tensors holding a cache are [num_blocks * block_size, num_kv_heads * head_dim] of
// `dtype` (the same bytes; the rows are not token rows).
struct KvCacheShape {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  DType dtype = DType::kF32;

  // Element offset of (token slot `slot`, kv head `head`, element 0) in a cache tensor.
  int64_t Offset(int64_t slot, int32_t head) const {
    const int64_t block = slot / block_size, in_block = slot % block_size;
    return ((block * num_kv_heads + head) * block_size + in_block) * head_dim;
  }
};

// Per-iteration description of attention over a flat token batch (selective batching).
// Sequence i owns query rows [query_start[i], query_start[i+1]) of the flat batch; those
// rows are its newest tokens at positions kv_len[i] - q_len .. kv_len[i] - 1, and it
// attends causally over its kv_len[i] cached tokens, found through
// block_tables[i * max_blocks_per_seq + j]. All arrays live in backend memory.
struct AttentionBatch {
  int32_t num_seqs = 0;
  const int32_t* query_start = nullptr;   // [num_seqs + 1]
  const int32_t* kv_len = nullptr;        // [num_seqs]
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int32_t max_blocks_per_seq = 0;
  int32_t max_query_len = 0;  // host-side hints for launch sizes
  int32_t max_kv_len = 0;
  // The model's GEMMs multiply bfloat16 weights: a backend may round the queries, keys,
  // values and softmax probabilities to bfloat16 too (float32 sums) where that is
  // faster (the CPU's AMX tiles); false keeps attention's products in float32.
  bool bf16_products = false;
};

enum class Activation { kSilu, kGeluTanh, kGeluErf };

// A recording of backend operations (Backend::EndCapture), run again by Backend::Replay.
class BackendGraph {
 public:
  virtual ~BackendGraph() = default;
};

// One row's draw for Backend::SampleRows (the layout of kernels::DeviceSamplingParams).
struct SampleRowParams {
  float temperature = 0.0f;  // below 1e-5: greedy
  int32_t top_k = 0;         // 0: no top-k
  float top_p = 1.0f;
  float min_p = 0.0f;
  double uniform = 0.0;             // the draw in [0, 1): SeededUniform(seed, output_index)
  int32_t mask_row = -1;            // the row of SampleRows' masks that allows tokens; -1: all
  int32_t logprobs = -1;            // -1: none; 0: the drawn token's; N: and the top N's
  float repetition_penalty = 1.0f;  // for the edits that ask for it
  int32_t edits_begin = 0;          // the row's logit edits: SampleRows' edits[begin, end)
  int32_t edits_end = 0;
};

// One token's logit edit (logit bias and penalties, as SampleToken's ApplyPenalties
// makes them on the sanitised logit x): x += bias (kEditBias); x -= subtract
// (kEditSubtract); then x = x > 0 ? x / r : x * r (kEditRepeat, r the row's
// repetition_penalty).
struct LogitEdit {
  static constexpr uint32_t kBias = 1, kSubtract = 2, kRepeat = 4;
  int32_t token = 0;
  uint32_t ops = 0;
  float bias = 0.0f;
  float subtract = 0.0f;
};

// What Backend::SampleRows takes (SamplesOnBackend, engine/runner/sampler.h).
struct SamplingCaps {
  bool supported = false;  // SampleRows is available
  // The largest top_k (top-p or min-p without a top-k count as the vocabulary's size;
  // INT32_MAX: any truncation).
  int32_t max_top_k = 0;
  int32_t max_logprobs = -1;  // the most top logprobs a row may ask for (-1: no logprobs)
  bool logit_edits = false;   // logit bias and penalties, as LogitEdits
};

// What SampleRows returns for a row that asks for logprobs (SampleRowParams::logprobs):
// the drawn token's logprob and the top `logprobs` tokens with theirs, larger logit
// then smaller id first, of the logits as SampleToken reports them.
constexpr int32_t kMaxBackendLogprobs = 20;
struct RowLogprobs {
  float logprob = 0.0f;
  int32_t top_ids[kMaxBackendLogprobs] = {};
  float top_logprobs[kMaxBackendLogprobs] = {};
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual bool SupportsWeightDType(DType dtype) const = 0;
  // Whether KvWrite and Attention take a cache of `dtype` (KvCacheShape::dtype).
  virtual bool SupportsKvCacheDType(DType dtype) const = 0;
  // Whether the operations that say so take activations of `dtype` (F32 always).
  virtual bool SupportsActivationDType(DType dtype) const { return dtype == DType::kF32; }

  // Allocates `bytes` of backend memory. Fails with ResourceExhausted.
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) = 0;
  virtual absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) = 0;
  // As CopyToDevice, but the host does not wait for the copy: it is ordered before the
  // work issued after it, `src` may be reused as soon as this returns, and an error of
  // the copy itself may come from a later call (as a kernel's does). Not while a graph
  // is captured. The default is CopyToDevice.
  virtual absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes) {
    return CopyToDevice(dst, src, bytes);
  }
  virtual absl::Status CopyToHost(void* dst, const void* src, size_t bytes) = 0;
  // Stores a linear layer's weight for Linear: `host` is [rows, cols] row-major of
  // `dtype`; `storage` receives the memory. The backend may lay it out as its Linear
  // reads fastest (TensorLayout); the tensor is then for Linear only. The default
  // copies the rows as they are.
  virtual absl::StatusOr<Tensor> UploadLinearWeight(const void* host, DType dtype, int64_t rows,
                                                    int64_t cols,
                                                    std::unique_ptr<DeviceBuffer>* storage) {
    const size_t bytes = static_cast<size_t>(rows * cols) * DTypeSize(dtype);
    auto buffer = Allocate(bytes);
    if (!buffer.ok()) return buffer.status();
    if (absl::Status s = CopyToDevice((*buffer)->data(), host, bytes); !s.ok()) return s;
    *storage = *std::move(buffer);
    return Tensor{(*storage)->data(), dtype, rows, cols};
  }
  // Waits until all issued work is complete; reports asynchronous errors.
  virtual absl::Status Synchronize() = 0;
  virtual MemoryInfo GetMemoryInfo() const = 0;

  // out[i] = table[ids[i]] (converted to F32). With `accumulate`, out[i] += table[ids[i]].
  // `table` is row-major or as UploadLinearWeight stored it (a tied LM head).
  virtual void Embedding(const int32_t* ids, int64_t n, const Tensor& table, Tensor out,
                         bool accumulate) = 0;
  // out = x * W^T (+ bias): x [M, K], w [N, K], bias [1, N] F32 or null, out [M, N].
  // x is F32, or of w's 16-bit type; out is F32, or of w's 16-bit type. x and out may
  // be strided.
  virtual void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor out) = 0;
  // x += y, same shape. (Residual add.)
  virtual void Add(Tensor x, const Tensor& y) = 0;
  // out = RMSNorm(x) * weight. x F32; out F32 or 16-bit (then rounded); out may alias
  // x. The same for every norm below.
  virtual void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor out) = 0;
  // out = LayerNorm(x) * weight + bias. out may alias x.
  virtual void LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                         Tensor out) = 0;
  // The residual add and the norm after it in one pass: residual += delta, then
  // out = RMSNorm(residual) * weight (LayerNorm: + bias). out may alias delta (not
  // residual). The defaults run Add and the norm; a backend may fuse them (the same
  // float32 arithmetic, so the same results).
  virtual void AddRmsNorm(Tensor residual, const Tensor& delta, const Tensor& weight, float eps,
                          Tensor out) {
    Add(residual, delta);
    RmsNorm(residual, weight, eps, out);
  }
  virtual void AddLayerNorm(Tensor residual, const Tensor& delta, const Tensor& weight,
                            const Tensor& bias, float eps, Tensor out) {
    Add(residual, delta);
    LayerNorm(residual, weight, bias, eps, out);
  }
  // Rotate-half RoPE in place on the first `rotary_heads` heads of x [T, heads*head_dim]
  // (Hugging Face layout: dims i and i + head_dim/2 form a pair), token t at positions[t].
  // x may be strided and 16-bit.
  virtual void Rope(Tensor x, const int32_t* positions, int32_t num_heads, int32_t head_dim,
                    double theta) = 0;
  // out[:, j] = act(gate_up[:, j]) * gate_up[:, I + j] for j < I (gate_up is [T, 2I]);
  // gate_up and out of one dtype, 16-bit allowed (as for ActivationInPlace).
  virtual void GatedActivation(const Tensor& gate_up, Activation act, Tensor out) = 0;
  // x = act(x) in place.
  virtual void ActivationInPlace(Tensor x, Activation act) = 0;
  // Writes k and v rows [T, kv_heads*head_dim] (F32 or 16-bit) into token slots slot_mapping[t] of
  // the caches (laid out and typed as `shape` says, converted with round to nearest even;
  // F16 saturates at +-65504). k and v may be strided.
  virtual void KvWrite(const Tensor& k, const Tensor& v, const int32_t* slot_mapping,
                       const KvCacheShape& shape, Tensor k_cache, Tensor v_cache) = 0;
  // Paged causal attention over the flat batch (see AttentionBatch); q [T, H*D],
  // out [T, H*D]; GQA: query head h reads kv head h / (H / kv_heads). q may be strided;
  // q and out may be 16-bit.
  virtual void Attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                         const AttentionBatch& batch, const KvCacheShape& shape, int32_t num_heads,
                         float scale, Tensor out) = 0;
  // out[i] = x[rows[i]].
  virtual void GatherRows(const Tensor& x, const int32_t* rows, int64_t n, Tensor out) = 0;

  // Sampling where the logits are (engine/runner/sampler.h, SamplesOnBackend).
  virtual SamplingCaps Sampling() const { return SamplingCaps{}; }
  // Draws one token per row of `logits` (F32 [rows, vocab], rows may be strided) with
  // `params[row]`, exactly as SampleToken does for a row that Sampling() admits
  // (SamplesOnBackend): a row with mask_row m allows only the tokens whose bits are set
  // in `masks` row m (ceil(vocab / 32) words a row; bit t % 32 of word t / 32); a row's
  // `edits` (its logit bias and penalties) change its logits in place first. Writes the
  // ids to `host_tokens` and, for the rows that ask for logprobs, those to
  // `host_logprobs` (`rows` entries; may be null when none asks), and waits for them.
  virtual absl::Status SampleRows(const Tensor& logits, absl::Span<const SampleRowParams> params,
                                  absl::Span<const uint32_t> masks,
                                  absl::Span<const LogitEdit> edits, int32_t* host_tokens,
                                  RowLogprobs* host_logprobs = nullptr) {
    (void)logits, (void)params, (void)masks, (void)edits, (void)host_tokens, (void)host_logprobs;
    return absl::UnimplementedError(name() + " does not sample");
  }

  // Graphs (CUDA graphs): between BeginCapture and EndCapture the operations are
  // recorded, not run; Replay runs the recording again, on what the buffers it names
  // hold by then, with one launch. Nothing in a capture may synchronise, copy to or from
  // the host, or allocate: such a call fails the capture (EndCapture's error). The
  // buffers a graph names must stay where they are while it is replayed: the backend's
  // own workspaces move only when workspace_generation() changes.
  virtual bool SupportsGraphs() const { return false; }
  virtual absl::Status BeginCapture() { return absl::UnimplementedError(name() + ": no graphs"); }
  virtual absl::StatusOr<std::unique_ptr<BackendGraph>> EndCapture() {
    return absl::UnimplementedError(name() + ": no graphs");
  }
  // Issues the graph's work (errors surface at the next Synchronize or copy).
  virtual absl::Status Replay(BackendGraph& graph) {
    (void)graph;
    return absl::UnimplementedError(name() + ": no graphs");
  }
  virtual int64_t workspace_generation() const { return 0; }
};

// Creates the CPU backend (OpenBLAS GEMMs, a thread pool of `num_threads` for the rest;
// 0 = the process's CPU limit, AvailableCpus()). It also sets OpenBLAS's thread count
// (process-wide).
std::unique_ptr<Backend> CreateCpuBackend(int num_threads = 0);

}  // namespace orca
