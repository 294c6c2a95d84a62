#include "engine/backend/cuda/internal/device_memory.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_status.h"

namespace orca::cuda_internal {
namespace {

class CudaBuffer : public DeviceBuffer {
 public:
  CudaBuffer(std::shared_ptr<DeviceMemory> memory, void* ptr, size_t bytes)
      : memory_(std::move(memory)), ptr_(ptr), bytes_(bytes) {}
  ~CudaBuffer() override { memory_->Free(ptr_, bytes_); }
  void* data() override { return ptr_; }
  size_t size() const override { return bytes_; }

 private:
  std::shared_ptr<DeviceMemory> memory_;
  void* ptr_;
  size_t bytes_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<DeviceMemory>> DeviceMemory::Create(int device,
                                                                   double memory_fraction) {
  if (!(memory_fraction > 0.0 && memory_fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory fraction ", memory_fraction, " outside (0, 1]"));
  }
  std::shared_ptr<DeviceMemory> m(new DeviceMemory());
  m->device_ = device;
  ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  size_t free_bytes = 0, total_bytes = 0;
  ORCA_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  m->budget_ = static_cast<size_t>(static_cast<double>(total_bytes) * memory_fraction);
  ORCA_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&m->stream_, cudaStreamNonBlocking));

  int pools_supported = 0;
  ORCA_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&pools_supported, cudaDevAttrMemoryPoolsSupported, device));
  if (pools_supported) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    ORCA_CUDA_RETURN_IF_ERROR(cudaMemPoolCreate(&m->pool_, &props));
    // Keep freed memory cached in the pool instead of returning it at each sync.
    uint64_t threshold = UINT64_MAX;
    ORCA_CUDA_RETURN_IF_ERROR(
        cudaMemPoolSetAttribute(m->pool_, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
  return m;
}

DeviceMemory::~DeviceMemory() {
  // Errors cannot be reported from a destructor; the device is torn down regardless.
  (void)cudaSetDevice(device_);
  if (stream_ != nullptr) {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
  if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> DeviceMemory::Allocate(size_t bytes) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  const size_t before = allocated_.fetch_add(rounded);
  if (before + rounded > budget_) {
    allocated_.fetch_sub(rounded);
    return absl::ResourceExhaustedError(absl::StrCat("cuda:", device_, ": allocating ", bytes,
                                                     " bytes exceeds the memory budget (", before,
                                                     " of ", budget_, " bytes in use)"));
  }
  void* ptr = nullptr;
  absl::Status s = ORCA_CUDA_STATUS(cudaSetDevice(device_));
  if (s.ok() && rounded > 0) {
    s = pool_ != nullptr ? ORCA_CUDA_STATUS(cudaMallocFromPoolAsync(&ptr, rounded, pool_, stream_))
                         : ORCA_CUDA_STATUS(cudaMalloc(&ptr, rounded));
  }
  if (!s.ok()) {
    allocated_.fetch_sub(rounded);
    (void)cudaGetLastError();  // clear a non-sticky allocation error
    return s;
  }
  return std::unique_ptr<DeviceBuffer>(new CudaBuffer(shared_from_this(), ptr, bytes));
}

void DeviceMemory::Free(void* ptr, size_t bytes) {
  if (ptr != nullptr) {
    (void)cudaSetDevice(device_);
    if (pool_ != nullptr) {
      (void)cudaFreeAsync(ptr, stream_);
    } else {
      (void)cudaFree(ptr);
    }
  }
  allocated_.fetch_sub((bytes + 255) / 256 * 256);
}

}  // namespace orca::cuda_internal
