#include "engine/backend/registry.h"

#include "absl/strings/str_cat.h"
#ifdef ORCA_HAVE_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#endif

namespace orca {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(const DeviceOptions& device,
                                                       int32_t rank_offset) {
  switch (device.type) {
    case Device::kCpu:
      return CreateCpuBackend(device.threads);
    case Device::kCuda: {
#ifdef ORCA_HAVE_CUDA
      CudaBackendOptions co;
      co.device = device.index + rank_offset;
      co.memory_fraction = device.memory_fraction;
      return CreateCudaBackend(co);
#else
      (void)rank_offset;
      return absl::FailedPreconditionError(
          "this orca was built without CUDA (ORCA_WITH_CUDA=OFF or no toolkit): --device cuda "
          "is not available");
#endif
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown device '", DeviceName(device.type), "'"));
}

absl::Status CheckDevicesAvailable(const DeviceOptions& device, int32_t count) {
  if (device.type != Device::kCuda) return absl::OkStatus();
#ifdef ORCA_HAVE_CUDA
  const int usable = CudaDeviceCount();
  if (device.index >= 0 && device.index + count <= usable) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      count, " rank(s) need CUDA devices ", device.index, "..", device.index + count - 1,
      " (device.index ", device.index, "); this machine has ", usable, " usable CUDA device(s)"));
#else
  (void)count;
  return absl::FailedPreconditionError(
      "this orca was built without CUDA (ORCA_WITH_CUDA=OFF or no toolkit): --device cuda "
      "is not available");
#endif
}

std::vector<std::string> AvailableDevices() {
#ifdef ORCA_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

}  // namespace orca
