#include "engine/core/local_executor.h"

#include <algorithm>

#include "engine/backend/registry.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/runner/kv_cache_sizing.h"

namespace orca {

namespace {

// Sizes `runner`'s KV cache from what the backend's memory budget leaves once a
// profiling pass has run (the runner holds a probe cache on entry).
absl::Status SizeKvCacheFromMemory(ModelRunner& runner, Backend& backend,
                                   const LocalExecutorOptions& options) {
  const SchedulerOptions& s = options.scheduler;
  ORCA_RETURN_IF_ERROR(runner.RunProfilingPass(s.max_batched_tokens, s.max_batch_size));
  const MemoryInfo info = backend.GetMemoryInfo();
  MemoryMeasurement m;
  m.budget_bytes = info.total_bytes;
  m.free_bytes = info.free_bytes;
  m.weight_bytes = runner.weight_bytes();
  m.probe_kv_bytes = runner.kv_cache_bytes();
  int64_t max_len = options.model.max_model_len;
  if (max_len <= 0 || max_len > runner.config().max_position_embeddings) {
    max_len = runner.config().max_position_embeddings;
  }
  ORCA_ASSIGN_OR_RETURN(KvMemoryPlan plan,
                        KvBlocksFromMemory(m, runner.KvBytesFor(1), runner.block_size(), max_len));
  ORCA_LOG(INFO) << "engine: " << backend.name() << ": " << plan.Describe();
  return runner.ResizeKvCache(plan.num_blocks);
}

}  // namespace

absl::StatusOr<std::unique_ptr<LocalExecutor>> LocalExecutor::Create(
    const LocalExecutorOptions& options) {
  auto e = std::unique_ptr<LocalExecutor>(new LocalExecutor());
  ORCA_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(options.model.dir));
  ModelRunnerOptions ro;
  ro.block_size = options.kv_cache.block_size;
  ORCA_ASSIGN_OR_RETURN(ro.kv_cache_dtype,
                        ResolveKvCacheDType(options.kv_cache.dtype, options.device.type));
  const bool by_memory = KvCacheSizedByMemory(options.kv_cache, options.device.type);
  if (by_memory) {
    // A probe cache, large enough for the profiling pass.
    const int64_t bs = ro.block_size, tokens = options.scheduler.max_batched_tokens;
    const int64_t seqs = std::min<int64_t>(options.scheduler.max_batch_size, tokens);
    ro.num_kv_blocks = static_cast<int32_t>((tokens + bs - 1) / bs + seqs);
  } else {
    ORCA_ASSIGN_OR_RETURN(ro.num_kv_blocks,
                          KvCacheBlocks(config, 1, 1, options.kv_cache, ro.kv_cache_dtype));
  }
  ro.dtype = options.model.dtype;
  ro.sampler_threads = options.device.threads;
  ro.sample_on_backend = options.device.sample_on_device;
  ro.graphs = options.device.cuda_graphs;
  ORCA_ASSIGN_OR_RETURN(e->backend_, CreateBackend(options.device));
  ORCA_ASSIGN_OR_RETURN(e->runner_, ModelRunner::Create(options.model.dir, e->backend_.get(), ro));
  if (by_memory) ORCA_RETURN_IF_ERROR(SizeKvCacheFromMemory(*e->runner_, *e->backend_, options));
  if (options.trace) {
    e->trace_ = options.trace;
    e->trace_->NameTrack(TraceWriter::kSchedulerTrack, "scheduler");
    e->trace_->NameTrack(TraceWriter::RankTrack(0), "rank 0");
    e->runner_->set_tracing(true);
  }
  return e;
}

absl::Status LocalExecutor::Submit(const IterationPlan& plan) {
  if (result_.has_value()) return absl::FailedPreconditionError("a plan is already outstanding");
  result_ = runner_->Execute(plan);
  if (trace_ && result_->ok()) {
    trace_->Spans(TraceWriter::RankTrack(0), (*result_)->spans,
                  static_cast<int64_t>(plan.iteration));
    (*result_)->spans.clear();
  }
  return absl::OkStatus();
}

absl::StatusOr<IterationResult> LocalExecutor::Wait() {
  if (!result_.has_value()) return absl::FailedPreconditionError("no plan is outstanding");
  absl::StatusOr<IterationResult> r = std::move(*result_);
  result_.reset();
  return r;
}

}  // namespace orca
