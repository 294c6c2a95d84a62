// ModelRunner: the selective-batching forward pass (DESIGN.md section 3). One call runs
// one iteration over a flat batch [num_tokens, hidden] that mixes prefill chunks and
// decode tokens of many sequences at different positions: embedding, norms, QKV/out
// projections, MLP and LM head run on the flat batch; attention runs per sequence over
// its own paged KV history. Logits are computed only for the rows that sample.
//
// The runner owns the weights, the KV cache memory (one K and V tensor per layer) and a
// workspace; the block ids in a plan index that cache (see KvBlockPool). Not
// thread-safe: one iteration at a time.
//
// As one rank of a serving group (ModelRunnerOptions::shard, DESIGN.md section 4) it
// holds its stage's layers and tensor-parallel slices, and every rank of the group runs
// every plan in the same order: stage 0 embeds the tokens, later stages receive the
// activations from the previous stage, and all but the last send theirs on; the
// tensor-parallel ranks all-reduce after the attention-out and MLP-down GEMMs. Only
// the rank that samples (the last stage's tp rank 0) returns logits and tokens; the
// others return empty results.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/comm/communicator.h"
#include "engine/common/thread_pool.h"
#include "engine/model/model_config.h"
#include "engine/runner/iteration.h"
#include "engine/runner/model_shard.h"
#include "engine/runner/model_weights.h"

namespace orca {

struct ModelRunnerOptions {
  int32_t block_size = 16;
  // KV blocks to allocate (required: KvCacheBlocks sizes them, kv_cache_sizing.h).
  int32_t num_kv_blocks = 0;
  WeightDType dtype = WeightDType::kAuto;
  // Element type of the KV cache (ResolveKvCacheDType picks it from the configuration);
  // the backend must support it (Backend::SupportsKvCacheDType).
  DType kv_cache_dtype = DType::kF32;
  ModelShard shard;  // default: the whole model on one rank
  // The group's data plane, used only from the thread that calls Forward/Execute and
  // outliving the runner: `tp_comm` joins the `tensor` ranks of this stage (rank =
  // tp_rank), required when tensor > 1; `pp_comm` joins the whole group (rank =
  // shard.rank()) for the activations between stages, required when pipeline > 1.
  Communicator* tp_comm = nullptr;
  Communicator* pp_comm = nullptr;
  // Threads that sample an iteration's rows in parallel (the calling thread is one of
  // them; 0 = the process's CPU limit). Sampling runs after the forward pass, so on the
  // CPU it shares the backend's cores without contending for them.
  int32_t sampler_threads = 1;
  // Draw the tokens where the logits are when the backend can (Backend::SampleRows,
  // SamplesOnBackend): only token ids cross to the host. false: every row's logits come
  // to the host and SampleToken draws them (the same tokens; benchmarks compare).
  bool sample_on_backend = true;
  // Replay decode-only iterations from graphs recorded per batch-size bucket where the
  // backend has them (Backend::SupportsGraphs: CUDA graphs) and, in a group, the
  // communicators' operations can be recorded with them (Communicator::SupportsCapture:
  // NCCL). false: every iteration issues its operations one by one.
  bool graphs = true;
  // Activations in the 16-bit type of the layers' weights where the backend computes in
  // it (Backend::SupportsActivationDType: CUDA) and every layer's linear weights share
  // that type: norm outputs, GEMM inputs and outputs, attention's q and out. The
  // residual stream, the block outputs added to it (and all-reduced) and the logits stay
  // float32. false: float32 activations (16-bit weights then meet inputs rounded to
  // their type before each GEMM).
  bool sixteen_bit_activations = true;
};

// Logits of the sampled rows of one iteration, on the host: row i belongs to the i-th
// sequence of the plan with sample = true.
struct IterationLogits {
  int32_t vocab_size = 0;
  std::vector<float> values;  // [num_sampled, vocab_size]
  float* row(size_t i) { return values.data() + i * static_cast<size_t>(vocab_size); }
};

class ModelRunner {
 public:
  // Loads the checkpoint in `model_dir` onto `backend` (which must outlive the runner)
  // and allocates the KV cache. InvalidArgument when options.num_kv_blocks is not set.
  static absl::StatusOr<std::unique_ptr<ModelRunner>> Create(const std::string& model_dir,
                                                             Backend* backend,
                                                             const ModelRunnerOptions& options);

  // KV cache bytes one block of `block_size` tokens of `kv_dtype` takes on a rank
  // holding `shard`.
  static size_t KvBytesPerBlock(const ModelConfig& config, const ModelShard& shard,
                                int32_t block_size, DType kv_dtype);

  // KV bytes of a cache holding `num_blocks` blocks on this runner's shard.
  size_t KvBytesFor(int32_t num_blocks) const {
    return KvBytesPerBlock(config_, shard_, kv_shape_.block_size, kv_shape_.dtype) *
           static_cast<size_t>(num_blocks);
  }

