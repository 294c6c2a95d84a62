// The device side of the NCCL twin's operations (cuda_twin/README.md): what one
// "kernel launch" — a single op, or the ops of one ncclGroupStart/End on one stream —
// does on the stream's device thread.
//
// A launch first sends everything it sends (never blocking on the peers, whose
// receivers buffer), then takes the messages it expects from each peer in arrival
// order, matching each to the launch's next op of the same kind (collectives among
// collectives, Send/Recv among Send/Recv), then completes the ops in call order.
// AllReduce: every rank sends its whole buffer to every peer and reduces all n buffers
// in rank order 0..n-1, so every rank gets bit-identical results (NCCL's ring or tree
// adds in another order, so its float results can differ in the last bits).
//
// A message that matches none of the launch's expected ops from that peer, or whose
// count, type, op or root differs, is a usage error: the mesh fails (ncclInvalidUsage,
// told to the peers) and the launch returns cudaErrorLaunchFailure. So does a launch on
// an aborted mesh. Thread-compatible: one launch per call.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <vector>

#include "cuda_twin/nccl_twin_transport.h"

namespace orca::cuda_twin {

enum class OpKind { kAllReduce, kBroadcast, kSend, kRecv };

// One enqueued NCCL op, as validated by the API.
struct CommOp {
  OpKind kind = OpKind::kAllReduce;
  const void* send = nullptr;  // AllReduce, Broadcast (root), Send
  void* recv = nullptr;        // AllReduce, Broadcast, Recv
  size_t count = 0;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclSum;  // AllReduce
  int peer = 0;              // Send/Recv: the peer; Broadcast: the root
};

// Returns the size of one element, or 0 for a type the twin does not reduce or move
// (the FP8 types).
size_t DataTypeSize(ncclDataType_t datatype);

// True for the built-in reductions the twin implements: sum, prod, max, min.
bool IsSupportedRedOp(ncclRedOp_t op);

// Runs one launch on the calling (device) thread; cudaSuccess or cudaErrorLaunchFailure.
cudaError_t RunLaunch(PeerMesh& mesh, const std::vector<CommOp>& ops);

}  // namespace orca::cuda_twin
