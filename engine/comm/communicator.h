// Communicator: the data plane between ranks of a serving group (DESIGN.md section 4):
// tensor-parallel all-reduce and pipeline-parallel send/recv of activations. NCCL on
// GPUs, Gloo (TCP) on CPUs. Nothing tensor-sized travels over the gRPC control plane.
//
// Buffers are backend memory of the rank's backend (device pointers for CUDA). Calls
// are issued in the same order on every rank of the group and return once the
// operation has completed (Gloo's are blocking; NCCL's communicator waits for its
// stream, so that a dead peer becomes an error instead of a hang: see
// engine/comm/nccl/nccl_communicator.h). One communicator is used by one thread.
//
// CUDA graphs: a communicator whose operations run on the rank's stream (NCCL) may have
// them recorded into a graph (SupportsCapture). A call made while that stream captures
// only records the operation and returns; once the graph is replayed, AwaitEnqueued waits
// for it as each call waits for its own operation, failure watch included.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace orca {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Sums `count` float32 values at `data` across all ranks, in place.
  virtual absl::Status AllReduceSum(float* data, size_t count) = 0;
  // Sends `count` float32 values to rank `peer` (blocking semantics per backend).
  virtual absl::Status Send(const float* data, size_t count, int peer) = 0;
  // Receives `count` float32 values from rank `peer` into `data`.
  virtual absl::Status Recv(float* data, size_t count, int peer) = 0;

  // Whether a CUDA graph may record this communicator's operations (see above). Gloo's
  // run on the host: no.
  virtual bool SupportsCapture() const { return false; }
  // Waits until the device has run everything enqueued on the rank's stream so far (the
  // operations of a replayed graph among them), with the failure handling of an
  // operation's own wait. Communicators whose calls complete before they return: OK.
  virtual absl::Status AwaitEnqueued() { return absl::OkStatus(); }
};

}  // namespace orca
