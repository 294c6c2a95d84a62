#include "engine/backend/cuda/internal/pinned_uploader.h"

#include <cstring>

namespace orca::cuda_internal {

PinnedUploader::~PinnedUploader() {
  for (Slot& slot : slots_) {
    if (slot.in_flight) (void)cudaEventSynchronize(slot.done);
    if (slot.done != nullptr) (void)cudaEventDestroy(slot.done);
    if (slot.data != nullptr) (void)cudaFreeHost(slot.data);
  }
}

cudaError_t PinnedUploader::Upload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  // The slot's previous copy must have read it before it is rewritten.
  if (slot.in_flight) {
    if (cudaError_t e = cudaEventSynchronize(slot.done); e != cudaSuccess) return e;
    slot.in_flight = false;
  }
  if (slot.done == nullptr) {
    if (cudaError_t e = cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming);
        e != cudaSuccess) {
      slot.done = nullptr;
      return e;
    }
  }
  if (slot.capacity < bytes) {
    if (slot.data != nullptr) (void)cudaFreeHost(slot.data);
    slot.data = nullptr;
    slot.capacity = 0;
    const size_t grown = bytes + bytes / 2;
    if (cudaError_t e = cudaMallocHost(&slot.data, grown); e != cudaSuccess) {
      slot.data = nullptr;
      return e;
    }
    slot.capacity = grown;
  }
  std::memcpy(slot.data, src, bytes);
  if (cudaError_t e = cudaMemcpyAsync(dst, slot.data, bytes, cudaMemcpyHostToDevice, stream);
      e != cudaSuccess) {
    return e;
  }
  if (cudaError_t e = cudaEventRecord(slot.done, stream); e != cudaSuccess) {
    // Without its event the slot cannot tell when the copy has read it: wait for it.
    (void)cudaStreamSynchronize(stream);
    return e;
  }
  slot.in_flight = true;
  return cudaSuccess;
}

}  // namespace orca::cuda_internal
