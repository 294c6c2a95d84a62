// NcclCommunicator: the Communicator of a GPU serving group (DESIGN.md section 4):
// tensor-parallel all-reduce and pipeline send/recv of float32 activations over NCCL,
// enqueued on the rank's CUDA backend stream so they order with its kernels.
//
// Bootstrap: one process (the scheduler, in practice) calls NewNcclUniqueId() and ships
// the bytes to every rank in GroupInit; each rank then calls CreateNcclCommunicator with
// them. Creation blocks until all `world_size` ranks have joined, at most
// `options.timeout`.
//
// Every call returns once its operation has completed on the device (synchronous, as
// Gloo's are), not when it is enqueued. The reason is failure: when a peer dies, NCCL
// operations already enqueued never complete (the kernel waits for the peer forever)
// while ncclCommGetAsyncError may report the error, and only ncclCommAbort ends them. So
// after enqueueing, the call records an event on the stream and polls it, watching
// ncclCommGetAsyncError, `options.cancel` and `options.timeout` meanwhile (the job
// PyTorch's NCCL watchdog does on another thread). On an asynchronous error, a
// cancellation or a timeout the communicator is aborted and broken: the call returns
// Unavailable naming the operation and peer, and every later call fails at once with
// Unavailable. The caller (a worker) reports the rank failed; the group re-forms with
// fresh communicators. The price is one host wait per operation (the host cannot queue
// kernels beyond a collective), small next to a decode step's all-reduce count.
//
// CUDA graphs (SupportsCapture: yes): a call made while options.stream captures only
// records its operation and returns at once (nothing runs, so nothing is awaited, and a
// failure to record is returned without aborting: no peer waits on it). After replaying
// such a graph the caller calls AwaitEnqueued, which waits for the stream exactly as a
// call waits for its own operation (the same watch, abort and Unavailable error).
//
// Errors are Status values naming the call; none is InvalidArgument once an operation
// was enqueued, since the peers are then waiting on it. One communicator is used by one
// thread at a time; `options.cancel` may be set from any thread.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/communicator.h"

namespace orca {

struct NcclCommOptions {
  int device = 0;                 // CUDA ordinal of this rank
  cudaStream_t stream = nullptr;  // the rank's CudaBackend::stream(); must outlive the
                                  // communicator
  // Longest wait for the other ranks to join, and for each operation to complete.
  absl::Duration timeout = absl::Seconds(60);
  // When non-null and it turns true (the rank's control-plane session ended), set-up and
  // the operation in progress give up at once, as on a timeout. Must outlive the
  // communicator.
  const std::atomic<bool>* cancel = nullptr;
};

// Returns a fresh NCCL unique id as opaque bytes (NCCL_UNIQUE_ID_BYTES long). Under real
// NCCL the calling process hosts the id's bootstrap root (a listening socket) until the
// ranks have connected to it.
absl::StatusOr<std::string> NewNcclUniqueId();

// Joins the NCCL group identified by `unique_id` (from NewNcclUniqueId) as `rank` of
// `world_size` on `options.device`, issuing every operation on `options.stream`. Fails
// with InvalidArgument on a malformed id or rank, Unavailable when the group does not
// form within `options.timeout` or is cancelled, or with the CUDA or NCCL error of the
// failing call.
absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    const std::string& unique_id, int rank, int world_size, const NcclCommOptions& options);

// The same with the default timeout and no cancellation.
absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const std::string& unique_id,
                                                                     int rank, int world_size,
                                                                     int device,
                                                                     cudaStream_t stream);

}  // namespace orca
