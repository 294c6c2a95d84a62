#include "engine/runner/model_runner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/common/cpu_limit.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/model/checkpoint.h"
#include "engine/runner/deferred_masks.h"
#include "engine/runner/prompt_logprobs.h"
#include "engine/runner/sampler.h"

namespace orca {
namespace {

// The 16-bit type every layer's linear weights share when the backend computes
// activations in it (ModelRunnerOptions::sixteen_bit_activations), else F32.
DType SixteenBitActivations(const ModelWeights& weights, const Backend& backend) {
  if (weights.layers.empty()) return DType::kF32;
  const DType type = weights.layers.front().qkv.dtype;
  if (type == DType::kF32 || !backend.SupportsActivationDType(type)) return DType::kF32;
  for (const LayerWeights& L : weights.layers) {
    for (const Tensor* w : {&L.qkv, &L.out_proj, &L.up, &L.down}) {
      if (w->dtype != type || w->layout != TensorLayout::kRowMajor) return DType::kF32;
    }
  }
  return type;
}

Activation ActivationOf(const ModelConfig& c) {
  if (c.hidden_act == "silu") return Activation::kSilu;
  if (c.hidden_act == "gelu") return Activation::kGeluErf;
  return Activation::kGeluTanh;  // gelu_new, gelu_pytorch_tanh
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::Create(
    const std::string& model_dir, Backend* backend, const ModelRunnerOptions& options) {
  auto r = std::unique_ptr<ModelRunner>(new ModelRunner());
  r->backend_ = backend;
  r->shard_ = options.shard;
  ORCA_ASSIGN_OR_RETURN(r->config_, LoadModelConfig(model_dir));
  ORCA_RETURN_IF_ERROR(ValidateModelShard(r->config_, r->shard_));
  r->graphs_requested_ = options.graphs && backend->SupportsGraphs();
  ORCA_RETURN_IF_ERROR(r->SetCommunicators(options.tp_comm, options.pp_comm));
  ORCA_ASSIGN_OR_RETURN(auto ckpt, Checkpoint::Open(model_dir));
  ORCA_ASSIGN_OR_RETURN(r->weights_,
                        ModelWeights::Load(r->config_, r->shard_, *ckpt, *backend, options.dtype));
  r->num_local_layers_ = static_cast<int32_t>(r->weights_->layers.size());
  if (options.sixteen_bit_activations) {
    r->act_dtype_ = SixteenBitActivations(*r->weights_, *backend);
  }

  const ModelConfig& c = r->config_;
  if (options.block_size <= 0 || options.block_size > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("block size ", options.block_size, " out of range [1, 1024]"));
  }
  r->kv_shape_.block_size = options.block_size;
  r->kv_shape_.num_kv_heads = r->shard_.local_kv_heads(c);
  r->kv_shape_.head_dim = c.head_dim;
  if (!backend->SupportsKvCacheDType(options.kv_cache_dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("the ", backend->name(),
                                                   " backend cannot hold a KV cache of ",
                                                   std::string(DTypeName(options.kv_cache_dtype))));
  }
  r->kv_shape_.dtype = options.kv_cache_dtype;
  if (options.num_kv_blocks <= 0 || options.num_kv_blocks > INT32_MAX / options.block_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the number of KV blocks (", options.num_kv_blocks, ") must be set (KvCacheBlocks)"));
  }
  ORCA_RETURN_IF_ERROR(r->ResizeKvCache(options.num_kv_blocks));
  const int32_t threads = options.sampler_threads > 0 ? options.sampler_threads : AvailableCpus();
  if (threads > 1 && r->shard_.samples()) r->sampler_pool_ = std::make_unique<ThreadPool>(threads);
  r->sample_on_backend_ = options.sample_on_backend && backend->Sampling().supported;
  return r;
}

DType ModelRunner::linear_weight_dtype() const {
  return weights_->layers.empty() ? DType::kF32 : weights_->layers.front().qkv.dtype;
}

absl::Status ModelRunner::ResizeKvCache(int32_t num_blocks) {
  if (num_blocks <= 0 || num_blocks > INT32_MAX / kv_shape_.block_size) {
    return absl::InvalidArgumentError(absl::StrCat("KV block count ", num_blocks, " out of range"));
  }
  // The old cache goes first: the new one may need its memory.
  ++buffers_generation_;
  k_cache_.clear();
  v_cache_.clear();
  kv_storage_.clear();
  kv_shape_.num_blocks = num_blocks;
  const int64_t slots = int64_t{num_blocks} * kv_shape_.block_size;
  const int64_t width = int64_t{kv_shape_.num_kv_heads} * config_.head_dim;
  for (int32_t l = 0; l < num_local_layers_; ++l) {
    for (auto* cache : {&k_cache_, &v_cache_}) {
      auto buf =
          backend_->Allocate(static_cast<size_t>(slots * width) * DTypeSize(kv_shape_.dtype));
      if (!buf.ok()) {
        k_cache_.clear();
        v_cache_.clear();
        kv_storage_.clear();
        kv_shape_.num_blocks = 0;
        return buf.status();
      }
      cache->push_back(Tensor{(*buf)->data(), kv_shape_.dtype, slots, width, 0});
      kv_storage_.push_back(std::move(*buf));
    }
  }
  return absl::OkStatus();
}

absl::Status ModelRunner::RunProfilingPass(int64_t max_tokens, int32_t max_seqs) {
  const int32_t bs = kv_shape_.block_size;
  const int64_t seqs = std::max<int64_t>(1, std::min<int64_t>(max_seqs, max_tokens));
  IterationPlan plan;
  int32_t next_block = 0;
  int64_t left = max_tokens;
  for (int64_t i = 0; i < seqs && left > 0; ++i) {
    const int64_t n = std::min<int64_t>(left / (seqs - i), config_.max_position_embeddings);
    ScheduledSequence s;
    s.seq_id = i;
    s.start_pos = 0;
    s.sample = true;
    s.token_ids.assign(static_cast<size_t>(std::max<int64_t>(n, 1)), 0);
    const int32_t blocks = static_cast<int32_t>((s.token_ids.size() + bs - 1) / bs);
    if (next_block + blocks > kv_shape_.num_blocks) {
      return absl::InvalidArgumentError(absl::StrCat("the profiling pass needs more than the ",
                                                     kv_shape_.num_blocks, " KV blocks it has"));
    }
    for (int32_t b = 0; b < blocks; ++b) s.block_table.push_back(next_block++);
    left -= static_cast<int64_t>(s.token_ids.size());
    plan.seqs.push_back(std::move(s));
  }
  // Execute, so that the sampler's workspace reaches its size too.
  ORCA_RETURN_IF_ERROR(Execute(plan).status());
  return backend_->Synchronize();
}

absl::Status ModelRunner::SetCommunicators(Communicator* tp_comm, Communicator* pp_comm) {
  auto fits = [](Communicator* c, int32_t size, int32_t rank) {
    return c != nullptr && c->world_size() == size && c->rank() == rank;
  };
  if (shard_.tensor > 1 && !fits(tp_comm, shard_.tensor, shard_.tp_rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tp rank ", shard_.tp_rank, " of ", shard_.tensor,
                     " needs a tensor-parallel communicator of that rank and size"));
  }
  if (shard_.pipeline > 1 && !fits(pp_comm, shard_.world_size(), shard_.rank())) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", shard_.rank(), " of a group of ", shard_.world_size(),
                     " needs a group communicator of that rank and size"));
  }
  // Graphs recorded the old communicators' operations.
  graphs_.clear();
  tp_comm_ = tp_comm;
  pp_comm_ = pp_comm;
  graphs_enabled_ = graphs_requested_ && (shard_.tensor == 1 || tp_comm_->SupportsCapture()) &&
                    (shard_.pipeline == 1 || pp_comm_->SupportsCapture());
  return absl::OkStatus();
}

