#include "engine/comm/nccl/nccl_communicator.h"

#include <nccl.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_status.h"

namespace orca {
namespace cuda_internal {

// ORCA_CUDA_STATUS for NCCL results (see engine/backend/cuda/cuda_status.h).
absl::Status ToStatus(ncclResult_t code, const char* call, const char* file, int line) {
  if (code == ncclSuccess || code == ncclInProgress) return absl::OkStatus();
  std::string msg =
      absl::StrCat("NCCL error in ", call, ": ", ncclGetErrorString(code), " at ", file, ":", line);
  if (code == ncclInvalidArgument || code == ncclInvalidUsage)
    return absl::InvalidArgumentError(msg);
  if (code == ncclRemoteError || code == ncclSystemError) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

}  // namespace cuda_internal

namespace {

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int world_size, int device, cudaStream_t stream)
      : comm_(comm), rank_(rank), world_size_(world_size), device_(device), stream_(stream) {}
  ~NcclCommunicator() override {
    (void)cudaSetDevice(device_);
    (void)cudaStreamSynchronize(stream_);
    (void)ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  absl::Status AllReduceSum(float* data, size_t count) override {
    ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    ORCA_CUDA_RETURN_IF_ERROR(
        ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm_, stream_));
    return AsyncError();
  }

  absl::Status Send(const float* data, size_t count, int peer) override {
    if (peer < 0 || peer >= world_size_ || peer == rank_) return BadPeer(peer);
    ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    ORCA_CUDA_RETURN_IF_ERROR(ncclSend(data, count, ncclFloat32, peer, comm_, stream_));
    return AsyncError();
  }

  absl::Status Recv(float* data, size_t count, int peer) override {
    if (peer < 0 || peer >= world_size_ || peer == rank_) return BadPeer(peer);
    ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    ORCA_CUDA_RETURN_IF_ERROR(ncclRecv(data, count, ncclFloat32, peer, comm_, stream_));
    return AsyncError();
  }

 private:
  // Errors a peer or the network raised since the last call (a failed or aborted rank).
  absl::Status AsyncError() {
    ncclResult_t async = ncclSuccess;
    ORCA_CUDA_RETURN_IF_ERROR(ncclCommGetAsyncError(comm_, &async));
    return ORCA_CUDA_STATUS(async);
  }
  absl::Status BadPeer(int peer) const {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl rank ", rank_, ": peer ", peer, " invalid in a group of ", world_size_));
  }

  ncclComm_t comm_;
  int rank_;
  int world_size_;
  int device_;
  cudaStream_t stream_;
};

}  // namespace

absl::StatusOr<std::string> NewNcclUniqueId() {
  ncclUniqueId id;
  ORCA_CUDA_RETURN_IF_ERROR(ncclGetUniqueId(&id));
  return std::string(id.internal, sizeof(id.internal));
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const std::string& unique_id,
                                                                     int rank, int world_size,
                                                                     int device,
                                                                     cudaStream_t stream) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof(id.internal)) {
    return absl::InvalidArgumentError(absl::StrCat("NCCL unique id has ", unique_id.size(),
                                                   " bytes, want ", sizeof(id.internal)));
  }
  if (world_size <= 0 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("NCCL rank ", rank, " invalid in a group of ", world_size));
  }
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  ncclComm_t comm = nullptr;
  ORCA_CUDA_RETURN_IF_ERROR(ncclCommInitRank(&comm, world_size, id, rank));
  return std::unique_ptr<Communicator>(
      new NcclCommunicator(comm, rank, world_size, device, stream));
}

}  // namespace orca
