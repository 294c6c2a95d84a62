// Host-to-device copies that do not make the host wait (issue 14's asynchronous index
// uploads): the source is copied into page-locked staging memory and the device copies
// from there in stream order, so the caller may reuse its buffer at once and goes on
// issuing work while the copy runs.
//
// Why: cudaMemcpyAsync from pageable memory is synchronous for the host and may wait for
// the stream's earlier work before it stages the bytes (CUDA's "API synchronization
// behavior"), so each plan's indices, and a sampling call's parameters, masks and logit
// edits, cost the host a wait for the GPU. From pinned memory the copy is a DMA in the
// stream: nothing waits.
//
// A ring of staging slots, each with an event recorded after its copy; a slot is reused
// only once its event has completed (normally long since: an iteration synchronises
// when it reads its sampled tokens back). Slots grow to the largest copy they met.
// Not for a stream that captures a graph (the graph would replay from a slot that has
// since been rewritten): the caller copies another way then. Used by one thread.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace orca::cuda_internal {

class PinnedUploader {
 public:
  static constexpr int kSlots = 8;

  PinnedUploader() = default;
  // Waits for the copies still in flight, then frees the staging memory.
  ~PinnedUploader();
  PinnedUploader(const PinnedUploader&) = delete;
  PinnedUploader& operator=(const PinnedUploader&) = delete;

  // Enqueues a copy of src[0, bytes) to device memory `dst` on `stream` (of the current
  // device); `src` may be changed as soon as this returns. An error leaves nothing
  // enqueued, or reports what the stream reported.
  cudaError_t Upload(void* dst, const void* src, size_t bytes, cudaStream_t stream);

 private:
  struct Slot {
    void* data = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;  // recorded after the slot's last copy
    bool in_flight = false;
  };
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  size_t next_ = 0;
};

}  // namespace orca::cuda_internal
