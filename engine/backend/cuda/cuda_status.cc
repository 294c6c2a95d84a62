#include "engine/backend/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace orca::cuda_internal {

absl::Status ToStatus(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return absl::OkStatus();
  std::string msg = absl::StrCat("CUDA error in ", call, ": ", cudaGetErrorName(code), " (",
                                 cudaGetErrorString(code), ") at ", file, ":", line);
  if (code == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

absl::Status ToStatus(cublasStatus_t code, const char* call, const char* file, int line) {
  if (code == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat("cuBLAS error in ", call, ": ", cublasGetStatusName(code), " (",
                                 cublasGetStatusString(code), ") at ", file, ":", line);
  if (code == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

}  // namespace orca::cuda_internal
