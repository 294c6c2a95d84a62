#include "engine/serving/local_executor.h"

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#ifdef ORCA_HAVE_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#endif

namespace orca {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const std::string& device,
                                                       int32_t device_index, int32_t num_threads,
                                                       double memory_fraction) {
  if (device == "cpu") return CreateCpuBackend(num_threads);
  if (device == "cuda") {
#ifdef ORCA_HAVE_CUDA
    CudaBackendOptions co;
    co.device = device_index;
    co.memory_fraction = memory_fraction;
    return CreateCudaBackend(co);
#else
    (void)device_index;
    (void)memory_fraction;
    return absl::FailedPreconditionError(
        "this orca was built without CUDA (ORCA_WITH_CUDA=OFF or no toolkit)");
#endif
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown device '", device, "' (cpu or cuda)"));
}

absl::StatusOr<std::unique_ptr<LocalExecutor>> LocalExecutor::Create(
    const LocalExecutorOptions& options) {
  auto e = std::unique_ptr<LocalExecutor>(new LocalExecutor());
  ORCA_ASSIGN_OR_RETURN(e->backend_, CreateBackend(options.device, options.device_index,
                                                   options.num_threads, options.memory_fraction));
  ORCA_ASSIGN_OR_RETURN(e->runner_,
                        ModelRunner::Create(options.model_dir, e->backend_.get(), options.runner));
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
