// LocalExecutor: the Executor of a single-process engine: one backend (CPU or CUDA)
// and one ModelRunner holding the whole model. Submit runs the plan at once; Wait
// returns its result.
//
// On CUDA with the KV cache size left to auto (kv_cache_sizing.h), Create loads the
// weights with a probe cache, runs a profiling pass at the scheduler's largest iteration
// (`scheduler.max_batched_tokens` over `scheduler.max_batch_size` sequences), and gives
// the cache what the device's memory budget leaves; it logs the arithmetic and fails
// with ResourceExhausted when not one max-length sequence fits.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/config/engine_config.h"
#include "engine/core/executor.h"
#include "engine/runner/model_runner.h"

namespace orca {

struct LocalExecutorOptions {
  ModelOptions model;
  DeviceOptions device;
  KvCacheOptions kv_cache;             // sized by KvCacheBlocks, or by memory (see above)
  SchedulerOptions scheduler;          // the largest iteration, for the profiling pass
  std::shared_ptr<TraceWriter> trace;  // null = off; the rank's steps on RankTrack(0)
};

class LocalExecutor : public Executor {
 public:
  static absl::StatusOr<std::unique_ptr<LocalExecutor>> Create(const LocalExecutorOptions& options);

  const ModelConfig& config() const override { return runner_->config(); }
  int32_t num_kv_blocks() const override { return runner_->num_kv_blocks(); }
  int32_t block_size() const override { return runner_->block_size(); }
  absl::Status Submit(const IterationPlan& plan) override;
  absl::StatusOr<IterationResult> Wait() override;

  ModelRunner& runner() { return *runner_; }

 private:
  LocalExecutor() = default;
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<TraceWriter> trace_;
  std::unique_ptr<ModelRunner> runner_;
  std::optional<absl::StatusOr<IterationResult>> result_;
};

}  // namespace orca
