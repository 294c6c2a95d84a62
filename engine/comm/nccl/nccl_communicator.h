// NcclCommunicator: the Communicator of a GPU serving group (DESIGN.md section 4):
// tensor-parallel all-reduce and pipeline send/recv of float32 activations over NCCL,
// enqueued on the rank's CUDA backend stream so they order with its kernels.
//
// Bootstrap: one rank (the scheduler, in practice) calls NewNcclUniqueId() and ships
// the bytes to every rank in GroupInit; each rank then calls CreateNcclCommunicator with
// them. Creation blocks until all `world_size` ranks have joined. Calls return once the
// operation is enqueued; a later Synchronize/CopyToHost on the backend observes the
// result. Errors (including asynchronous ones NCCL reports) become Status values naming
// the call. One communicator is used by one thread.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/comm/communicator.h"

namespace orca {

// Returns a fresh NCCL unique id as opaque bytes (NCCL_UNIQUE_ID_BYTES long).
absl::StatusOr<std::string> NewNcclUniqueId();

// Joins the NCCL group identified by `unique_id` (from NewNcclUniqueId) as `rank` of
// `world_size`, on CUDA device `device`, issuing every operation on `stream` (the
// rank's CudaBackend::stream(), which must outlive the communicator). Fails with
// InvalidArgument on a malformed id or rank, or with the NCCL error of the failing call.
absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const std::string& unique_id,
                                                                     int rank, int world_size,
                                                                     int device,
                                                                     cudaStream_t stream);

}  // namespace orca