void ModelRunner::ReleaseCommunicators() {
  graphs_.clear();
  tp_comm_ = nullptr;
  pp_comm_ = nullptr;
}

absl::Status ModelRunner::AwaitCommunicators() {
  if (shard_.tensor > 1) ORCA_RETURN_IF_ERROR(tp_comm_->AwaitEnqueued());
  if (shard_.pipeline > 1) ORCA_RETURN_IF_ERROR(pp_comm_->AwaitEnqueued());
  return absl::OkStatus();
}

size_t ModelRunner::KvBytesPerBlock(const ModelConfig& c, const ModelShard& shard,
                                    int32_t block_size, DType kv_dtype) {
  const auto [first, end] = shard.Layers(c.num_layers);
  return size_t{2} * static_cast<size_t>(end - first) * block_size * shard.local_kv_heads(c) *
         c.head_dim * DTypeSize(kv_dtype);
}

size_t ModelRunner::kv_cache_bytes() const {
  size_t total = 0;
  for (const auto& b : kv_storage_) total += b->size();
  return total;
}

absl::Status ModelRunner::ValidatePlan(const IterationPlan& plan) const {
  const int32_t bs = kv_shape_.block_size;
  for (const ScheduledSequence& s : plan.seqs) {
    auto bad = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("sequence ", s.seq_id, ": ", what));
    };
    if (s.token_ids.empty()) return bad("no tokens scheduled");
    const int64_t end = int64_t{s.start_pos} + static_cast<int64_t>(s.token_ids.size());
    if (s.start_pos < 0 || end > config_.max_position_embeddings) {
      return bad(absl::StrCat("positions [", s.start_pos, ", ", end, ") exceed the context length ",
                              config_.max_position_embeddings));
    }
    for (int32_t t : s.token_ids) {
      if (t < 0 || t >= config_.vocab_size)
        return bad(absl::StrCat("token id ", t, " outside the vocabulary"));
    }
    if (static_cast<int64_t>(s.block_table.size()) * bs < end) {
      return bad(absl::StrCat("block table of ", s.block_table.size(), " blocks cannot hold ", end,
                              " tokens"));
    }
    for (int32_t b : s.block_table) {
      if (b < 0 || b >= kv_shape_.num_blocks)
        return bad(absl::StrCat("block id ", b, " out of range"));
    }
    // (Shorter: the tokenizer knows fewer ids than the embedding has rows; those beyond
    // are never allowed.)
    if (s.allowed_token_mask.size() > static_cast<size_t>(config_.vocab_size + 31) / 32) {
      return bad(absl::StrCat("a token mask of ", s.allowed_token_mask.size(), " words for ",
                              config_.vocab_size, " tokens"));
    }
    if (!s.prompt_logprob_targets.empty()) {
      const int64_t rows_end =
          int64_t{s.prompt_logprobs_from} + static_cast<int64_t>(s.prompt_logprob_targets.size());
      if (s.prompt_logprobs_from < 0 || rows_end > static_cast<int64_t>(s.token_ids.size())) {
        return bad(absl::StrCat("prompt logprob rows [", s.prompt_logprobs_from, ", ", rows_end,
                                ") outside the ", s.token_ids.size(), " scheduled tokens"));
      }
      for (int32_t t : s.prompt_logprob_targets) {
        if (t < 0 || t >= config_.vocab_size)
          return bad(absl::StrCat("prompt logprob target ", t, " outside the vocabulary"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ModelRunner::EnsureWorkspace(int64_t num_tokens, int64_t sampled_rows,
                                          int64_t index_ints) {
  const ModelConfig& c = config_;
  const int64_t h = c.hidden_size, q = int64_t{shard_.local_heads(c)} * c.head_dim;
  const int64_t qkv = q + 2 * int64_t{shard_.local_kv_heads(c)} * c.head_dim;
  const int64_t inter = shard_.local_intermediate(c);
  const int64_t up = c.family == ModelFamily::kGpt2 ? inter : 2 * inter;
  const int64_t vocab = shard_.samples() ? c.vocab_size : 0;
  // Consecutive [rows, cols] tensors of a buffer (`taker`), each 256-byte aligned (for
  // 16-bit GEMM operands); bytes_of says how much room one takes.
  constexpr size_t kAlign = 256;
  auto bytes_of = [](int64_t rows, int64_t cols, DType dtype) {
    return (static_cast<size_t>(rows * cols) * DTypeSize(dtype) + kAlign - 1) / kAlign * kAlign;
  };
  auto taker = [&bytes_of](void* p, int64_t rows) {
    return [p = static_cast<char*>(p), rows, &bytes_of](int64_t cols, DType dtype) mutable {
      Tensor out{p, dtype, rows, cols, 0};
      p += bytes_of(rows, cols, dtype);
      return out;
    };
  };
  if (num_tokens > ws_tokens_) {
    const int64_t t = std::max<int64_t>(num_tokens, 16);
    const DType a = act_dtype_;
    const size_t bytes = 2 * bytes_of(t, h, DType::kF32) + bytes_of(t, h, a) + bytes_of(t, qkv, a) +
                         bytes_of(t, q, a) + bytes_of(t, up, a) + bytes_of(t, inter, a);
    // The old buffer goes before its successor is allocated (the memory may be needed);
    // until that succeeds the runner has no workspace.
    ++buffers_generation_;
    ws_buffer_.reset();
    ws_tokens_ = 0;
    ORCA_ASSIGN_OR_RETURN(ws_buffer_, backend_->Allocate(bytes));
    auto take = taker(ws_buffer_->data(), t);
    x_ = take(h, DType::kF32);
    delta_ = take(h, DType::kF32);
    h_ = take(h, a);
    qkv_ = take(qkv, a);
    attn_ = take(q, a);
    mlp_ = take(up, a);
    act_ = take(inter, a);
    ws_tokens_ = t;
  }
  // The rows that sample (one per sequence, or every token for all_rows): their final
  // hidden states and logits, sized by them and not by the batch's tokens.
  if (sampled_rows > ws_rows_) {
    const int64_t r = std::max<int64_t>(sampled_rows, 16);
    ++buffers_generation_;
    rows_buffer_.reset();
    ws_rows_ = 0;
    ORCA_ASSIGN_OR_RETURN(rows_buffer_, backend_->Allocate(bytes_of(r, h, DType::kF32) +
                                                           bytes_of(r, vocab, DType::kF32)));
    auto take = taker(rows_buffer_->data(), r);
    final_rows_ = take(h, DType::kF32);
    logits_ = take(vocab, DType::kF32);
    ws_rows_ = r;
  }
  if (index_ints > ws_ints_) {
    const int64_t n = std::max<int64_t>(index_ints * 2, 256);
    ++buffers_generation_;
    index_buffer_.reset();
    ws_ints_ = 0;
    ORCA_ASSIGN_OR_RETURN(index_buffer_,
                          backend_->Allocate(static_cast<size_t>(n) * sizeof(int32_t)));
    ws_ints_ = n;
  }
  return absl::OkStatus();
}

absl::Status ModelRunner::RunLayer(int32_t layer, int64_t n, const int32_t* positions,
                                   const int32_t* slot_mapping, const AttentionBatch& attn) {
  const ModelConfig& c = config_;
  const LayerWeights& L = weights_->layers[layer];
  Backend& b = *backend_;
  const int32_t heads = shard_.local_heads(c), kv_heads = shard_.local_kv_heads(c);
  const int64_t q_width = int64_t{heads} * c.head_dim;
  const int64_t kv_width = int64_t{kv_heads} * c.head_dim;
  // Row-parallel GEMMs leave partial sums on each tensor-parallel rank.
  auto all_reduce = [&](Tensor t) {
    if (shard_.tensor == 1) return absl::OkStatus();
    ScopedSpan span(spans_, "all-reduce");
    return tp_comm_->AllReduceSum(static_cast<float*>(t.data), n * t.cols);
  };
  Tensor x = x_.Rows(0, n), delta = delta_.Rows(0, n), h = h_.Rows(0, n);
  Tensor qkv = qkv_.Rows(0, n), att = attn_.Rows(0, n);
  const bool gpt2 = c.family == ModelFamily::kGpt2;
  // h = norm(x), after the block before has its output (delta) added to the residual
  // stream x (one pass: Backend::AddRmsNorm). The layer's last block leaves its output
  // in delta for the next layer's first norm, or for Forward to add after the last
  // layer.
  auto norm = [&](const Tensor& weight, const Tensor& bias, bool add_delta_first) {
    if (gpt2 && add_delta_first) {
      b.AddLayerNorm(x, delta, weight, bias, c.norm_eps, h);
    } else if (gpt2) {
      b.LayerNorm(x, weight, bias, c.norm_eps, h);
    } else if (add_delta_first) {
      b.AddRmsNorm(x, delta, weight, c.norm_eps, h);
    } else {
      b.RmsNorm(x, weight, c.norm_eps, h);
    }
  };

  // Attention block.
  norm(L.attn_norm, L.attn_norm_bias, /*add_delta_first=*/layer > 0);
  b.Linear(h, L.qkv, L.qkv_bias.data ? &L.qkv_bias : nullptr, qkv);
  Tensor q = qkv.Cols(0, q_width);
  Tensor k = qkv.Cols(q_width, kv_width);
  Tensor v = qkv.Cols(q_width + kv_width, kv_width);
  if (!gpt2) {
    b.Rope(q, positions, heads, c.head_dim, c.rope_theta);
    b.Rope(k, positions, kv_heads, c.head_dim, c.rope_theta);
  }
  b.KvWrite(k, v, slot_mapping, kv_shape_, k_cache_[layer], v_cache_[layer]);
  b.Attention(q, k_cache_[layer], v_cache_[layer], attn, kv_shape_, heads,
              static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim))), att);
  b.Linear(att, L.out_proj, L.out_proj_bias.data ? &L.out_proj_bias : nullptr, delta);
  ORCA_RETURN_IF_ERROR(all_reduce(delta));

  // MLP block.
  norm(L.mlp_norm, L.mlp_norm_bias, /*add_delta_first=*/true);
  if (gpt2) {
    Tensor act = act_.Rows(0, n);
    b.Linear(h, L.up, &L.up_bias, act);
    b.ActivationInPlace(act, ActivationOf(c));
    b.Linear(act, L.down, L.down_bias.data ? &L.down_bias : nullptr, delta);
  } else {
    Tensor gate_up = mlp_.Rows(0, n), act = act_.Rows(0, n);
    b.Linear(h, L.up, L.up_bias.data ? &L.up_bias : nullptr, gate_up);
    b.GatedActivation(gate_up, ActivationOf(c), act);
    b.Linear(act, L.down, L.down_bias.data ? &L.down_bias : nullptr, delta);
  }
  return all_reduce(delta);
}

absl::StatusOr<IterationLogits> ModelRunner::Forward(const IterationPlan& plan, bool all_rows) {
  return Forward(plan, all_rows, nullptr);
}

ModelRunner::GraphShape ModelRunner::GraphShapeOf(const IterationPlan& plan, bool all_rows) const {
  GraphShape shape;
  if (!graphs_enabled_ || tracing_ || all_rows || plan.seqs.empty() ||
      plan.seqs.size() > static_cast<size_t>(kGraphBuckets[std::size(kGraphBuckets) - 1])) {
    return shape;
  }
  int32_t max_kv = 1;
  for (const auto& s : plan.seqs) {
    if (s.token_ids.size() != 1 || !s.sample || !s.prompt_logprob_targets.empty()) return shape;
    max_kv = std::max(max_kv, s.start_pos + 1);
  }
  for (int32_t b : kGraphBuckets) {
    if (b >= static_cast<int32_t>(plan.seqs.size())) {
      shape.seqs = b;
      break;
    }
  }
  // Contexts by powers of two from 64 keys, up to the model's longest: the attention's
  // launch shape (its split over keys) follows the longest context it is given.
  const int32_t bs = kv_shape_.block_size;
  const int32_t longest = (config_.max_position_embeddings + bs - 1) / bs * bs;
  shape.kv = 64;
  while (shape.kv < max_kv && shape.kv < longest) shape.kv *= 2;
  shape.kv = std::min(shape.kv, longest);
  return shape;
}

absl::Status ModelRunner::RunGraph(const GraphShape& shape,
                                   const std::function<absl::Status()>& body) {
  const std::pair<int64_t, int64_t> generation = {buffers_generation_,
                                                  backend_->workspace_generation()};
  const std::pair<int32_t, int32_t> key = {shape.seqs, shape.kv};
  if (auto it = graphs_.find(key); it != graphs_.end() && it->second.generation == generation) {
    ++graph_replays_;
    ORCA_RETURN_IF_ERROR(backend_->Replay(*it->second.graph));
    // In a group the graph holds the iteration's all-reduces and sends: wait for them
    // here, watching the peers, as the communicator's own calls do (the synchronous
    // copies that follow would wait for ever on a peer that died).
    return AwaitCommunicators();
  }
  // The bucket's first iteration, or its buffers moved: run it op by op (which also grows
  // every workspace to this shape and gives this iteration its result), then record the
  // same ops for later iterations.
  ORCA_RETURN_IF_ERROR(body());
  ORCA_RETURN_IF_ERROR(backend_->Synchronize());
  const std::pair<int64_t, int64_t> sized = {buffers_generation_, backend_->workspace_generation()};
  ORCA_RETURN_IF_ERROR(backend_->BeginCapture());
  const absl::Status recorded = body();
  absl::StatusOr<std::unique_ptr<BackendGraph>> graph = backend_->EndCapture();
  if (!recorded.ok() || !graph.ok()) {
    // This iteration has its result already; later ones run op by op.
    ORCA_LOG(WARNING) << backend_->name() << ": graph capture of a decode batch of " << shape.seqs
                      << " failed (" << (recorded.ok() ? graph.status() : recorded)
                      << "); running iterations without graphs";
    graphs_enabled_ = false;
    graphs_.clear();
    return absl::OkStatus();
  }
  graphs_[key] = CapturedGraph{std::move(*graph), sized};
  return absl::OkStatus();
}

absl::StatusOr<IterationLogits> ModelRunner::Forward(const IterationPlan& given, bool all_rows,
                                                     std::vector<SequencePromptLogprobs>* prompt,
                                                     bool logits_to_host) {
  ORCA_RETURN_IF_ERROR(ValidatePlan(given));
  if ((shard_.tensor > 1 && tp_comm_ == nullptr) || (shard_.pipeline > 1 && pp_comm_ == nullptr)) {
    return absl::FailedPreconditionError(
        "the runner's communicators were released (ReleaseCommunicators); SetCommunicators "
        "first");
  }
  // A decode-only plan runs from the graph of its shape (GraphShapeOf): padded with
  // sequences that decode token 0 at position 0 into no KV slot, every block table
  // exactly the shape's context wide, and the attention launched for that context.
  const GraphShape shape = GraphShapeOf(given, all_rows);
  const int32_t bucket = shape.seqs;
  const int32_t real_seqs = static_cast<int32_t>(given.seqs.size());
  IterationPlan padded;
  if (bucket > 0) {
    const int32_t bs = kv_shape_.block_size;
    const size_t width = static_cast<size_t>((shape.kv + bs - 1) / bs);
    padded.seqs = given.seqs;
    padded.seqs.resize(static_cast<size_t>(bucket));
    for (int32_t i = 0; i < bucket; ++i) {
      ScheduledSequence& s = padded.seqs[static_cast<size_t>(i)];
      if (i >= real_seqs) {
        s.token_ids = {0};
        s.sample = true;
      }
      s.block_table.resize(width, 0);  // the blocks past the context are never read
    }
  }
  const IterationPlan& plan = bucket > 0 ? padded : given;
  const int64_t n = plan.num_tokens();
  const int32_t num_seqs = static_cast<int32_t>(plan.seqs.size());
  IterationLogits result;
  result.vocab_size = config_.vocab_size;
  if (n == 0) return result;
  const int32_t bs = kv_shape_.block_size;

  // Host-side index arrays, packed into one upload:
  // tokens[n] positions[n] slots[n] query_start[S+1] kv_len[S] sample_rows[S] tables[S*maxb]
  // prompt_rows[P].
  int32_t max_blocks = 1, max_q = 0, max_kv = 0;
  for (const auto& s : plan.seqs) {
    max_blocks = std::max<int32_t>(max_blocks, static_cast<int32_t>(s.block_table.size()));
  }
  std::vector<int32_t> idx;
  idx.reserve(4 * n + 3 * num_seqs + 1 + int64_t{num_seqs} * max_blocks);
  for (const auto& s : plan.seqs) idx.insert(idx.end(), s.token_ids.begin(), s.token_ids.end());
  for (const auto& s : plan.seqs) {
    for (size_t i = 0; i < s.token_ids.size(); ++i)
      idx.push_back(s.start_pos + static_cast<int32_t>(i));
  }
  for (const auto& s : plan.seqs) {
    for (size_t i = 0; i < s.token_ids.size(); ++i) {
      int32_t pos = s.start_pos + static_cast<int32_t>(i);
      idx.push_back(s.block_table[pos / bs] * bs + pos % bs);
    }
  }
  int32_t start = 0;
  idx.push_back(0);
  for (const auto& s : plan.seqs) {
    start += static_cast<int32_t>(s.token_ids.size());
    idx.push_back(start);
  }
  for (const auto& s : plan.seqs) {
    int32_t kv = s.start_pos + static_cast<int32_t>(s.token_ids.size());
    idx.push_back(kv);
    max_kv = std::max(max_kv, kv);
    max_q = std::max<int32_t>(max_q, static_cast<int32_t>(s.token_ids.size()));
  }
  int32_t num_sample = 0;
  const int32_t sample_slots = all_rows ? static_cast<int32_t>(n) : num_seqs;
  if (all_rows) {
    for (int32_t i = 0; i < n; ++i) idx.push_back(i);
    num_sample = static_cast<int32_t>(n);
  } else {
    start = 0;
    for (const auto& s : plan.seqs) {
      start += static_cast<int32_t>(s.token_ids.size());
      if (s.sample) {
        idx.push_back(start - 1);
        ++num_sample;
      }
    }
    for (int32_t i = num_sample; i < num_seqs; ++i) idx.push_back(0);
  }
  for (const auto& s : plan.seqs) {
    idx.insert(idx.end(), s.block_table.begin(), s.block_table.end());
    for (size_t i = s.block_table.size(); i < static_cast<size_t>(max_blocks); ++i)
      idx.push_back(0);
  }
  // Then the rows whose logits score prompt tokens (prompt_rows[P]), sampling rank only.
  const size_t prompt_rows_at = idx.size();
  if (prompt != nullptr && shard_.samples()) {
    start = 0;
    for (const auto& s : plan.seqs) {
      for (size_t i = 0; i < s.prompt_logprob_targets.size(); ++i)
        idx.push_back(start + s.prompt_logprobs_from + static_cast<int32_t>(i));
      start += static_cast<int32_t>(s.token_ids.size());
    }
  }
  const int64_t num_prompt_rows = static_cast<int64_t>(idx.size() - prompt_rows_at);
  if (bucket > 0) {
    for (int32_t i = real_seqs; i < bucket; ++i) idx[static_cast<size_t>(2 * n + i)] = -1;
    max_kv = shape.kv;
  }
  const int64_t row_slots =
      std::max<int64_t>(sample_slots, std::min(num_prompt_rows, kPromptRowsPerPass));
  ORCA_RETURN_IF_ERROR(EnsureWorkspace(n, row_slots, static_cast<int64_t>(idx.size())));
  int32_t* dev = static_cast<int32_t*>(index_buffer_->data());
  // Asynchronous (pinned staging on CUDA): the host goes on issuing the layers.
  ORCA_RETURN_IF_ERROR(backend_->CopyToDeviceAsync(dev, idx.data(), idx.size() * sizeof(int32_t)));
  const int32_t* tokens = dev;
  const int32_t* positions = dev + n;
  const int32_t* slots = dev + 2 * n;
  AttentionBatch attn;
  attn.num_seqs = num_seqs;
  attn.query_start = dev + 3 * n;
  attn.kv_len = attn.query_start + num_seqs + 1;
  const int32_t* sample_rows = attn.kv_len + num_seqs;
  attn.block_tables = sample_rows + sample_slots;
  attn.max_blocks_per_seq = max_blocks;
  attn.max_query_len = max_q;
  attn.max_kv_len = max_kv;
  // bfloat16 weights: the GEMMs round activations to bfloat16, and attention may too.
  attn.bf16_products = !weights_->layers.empty() && weights_->layers[0].qkv.dtype == DType::kBF16;

  Backend& b = *backend_;
  Tensor x = x_.Rows(0, n);
  const size_t x_count = static_cast<size_t>(n * x.cols);
  // Everything on the device from the embedding to the sampled rows' logits (left in
  // logits_): what a graph records.
  auto body = [&]() -> absl::Status {
    if (shard_.first_stage()) {
      b.Embedding(tokens, n, weights_->embed, x, /*accumulate=*/false);
      if (config_.family == ModelFamily::kGpt2) {
        b.Embedding(positions, n, weights_->pos_embed, x, true);
      }
    } else {
      ScopedSpan span(spans_, "recv");
      ORCA_RETURN_IF_ERROR(
          pp_comm_->Recv(static_cast<float*>(x.data), x_count, shard_.prev_rank()));
    }
    {
      ScopedSpan span(spans_, "layers");
      for (int32_t l = 0; l < num_local_layers_; ++l) {
        ORCA_RETURN_IF_ERROR(RunLayer(l, n, positions, slots, attn));
      }
      // The last layer's output joins the residual stream.
      if (num_local_layers_ > 0) b.Add(x, delta_.Rows(0, n));
      // Host time covers the device's work (traced runs only).
      if (spans_ != nullptr) ORCA_RETURN_IF_ERROR(b.Synchronize());
    }
    if (!shard_.last_stage()) {
      ScopedSpan span(spans_, "send");
      ORCA_RETURN_IF_ERROR(
          pp_comm_->Send(static_cast<float*>(x.data), x_count, shard_.next_rank()));
    }
    if (!shard_.samples() || num_sample == 0) return absl::OkStatus();
    ScopedSpan span(spans_, "lm-head");
    return LmHead(x, sample_rows, num_sample, nullptr);
  };
  ORCA_RETURN_IF_ERROR(bucket > 0 ? RunGraph(shape, body) : body());
  if (!shard_.samples() || (num_sample == 0 && num_prompt_rows == 0)) {
    ORCA_RETURN_IF_ERROR(b.Synchronize());
    return result;
  }
  // The rows of the given plan's sequences (a graph's padding rows come after them).
  const int32_t given_samples = bucket > 0 ? real_seqs : num_sample;
  if (given_samples > 0 && logits_to_host) {
    ScopedSpan span(spans_, "lm-head");
    result.values.resize(static_cast<size_t>(given_samples) * config_.vocab_size);
    ORCA_RETURN_IF_ERROR(
        b.CopyToHost(result.values.data(), logits_.data, result.values.size() * sizeof(float)));
  }
  if (num_prompt_rows > 0) {
    ORCA_RETURN_IF_ERROR(ScorePrompts(plan, x, dev + prompt_rows_at, num_prompt_rows, prompt));
  }
  return result;
}

absl::Status ModelRunner::LmHead(const Tensor& x, const int32_t* rows_dev, int64_t num_rows,
                                 float* host_logits) {
  Backend& b = *backend_;
  Tensor rows = final_rows_.Rows(0, num_rows);
  b.GatherRows(x, rows_dev, num_rows, rows);
  if (config_.family == ModelFamily::kGpt2) {
    b.LayerNorm(rows, weights_->final_norm, weights_->final_norm_bias, config_.norm_eps, rows);
  } else {
    b.RmsNorm(rows, weights_->final_norm, config_.norm_eps, rows);
  }
  Tensor logits = logits_.Rows(0, num_rows);
  b.Linear(rows, weights_->lm_head, nullptr, logits);
  if (host_logits == nullptr) return absl::OkStatus();
  return b.CopyToHost(host_logits, logits.data,
                      static_cast<size_t>(num_rows) * config_.vocab_size * sizeof(float));
}

absl::Status ModelRunner::ScorePrompts(const IterationPlan& plan, const Tensor& x,
                                       const int32_t* rows_dev, int64_t num_rows,
                                       std::vector<SequencePromptLogprobs>* out) {
  // Row r of the flat list scores targets[r] with top_n[r] into entries[r].
  std::vector<int32_t> targets, top_n;
  std::vector<PromptLogprob*> entries;
  targets.reserve(static_cast<size_t>(num_rows));
  // Every result first (entries must not move once pointed at), then the rows.
  const size_t base = out->size();
  for (const auto& s : plan.seqs) {
    if (s.prompt_logprob_targets.empty()) continue;
    SequencePromptLogprobs& seq = out->emplace_back();
    seq.seq_id = s.seq_id;
    seq.first_position = s.start_pos + s.prompt_logprobs_from + 1;
    seq.entries.resize(s.prompt_logprob_targets.size());
  }
  size_t k = base;
  for (const auto& s : plan.seqs) {
    if (s.prompt_logprob_targets.empty()) continue;
    SequencePromptLogprobs& seq = (*out)[k++];
    for (size_t i = 0; i < s.prompt_logprob_targets.size(); ++i) {
      targets.push_back(s.prompt_logprob_targets[i]);
      top_n.push_back(std::max(0, s.sampling.prompt_logprobs));
      entries.push_back(&seq.entries[i]);
    }
  }
  // The LM head in passes of at most kPromptRowsPerPass rows, so a long prompt needs no
  // workspace of its length times the vocabulary.
  const int64_t vocab = config_.vocab_size;
  const int64_t pass = std::min<int64_t>(num_rows, kPromptRowsPerPass);
  prompt_logits_.resize(static_cast<size_t>(pass * vocab));
  for (int64_t first = 0; first < num_rows; first += pass) {
    const int64_t m = std::min(pass, num_rows - first);
    ORCA_RETURN_IF_ERROR(LmHead(x, rows_dev + first, m, prompt_logits_.data()));
    auto score = [&](int64_t r) {
      const size_t row = static_cast<size_t>(first + r);
      *entries[row] = ScorePromptToken(
          absl::MakeConstSpan(prompt_logits_.data() + r * vocab, static_cast<size_t>(vocab)),
          targets[row], top_n[row]);
    };
    ParallelRows(m, score);
  }
  return absl::OkStatus();
}

absl::StatusOr<IterationResult> ModelRunner::Execute(const IterationPlan& plan) {
  IterationResult result;
  result.iteration = plan.iteration;
  spans_ = tracing_ ? &result.spans : nullptr;
  std::vector<const ScheduledSequence*> sampled;
  bool prompt_rows = false;
  for (const auto& s : plan.seqs) {
    if (s.sample) sampled.push_back(&s);
    prompt_rows = prompt_rows || !s.prompt_logprob_targets.empty();
  }
  // Which rows the backend draws (where their logits are). Prompt logprob rows reuse
  // the logits workspace, so a plan with them samples on the host.
  std::vector<bool> on_backend(sampled.size(), false);
  bool any_on_backend = false;
  if (sample_on_backend_ && shard_.samples() && !prompt_rows) {
    for (size_t i = 0; i < sampled.size(); ++i) {
      on_backend[i] = SamplesOnBackend(*sampled[i], backend_->Sampling(), config_.vocab_size);
      any_on_backend = any_on_backend || on_backend[i];
    }
  }
  absl::StatusOr<IterationLogits> logits =
      Forward(plan, false, &result.prompt_logprobs, /*logits_to_host=*/!any_on_backend);
  if (!logits.ok() || !shard_.samples()) {
    spans_ = nullptr;
    if (!logits.ok()) return logits.status();
    return result;
  }
  // Guided rows' masks, made now: on a GPU the device computes the logits meanwhile.
  std::vector<ScheduledSequence> made;
  if (std::any_of(sampled.begin(), sampled.end(),
                  [](const ScheduledSequence* s) { return s->deferred_mask != nullptr; })) {
    ScopedSpan span(spans_, "masks");
    ORCA_RETURN_IF_ERROR(MakeDeferredMasks(sampled, made));
  }
  // A row whose mask allows nothing draws nothing (its guide cannot go on).
  std::vector<bool> no_token(sampled.size(), false);
  for (size_t i = 0; i < sampled.size(); ++i) {
    no_token[i] = AllowsNoToken(*sampled[i], config_.vocab_size);
    if (no_token[i]) on_backend[i] = false;
  }
  {
    ScopedSpan span(spans_, "sample");
    if (any_on_backend) {
      ORCA_RETURN_IF_ERROR(SampleFromDeviceLogits(sampled, on_backend, no_token, &result.tokens));
    } else {
      result.tokens.resize(sampled.size());
      auto sample = [&](int64_t row) {
        if (no_token[static_cast<size_t>(row)]) return;
        result.tokens[row] =
            SampleToken(absl::MakeSpan(logits->row(row), static_cast<size_t>(logits->vocab_size)),
                        *sampled[row]);
      };
      ParallelRows(static_cast<int64_t>(sampled.size()), sample);
    }
    for (size_t i = 0; i < sampled.size(); ++i) {
      if (!no_token[i]) continue;
      result.tokens[i] = SampledToken();
      result.tokens[i].seq_id = sampled[i]->seq_id;  // token_id -1
    }
  }
  spans_ = nullptr;  // the spans above are in result.spans now
  return result;
}

absl::Status ModelRunner::MakeDeferredMasks(std::vector<const ScheduledSequence*>& sampled,
                                            std::vector<ScheduledSequence>& made) {
  std::vector<ScheduledSequence*> deferred;
  made.reserve(sampled.size());  // (no reallocation: `sampled` points into it)
  for (const ScheduledSequence*& s : sampled) {
    if (s->deferred_mask == nullptr) continue;
    made.push_back(*s);
    s = &made.back();
    deferred.push_back(&made.back());
  }
  if (deferred.empty()) return absl::OkStatus();
  orca::MakeDeferredMasks(absl::MakeSpan(deferred), sampler_pool_.get());
  const size_t words = (static_cast<size_t>(config_.vocab_size) + 31) / 32;
  for (const ScheduledSequence* s : deferred) {
    if (s->allowed_token_mask.size() > words) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence ", s->seq_id, ": its guide made a token mask of ",
                       s->allowed_token_mask.size(), " words for ", config_.vocab_size, " tokens"));
    }
  }
  return absl::OkStatus();
}