  // Replaces the KV cache with one of `num_blocks` blocks (the old one is freed first;
  // its contents are lost). On failure the runner has no cache and must be resized
  // again before Forward.
  absl::Status ResizeKvCache(int32_t num_blocks);

  // Runs one forward pass of the largest iteration the scheduler can plan: `max_tokens`
  // tokens over min(`max_seqs`, `max_tokens`) sequences, each sampling, from position 0,
  // so that every workspace reaches its peak size (and is kept: later iterations
  // allocate nothing). The KV cache must hold ceil(max_tokens / block) +
  // min(max_seqs, max_tokens) blocks; what it writes there is garbage. For sizing the
  // KV cache from what memory is left (kv_cache_sizing.h).
  absl::Status RunProfilingPass(int64_t max_tokens, int32_t max_seqs);

  const ModelConfig& config() const { return config_; }
  const ModelShard& shard() const { return shard_; }
  // Replaces the communicators (a serving group re-initialised with the same layout);
  // they must fit the shard as in Create. Drops the graphs recorded with the old ones.
  absl::Status SetCommunicators(Communicator* tp_comm, Communicator* pp_comm);
  // Drops the communicators and the graphs that recorded their operations, before the
  // communicators are destroyed (a group's session ended). Execute fails with
  // FailedPrecondition until SetCommunicators.
  void ReleaseCommunicators();
  int32_t num_kv_blocks() const { return kv_shape_.num_blocks; }
  int32_t block_size() const { return kv_shape_.block_size; }
  DType kv_cache_dtype() const { return kv_shape_.dtype; }
  // The type of the activations inside a layer (ModelRunnerOptions::sixteen_bit_activations).
  DType activation_dtype() const { return act_dtype_; }
  // The element type of the layers' linear weights (the first layer's QKV; F32 for a
  // shard without layers).
  DType linear_weight_dtype() const;
  size_t weight_bytes() const { return weights_->bytes; }
  size_t kv_cache_bytes() const;

  // Runs the forward pass of `plan` and returns the logits of its sampled rows (with
  // `all_rows`, of every token row of the flat batch, in plan order: for prompt
  // logprobs and tests). Fails with InvalidArgument (and computes nothing) on a
  // malformed plan: token ids out of the vocabulary, positions past the context, block
  // tables too short or out of range.
  absl::StatusOr<IterationLogits> Forward(const IterationPlan& plan, bool all_rows = false);

  // Runs Forward and samples every sequence with sample = true; scores the prompt
  // tokens of every sequence with prompt_logprob_targets into the result's
  // prompt_logprobs (the sampling rank; others return none). Deferred token masks
  // (iteration.h) are made once the forward pass is started, before the draw; a row
  // whose mask allows nothing draws token -1.
  absl::StatusOr<IterationResult> Execute(const IterationPlan& plan);

  // With tracing on, Execute times its steps into IterationResult::spans: "recv" and
  // "send" (activations between stages), "layers" (this rank's layers, with one nested
  // "all-reduce" per tensor-parallel reduction), "lm-head", "masks" (deferred token masks
  // made) and "sample".
  void set_tracing(bool on) { tracing_ = on; }

  // Rows Execute has drawn with Backend::SampleRows so far (the rest went to the host).
  int64_t rows_sampled_on_backend() const { return rows_sampled_on_backend_; }
  // Iterations run by replaying a recorded graph so far.
  int64_t graph_replays() const { return graph_replays_; }

 private:
  ModelRunner() = default;
  // Rows of prompt logprobs go through the LM head this many at a time.
  static constexpr int64_t kPromptRowsPerPass = 128;

