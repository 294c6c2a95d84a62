// LocalExecutor: the Executor of a single-process engine: one backend (CPU or CUDA)
// and one ModelRunner holding the whole model. Submit runs the plan at once; Wait
// returns its result.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/executor/model_runner.h"
#include "engine/serving/executor.h"

namespace orca {

struct LocalExecutorOptions {
  std::string model_dir;
  std::string device = "cpu";    // cpu | cuda (when built with CUDA)
  int32_t device_index = 0;      // CUDA device ordinal
  int32_t num_threads = 0;       // CPU backend threads; 0 = all cores
  double memory_fraction = 0.9;  // CUDA: share of device memory for weights + KV
  ModelRunnerOptions runner;
};

// Creates the backend `options.device` names (InvalidArgument for an unknown one,
// FailedPrecondition for cuda in a build without CUDA).
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const std::string& device,
                                                       int32_t device_index, int32_t num_threads,
                                                       double memory_fraction);

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
  std::unique_ptr<ModelRunner> runner_;
  std::optional<absl::StatusOr<IterationResult>> result_;
};

}  // namespace orca
