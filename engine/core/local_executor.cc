#include "engine/core/local_executor.h"

#include "engine/backend/registry.h"
#include "engine/common/status_macros.h"
#include "engine/runner/kv_cache_sizing.h"

namespace orca {

absl::StatusOr<std::unique_ptr<LocalExecutor>> LocalExecutor::Create(
    const LocalExecutorOptions& options) {
  auto e = std::unique_ptr<LocalExecutor>(new LocalExecutor());
  ORCA_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(options.model.dir));
  ModelRunnerOptions ro;
  ro.block_size = options.kv_cache.block_size;
  ORCA_ASSIGN_OR_RETURN(ro.num_kv_blocks, KvCacheBlocks(config, 1, 1, options.kv_cache));
  ro.dtype = options.model.dtype;
  ORCA_ASSIGN_OR_RETURN(e->backend_, CreateBackend(options.device));
  ORCA_ASSIGN_OR_RETURN(e->runner_, ModelRunner::Create(options.model.dir, e->backend_.get(), ro));
  return e;
}

absl::Status LocalExecutor::Submit(const IterationPlan& plan) {
  if (result_.has_value()) return absl::FailedPreconditionError("a plan is already outstanding");
  result_ = runner_->Execute(plan);
  return absl::OkStatus();
}

absl::StatusOr<IterationResult> LocalExecutor::Wait() {
  if (!result_.has_value()) return absl::FailedPreconditionError("no plan is outstanding");
  absl::StatusOr<IterationResult> r = std::move(*result_);
  result_.reset();
  return r;
}

}  // namespace orca