absl::Status ModelRunner::SampleFromDeviceLogits(absl::Span<const ScheduledSequence* const> sampled,
                                                 const std::vector<bool>& on_backend,
                                                 const std::vector<bool>& no_token,
                                                 std::vector<SampledToken>* tokens) {
  const int64_t rows = static_cast<int64_t>(sampled.size());
  const size_t vocab = static_cast<size_t>(config_.vocab_size);
  // Rows left to the host are drawn greedily here too (one pass), and that draw is
  // dropped.
  std::vector<SampleRowParams> params(sampled.size());
  std::vector<uint32_t> masks;
  int32_t mask_rows = 0;
  std::vector<LogitEdit> edits;
  std::vector<int64_t> host_rows;
  for (int64_t r = 0; r < rows; ++r) {
    if (!on_backend[r]) {
      if (!no_token[r]) host_rows.push_back(r);
      continue;
    }
    params[r] = BackendSampleParams(*sampled[r]);
    if (NeedsBackendMask(*sampled[r])) {
      AppendBackendSampleMask(*sampled[r], config_.vocab_size, &masks);
      params[r].mask_row = mask_rows++;
    }
    if (HasLogitEdits(sampled[r]->sampling)) {
      params[r].edits_begin = static_cast<int32_t>(edits.size());
      AppendLogitEdits(*sampled[r], config_.vocab_size, &edits);
      params[r].edits_end = static_cast<int32_t>(edits.size());
    }
  }
  std::vector<int32_t> ids(sampled.size());
  const bool logprobs = std::any_of(params.begin(), params.end(),
                                    [](const SampleRowParams& p) { return p.logprobs >= 0; });
  std::vector<RowLogprobs> row_logprobs(logprobs ? sampled.size() : 0);
  ORCA_RETURN_IF_ERROR(backend_->SampleRows(logits_.Rows(0, rows), params, masks, edits, ids.data(),
                                            logprobs ? row_logprobs.data() : nullptr));
  tokens->resize(sampled.size());
  for (int64_t r = 0; r < rows; ++r) {
    if (!on_backend[r]) continue;
    SampledToken& t = (*tokens)[r];
    t.seq_id = sampled[r]->seq_id;
    t.token_id = ids[r];
    if (params[r].logprobs < 0) continue;
    const RowLogprobs& l = row_logprobs[r];
    t.logprob = l.logprob;
    const int32_t top = std::min({params[r].logprobs, kMaxBackendLogprobs, config_.vocab_size});
    for (int32_t k = 0; k < top; ++k) t.top_logprobs.emplace_back(l.top_ids[k], l.top_logprobs[k]);
  }
  rows_sampled_on_backend_ += rows - static_cast<int64_t>(host_rows.size());
  if (host_rows.empty()) return absl::OkStatus();
  std::vector<float> host_logits(host_rows.size() * vocab);
  for (size_t i = 0; i < host_rows.size(); ++i) {
    ORCA_RETURN_IF_ERROR(backend_->CopyToHost(
        host_logits.data() + i * vocab, logits_.Rows(host_rows[i], 1).data, vocab * sizeof(float)));
  }
  ParallelRows(static_cast<int64_t>(host_rows.size()), [&](int64_t i) {
    const int64_t r = host_rows[static_cast<size_t>(i)];
    (*tokens)[r] = SampleToken(absl::MakeSpan(host_logits.data() + i * vocab, vocab), *sampled[r]);
  });
  return absl::OkStatus();
}

void ModelRunner::ParallelRows(int64_t n, const std::function<void(int64_t)>& fn) {
  if (sampler_pool_ && n > 1) {
    sampler_pool_->ParallelFor(n, fn);
  } else {
    for (int64_t i = 0; i < n; ++i) fn(i);
  }
}

}  // namespace orca
