#include "engine/core/local_executor.h"

#include <algorithm>

#include "engine/backend/registry.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/runner/kv_cache_sizing.h"

namespace orca {

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
    ro.num_kv_blocks = ProbeKvBlocks(options.scheduler.max_batched_tokens,
                                     options.scheduler.max_batch_size, ro.block_size);
  } else {
    ORCA_ASSIGN_OR_RETURN(ro.num_kv_blocks, KvCacheBlocks(config, {config.num_layers}, 1,
                                                          options.kv_cache, ro.kv_cache_dtype));
  }
  ro.dtype = options.model.dtype;
  ro.sampler_threads = options.device.threads;
  ro.sample_on_backend = options.device.sample_on_device;
  ro.graphs = options.device.cuda_graphs;
  ro.sixteen_bit_activations = options.device.sixteen_bit_activations;
  ORCA_ASSIGN_OR_RETURN(e->backend_, CreateBackend(options.device));
  ORCA_ASSIGN_OR_RETURN(e->runner_, ModelRunner::Create(options.model.dir, e->backend_.get(), ro));
  if (by_memory) {
    ORCA_ASSIGN_OR_RETURN(
        KvMemoryPlan plan,
        MeasureKvCapacity(*e->runner_, *e->backend_, options.scheduler.max_batched_tokens,
                          options.scheduler.max_batch_size, options.model.max_model_len));
    ORCA_LOG(INFO) << "engine: " << e->backend_->name() << ": " << plan.Describe();
    ORCA_RETURN_IF_ERROR(e->runner_->ResizeKvCache(plan.num_blocks));
  }
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
