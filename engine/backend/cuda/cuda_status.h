// The one way CUDA, cuBLAS and NCCL return codes become absl::Status in orca:
//
//   ORCA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(...));   // returns the Status on failure
//   absl::Status s = ORCA_CUDA_STATUS(cublasGemmEx(...));
//
// The Status names the failing call (its source text), the library's error name and
// message, and the source location. Out-of-memory codes map to ResourceExhausted,
// everything else to Internal. Thread-safe.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace orca::cuda_internal {

absl::Status ToStatus(cudaError_t code, const char* call, const char* file, int line);
absl::Status ToStatus(cublasStatus_t code, const char* call, const char* file, int line);
// The NCCL overload lives with the NCCL communicator (engine/comm/nccl/), so the CUDA
// backend does not depend on NCCL.

}  // namespace orca::cuda_internal

#define ORCA_CUDA_STATUS(expr) ::orca::cuda_internal::ToStatus((expr), #expr, __FILE__, __LINE__)

#define ORCA_CUDA_RETURN_IF_ERROR(expr)                        \
  do {                                                         \
    ::absl::Status orca_cuda_status_ = ORCA_CUDA_STATUS(expr); \
    if (!orca_cuda_status_.ok()) return orca_cuda_status_;     \
  } while (0)