  absl::Status ValidatePlan(const IterationPlan& plan) const;
  // Forward, and with `prompt`, scores the plan's prompt logprob rows into it. Without
  // `logits_to_host` the sampled rows' logits stay in logits_ (rows 0..) and the result
  // has no values.
  absl::StatusOr<IterationLogits> Forward(const IterationPlan& plan, bool all_rows,
                                          std::vector<SequencePromptLogprobs>* prompt,
                                          bool logits_to_host = true);
  // Final norm and LM head of `num_rows` rows of `x` (device row indices `rows_dev`,
  // at most the rows workspace) into logits_, copied to `host_logits` unless null.
  absl::Status LmHead(const Tensor& x, const int32_t* rows_dev, int64_t num_rows,
                      float* host_logits);
  // Draws the sampled rows whose logits Forward left in logits_: those that
  // `on_backend` marks with Backend::SampleRows, the others on the host, except those
  // marked `no_token` (left for the caller).
  absl::Status SampleFromDeviceLogits(absl::Span<const ScheduledSequence* const> sampled,
                                      const std::vector<bool>& on_backend,
                                      const std::vector<bool>& no_token,
                                      std::vector<SampledToken>* tokens);
  // Points every row of `sampled` that carries a deferred mask at a copy in `made` with
  // the mask made (on the sampler pool). InvalidArgument: a mask wider than the
  // vocabulary.
  absl::Status MakeDeferredMasks(std::vector<const ScheduledSequence*>& sampled,
                                 std::vector<ScheduledSequence>& made);
  // Scores the plan's prompt logprob rows (device row indices `rows_dev`, in plan order)
  // into `out`, one SequencePromptLogprobs per sequence that asked.
  absl::Status ScorePrompts(const IterationPlan& plan, const Tensor& x, const int32_t* rows_dev,
                            int64_t num_rows, std::vector<SequencePromptLogprobs>* out);
  // Grows the workspaces to hold `num_tokens` activation rows, `sampled_rows` rows of
  // final hidden states and logits, and `index_ints` index entries (kept at their
  // largest size).
  absl::Status EnsureWorkspace(int64_t num_tokens, int64_t sampled_rows, int64_t index_ints);
  // Decode-only plans of up to kGraphBuckets' last size run from graphs, one per shape:
  // the smallest bucket that holds the plan's sequences, and the smallest power of two
  // of keys (from 64, at most the model's context) that holds its longest context.
  static constexpr int32_t kGraphBuckets[] = {1,  2,  4,  8,   16,  24,  32,  48,
                                              64, 80, 96, 128, 160, 192, 224, 256};
  struct GraphShape {
    int32_t seqs = 0;  // 0: the plan runs op by op
    int32_t kv = 0;
  };
  GraphShape GraphShapeOf(const IterationPlan& plan, bool all_rows) const;
  // Runs `body` (the device work of one decode plan padded to `shape`) from the shape's
  // graph: replays it, or runs `body` op by op and records it.
  absl::Status RunGraph(const GraphShape& shape, const std::function<absl::Status()>& body);
  // After a replay in a group: waits for the graph's communication (AwaitEnqueued).
  absl::Status AwaitCommunicators();
  // Runs fn(0..n-1) on the sampler's threads (or this one).
  void ParallelRows(int64_t n, const std::function<void(int64_t)>& fn);
  // `layer` indexes the shard's layers. Each layer adds the previous one's output (left
  // in delta_) to the residual stream x_ as part of its first norm, and leaves its own
  // in delta_: after the last, Forward adds it. Norms write h_.
  absl::Status RunLayer(int32_t layer, int64_t num_tokens, const int32_t* positions,
                        const int32_t* slot_mapping, const AttentionBatch& attn);

  ModelConfig config_;
  ModelShard shard_;
  Communicator* tp_comm_ = nullptr;
  Communicator* pp_comm_ = nullptr;
  int32_t num_local_layers_ = 0;
  bool tracing_ = false;
  std::vector<TraceSpan>* spans_ = nullptr;  // Execute's result's while it runs and traces
  Backend* backend_ = nullptr;
  std::unique_ptr<ModelWeights> weights_;
  KvCacheShape kv_shape_;
  DType act_dtype_ = DType::kF32;  // h_, qkv_, attn_, mlp_, act_
  std::vector<std::unique_ptr<DeviceBuffer>> kv_storage_;
  std::vector<Tensor> k_cache_, v_cache_;
  std::unique_ptr<ThreadPool> sampler_pool_;  // null: sample on the calling thread
  bool sample_on_backend_ = true;
  int64_t rows_sampled_on_backend_ = 0;
  struct CapturedGraph {
    std::unique_ptr<BackendGraph> graph;
    // (buffers_generation_, the backend's workspace generation) when recorded: a graph
    // names buffers, and is recorded again once any has moved.
    std::pair<int64_t, int64_t> generation;
  };
  bool graphs_requested_ = false;  // options.graphs, and the backend has graphs
  bool graphs_enabled_ = false;    // ... and the communicators can be recorded
  std::map<std::pair<int32_t, int32_t>, CapturedGraph> graphs_;  // by (seqs, kv)
  int64_t buffers_generation_ = 0;  // bumped whenever the runner's own buffers move
  int64_t graph_replays_ = 0;

  // Workspace, grown on demand.
  int64_t ws_tokens_ = 0;
  int64_t ws_rows_ = 0;
  int64_t ws_ints_ = 0;
  std::unique_ptr<DeviceBuffer> ws_buffer_, rows_buffer_, index_buffer_;
  // F32: x_ (the residual stream), delta_ (a block's output), final_rows_, logits_;
  // act_dtype_: the rest.
  Tensor x_, delta_, h_, qkv_, attn_, mlp_, act_, final_rows_, logits_;
  std::vector<float> prompt_logits_;  // one pass of prompt logprob rows, on the host
};

}  // namespace orca
