// CudaBackend: the Backend on one NVIDIA GPU (DESIGN.md sections 3-4). cuBLAS for the
// dense GEMMs (F32, F16 and BF16 weights, F32 accumulation), orca's own kernels
// (kernels/) for everything else, including the fused paged attention over the flat
// mixed batch.
//
// - One CUDA stream per backend (one backend per rank); every operation is issued on
//   it in call order and returns at once. CopyToHost and Synchronize wait for it.
// - Memory comes from a stream-ordered caching pool on the device: freed buffers are
//   kept for reuse rather than returned to the driver. The backend may hold at most
//   `memory_fraction` of the device's memory (weights, KV cache and workspaces);
//   Allocate fails with ResourceExhausted beyond it, and GetMemoryInfo reports that
//   budget, so a KV cache sized from GetMemoryInfo().free_bytes fits.
// - Errors: the operations return void (the Backend contract); the first CUDA or
//   cuBLAS error, or invalid argument, of an operation is recorded and returned by the
//   next Synchronize or CopyToHost, which then clear it. Errors name the failing call.
//
// Buffers may outlive the backend (they keep the device context alive). Like every
// Backend, an instance is used by one thread at a time; that thread need not have
// selected the device (each call selects it).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"

namespace orca {

struct CudaBackendOptions {
  int device = 0;
  // Share of the device's total memory this backend may allocate, in (0, 1].
  double memory_fraction = 0.9;
  // Lets F32-weight GEMMs use TF32 tensor cores (about 1e-3 relative error) instead of
  // exact F32 math.
  bool allow_tf32 = false;
};

// Returns the number of usable CUDA devices; 0 when there is no GPU or no driver.
int CudaDeviceCount();

class CudaBackend : public Backend {
 public:
  // Creates a backend on `options.device`. Fails with FailedPrecondition when the device
  // does not exist (or no driver is installed), InvalidArgument on bad options, and with
  // the CUDA or cuBLAS error of the failing setup call otherwise.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(const CudaBackendOptions& options);

  // Returns the stream every operation runs on (for NCCL and benchmarks). Owned by the
  // backend; valid while it lives.
  virtual cudaStream_t stream() const = 0;
  virtual int device() const = 0;
};

// Creates a CudaBackend, as the generic Backend type (see CudaBackend::Create).
absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const CudaBackendOptions& options = {});

}  // namespace orca
