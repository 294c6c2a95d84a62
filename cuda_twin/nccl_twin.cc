// The NCCL twin (cuda_twin/README.md): host implementations of the NCCL calls orca
// makes, linked instead of libnccl. Ranks are processes or threads on one host joined
// over loopback TCP (nccl_twin_bootstrap.h, nccl_twin_transport.h); every op is
// enqueued on the caller's stream (orca::cuda_twin::Enqueue) and runs there as a
// "kernel" (nccl_twin_ops.h).
//
// Semantics kept from NCCL: arguments are checked at call time (buffers must be twin
// device memory of the communicator's device: else ncclInvalidArgument); ops inside
// ncclGroupStart/End are collected and launched at the outermost ncclGroupEnd, one
// launch per (communicator, stream), in call order; a dead peer turns into the async
// error ncclRemoteError while the op waiting for it stays blocked on its stream until
// ncclCommAbort (or ncclCommDestroy); ncclCommDestroy of a healthy communicator waits
// for its enqueued ops (of ops recorded into a CUDA graph, for the replays running).
// Ops on a capturing stream are recorded with the graph and run at each replay. Calls
// on an aborted or destroyed communicator return ncclInvalidUsage (the handle stays a
// valid tombstone; nothing is freed under it).
//
// Differences, by design: reductions in rank order (bit-identical on every rank); a
// mismatch between ranks (op kind, count, type) is detected and reported as
// ncclInvalidUsage where NCCL would hang or corrupt (each pair of ranks must exchange
// collectives and Send/Recv in the same order; NCCL tolerates a few reorderings across
// a group boundary that the twin rejects); ncclCommInitRank inside a group
// runs at once (it is not deferred to ncclGroupEnd); the config, split, register and
// FP8 parts of the API are absent.
//
// Thread-safe, as NCCL's API is (one thread per communicator at a time for ops).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cuda_twin/memory.h"
#include "cuda_twin/nccl_twin_bootstrap.h"
#include "cuda_twin/nccl_twin_ops.h"
#include "cuda_twin/nccl_twin_transport.h"
#include "cuda_twin/streams.h"

namespace orca::cuda_twin {

// One rank's communicator: shared by the handle and by every op still queued on a
// stream, so that ops outliving an abort find a closed mesh, not freed memory.
struct CommState {
  CommState(std::unique_ptr<PeerMesh> m, int d) : mesh(std::move(m)), device(d) {}
  const std::unique_ptr<PeerMesh> mesh;
  const int device;
  absl::Mutex mu;
  int in_flight ABSL_GUARDED_BY(mu) = 0;  // launches enqueued and not yet finished
};

}  // namespace orca::cuda_twin

// The opaque type nccl.h declares. `state` is null once aborted or destroyed.
struct ncclComm {
  std::shared_ptr<orca::cuda_twin::CommState> state;
};

namespace orca::cuda_twin {
namespace {

// Every handle ever made: live ones and tombstones, so a stale handle is recognised.
struct CommRegistry {
  absl::Mutex mu;
  absl::flat_hash_map<ncclComm*, std::unique_ptr<ncclComm>> all ABSL_GUARDED_BY(mu);
};

CommRegistry& Registry() {
  static CommRegistry* registry = new CommRegistry;  // never destroyed: used at exit
  return *registry;
}

absl::Mutex last_error_mu(absl::kConstInit);
std::string& LastErrorText() ABSL_EXCLUSIVE_LOCKS_REQUIRED(last_error_mu) {
  static std::string* text = new std::string;
  return *text;
}

ncclResult_t Fail(ncclResult_t result, const std::string& why) {
  absl::MutexLock lock(&last_error_mu);
  LastErrorText() = why;
  return result;
}

// Finds the live state of `comm`: ncclInvalidArgument for null or unknown handles,
// ncclInvalidUsage for aborted or destroyed ones.
ncclResult_t Lookup(ncclComm_t comm, const char* call, std::shared_ptr<CommState>* out) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, absl::StrCat(call, ": comm is null"));
  CommRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  auto it = r.all.find(comm);
  if (it == r.all.end()) {
    return Fail(ncclInvalidArgument, absl::StrCat(call, ": not a communicator"));
  }
  if (it->second->state == nullptr) {
    return Fail(ncclInvalidUsage,
                absl::StrCat(call, ": the communicator was aborted or destroyed"));
  }
  *out = it->second->state;
  return ncclSuccess;
}

// Makes `comm` a tombstone and returns its state (null when it already was one).
std::shared_ptr<CommState> Retire(ncclComm_t comm) {
  CommRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  auto it = r.all.find(comm);
  if (it == r.all.end()) return nullptr;
  return std::move(it->second->state);
}

ncclComm_t Register(std::shared_ptr<CommState> state) {
  auto handle = std::make_unique<ncclComm>();
  handle->state = std::move(state);
  ncclComm_t raw = handle.get();
  CommRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  r.all.emplace(raw, std::move(handle));
  return raw;
}

ncclResult_t InitRankOn(int device, ncclComm_t* comm, int nranks, const ncclUniqueId& id,
                        int rank) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, "ncclCommInitRank: comm is null");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return Fail(ncclInvalidArgument,
                absl::StrCat("ncclCommInitRank: rank ", rank, " invalid for nranks ", nranks));
  }
  std::vector<int> fds;
  std::string error;
  const ncclResult_t joined = JoinGroup(id, nranks, rank, &fds, &error);
  if (joined != ncclSuccess) return Fail(joined, absl::StrCat("ncclCommInitRank: ", error));
  *comm =
      Register(std::make_shared<CommState>(std::make_unique<PeerMesh>(rank, nranks, fds), device));
  return ncclSuccess;
}

// Counts a launch as in flight from enqueue until it ran — or until the stream dropped
// it without running it, so ncclCommDestroy never waits for ever on a lost launch.
class InFlight {
 public:
  explicit InFlight(std::shared_ptr<CommState> state) : state_(std::move(state)) {
    absl::MutexLock lock(&state_->mu);
    ++state_->in_flight;
  }
  ~InFlight() { Done(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  void Done() {
    if (done_) return;
    done_ = true;
    absl::MutexLock lock(&state_->mu);
    --state_->in_flight;
  }
  CommState& state() { return *state_; }

 private:
  std::shared_ptr<CommState> state_;
  bool done_ = false;
};

ncclResult_t Launch(const std::shared_ptr<CommState>& state, cudaStream_t stream,
                    std::vector<CommOp> ops) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(stream, &capture);
  if (e == cudaSuccess && capture != cudaStreamCaptureStatusNone) {
    // Recorded into a graph that may run any number of times, or never: each run counts
    // itself while it runs (a run still queued when the communicator goes finds its
    // state kept alive here, its mesh closed).
    e = Enqueue(stream, [state, ops = std::move(ops)]() {
      InFlight flight(state);
      return RunLaunch(*state->mesh, ops);
    });
  } else if (e == cudaSuccess) {
    auto flight = std::make_shared<InFlight>(state);
    e = Enqueue(stream, [flight, ops = std::move(ops)]() {
      const cudaError_t result = RunLaunch(*flight->state().mesh, ops);
      flight->Done();
      return result;
    });
  }
  if (e != cudaSuccess) {
    return Fail(ncclUnhandledCudaError,
                absl::StrCat("enqueue on stream failed: ", cudaGetErrorString(e)));
  }
  return ncclSuccess;
}

// Ops collected between ncclGroupStart and the outermost ncclGroupEnd, per thread.
struct PendingOp {
  std::shared_ptr<CommState> state;
  cudaStream_t stream;
  CommOp op;
};
thread_local int group_depth = 0;
thread_local std::vector<PendingOp> group_ops;

// Checks that `bytes` at `p` are device memory of `device`.
bool OnDevice(const void* p, size_t bytes, int device) {
  return bytes == 0 || (IsDeviceRange(p, bytes) && DeviceOfPointer(p) == device);
}

// Validates an op against its communicator and stream, then launches it (or keeps it
// for ncclGroupEnd).
ncclResult_t Submit(const char* call, ncclComm_t comm, cudaStream_t stream, CommOp op) {
  std::shared_ptr<CommState> state;
  if (const ncclResult_t r = Lookup(comm, call, &state); r != ncclSuccess) return r;
  const size_t size = DataTypeSize(op.datatype);
  if (size == 0) {
    return Fail(ncclInvalidArgument, absl::StrCat(call, ": unsupported datatype ", op.datatype));
  }
  if (op.kind == OpKind::kAllReduce && !IsSupportedRedOp(op.op)) {
    return Fail(ncclInvalidArgument, absl::StrCat(call, ": unsupported reduction op ", op.op));
  }
  const int nranks = state->mesh->nranks();
  if (op.kind != OpKind::kAllReduce && (op.peer < 0 || op.peer >= nranks)) {
    return Fail(ncclInvalidArgument,
                absl::StrCat(call, ": peer/root ", op.peer, " out of range for nranks ", nranks));
  }
  const size_t bytes = op.count * size;
  const bool reads = op.kind == OpKind::kAllReduce || op.kind == OpKind::kSend ||
                     (op.kind == OpKind::kBroadcast && op.peer == state->mesh->rank());
  const bool writes = op.kind != OpKind::kSend;
  if ((reads && !OnDevice(op.send, bytes, state->device)) ||
      (writes && !OnDevice(op.recv, bytes, state->device))) {
    return Fail(ncclInvalidArgument, absl::StrCat(call, ": buffers must be ", bytes,
                                                  " bytes of device memory on device ",
                                                  state->device, " (the communicator's)"));
  }
  const int stream_device = StreamDevice(stream);
  if (stream_device != state->device) {
    return Fail(stream_device < 0 ? ncclUnhandledCudaError : ncclInvalidArgument,
                absl::StrCat(call, ": the stream belongs to device ", stream_device,
                             ", the communicator to device ", state->device));
  }
  if (const ncclResult_t async = state->mesh->async_error(); async != ncclSuccess) {
    return Fail(async, absl::StrCat(call, ": ", state->mesh->async_error_text()));
  }
  if (group_depth > 0) {
    group_ops.push_back(PendingOp{std::move(state), stream, op});
    return ncclSuccess;
  }
  return Launch(state, stream, {op});
}

}  // namespace
}  // namespace orca::cuda_twin

using orca::cuda_twin::CommOp;
using orca::cuda_twin::CommState;
using orca::cuda_twin::Fail;
using orca::cuda_twin::Lookup;
using orca::cuda_twin::OpKind;
using orca::cuda_twin::Submit;

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return Fail(ncclInvalidArgument, "ncclGetVersion: version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (unique_id == nullptr) return Fail(ncclInvalidArgument, "ncclGetUniqueId: id is null");
  std::string error;
  const ncclResult_t r = orca::cuda_twin::CreateRoot(unique_id, &error);
  return r == ncclSuccess ? r : Fail(r, absl::StrCat("ncclGetUniqueId: ", error));
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id, int rank) {
  return orca::cuda_twin::InitRankOn(orca::cuda_twin::CurrentDevice(), comm, nranks, comm_id, rank);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (comms == nullptr || ndev < 1)
    return Fail(ncclInvalidArgument, "ncclCommInitAll: bad arguments");
  ncclUniqueId id;
  if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) return r;
  std::vector<ncclResult_t> results(static_cast<size_t>(ndev), ncclSuccess);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    const int device = devlist == nullptr ? i : devlist[i];
    threads.emplace_back([&, i, device] {
      results[static_cast<size_t>(i)] = orca::cuda_twin::InitRankOn(device, &comms[i], ndev, id, i);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[static_cast<size_t>(i)] == ncclSuccess) continue;
    for (int j = 0; j < ndev; ++j) {
      if (results[static_cast<size_t>(j)] == ncclSuccess) (void)ncclCommAbort(comms[j]);
    }
    return results[static_cast<size_t>(i)];
  }
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  std::shared_ptr<CommState> state;
  if (const ncclResult_t r = Lookup(comm, "ncclCommDestroy", &state); r != ncclSuccess) return r;
  // Wait for the enqueued ops, unless the communicator failed: then they may never
  // finish, and destroying it means aborting it.
  bool healthy = true;
  for (;;) {
    if (state->mesh->async_error() != ncclSuccess) {
      healthy = false;
      break;
    }
    absl::MutexLock lock(&state->mu);
    if (state->mu.AwaitWithTimeout(
            absl::Condition(
                +[](CommState* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->in_flight == 0; },
                state.get()),
            absl::Milliseconds(50))) {
      break;
    }
  }
  if (orca::cuda_twin::Retire(comm) == nullptr) {
    return Fail(ncclInvalidUsage, "ncclCommDestroy: the communicator was destroyed concurrently");
  }
  if (healthy) {
    state->mesh->Close();
  } else {
    state->mesh->Abort();
  }
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  std::shared_ptr<CommState> state;
  if (const ncclResult_t r = Lookup(comm, "ncclCommAbort", &state); r != ncclSuccess) return r;
  (void)orca::cuda_twin::Retire(comm);
  state->mesh->Abort();  // wakes blocked ops; they fail their streams
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  std::shared_ptr<CommState> state;
  if (const ncclResult_t r = Lookup(comm, "ncclCommGetAsyncError", &state); r != ncclSuccess) {
    return r;
  }
  if (async_error == nullptr) return Fail(ncclInvalidArgument, "ncclCommGetAsyncError: null");
  *async_error = state->mesh->async_error();
  if (*async_error != ncclSuccess) Fail(*async_error, state->mesh->async_error_text());
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  std::shared_ptr<CommState> state;
  if (const ncclResult_t r = Lookup(comm, "ncclCommCount", &state); r != ncclSuccess) return r;
  if (count == nullptr) return Fail(ncclInvalidArgument, "ncclCommCount: null");
  *count = state->mesh->nranks();
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  std::shared_ptr<CommState> state;
  if (const ncclResult_t r = Lookup(comm, "ncclCommCuDevice", &state); r != ncclSuccess) return r;
  if (device == nullptr) return Fail(ncclInvalidArgument, "ncclCommCuDevice: null");
  *device = state->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  std::shared_ptr<CommState> state;
  if (const ncclResult_t r = Lookup(comm, "ncclCommUserRank", &state); r != ncclSuccess) return r;
  if (rank == nullptr) return Fail(ncclInvalidArgument, "ncclCommUserRank: null");
  *rank = state->mesh->rank();
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  CommOp o;
  o.kind = OpKind::kAllReduce;
  o.send = sendbuff;
  o.recv = recvbuff;
  o.count = count;
  o.datatype = datatype;
  o.op = op;
  return Submit("ncclAllReduce", comm, stream, o);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  CommOp o;
  o.kind = OpKind::kBroadcast;
  o.send = sendbuff;
  o.recv = recvbuff;
  o.count = count;
  o.datatype = datatype;
  o.peer = root;
  return Submit("ncclBroadcast", comm, stream, o);
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  CommOp o;
  o.kind = OpKind::kSend;
  o.send = sendbuff;
  o.count = count;
  o.datatype = datatype;
  o.peer = peer;
  return Submit("ncclSend", comm, stream, o);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  CommOp o;
  o.kind = OpKind::kRecv;
  o.recv = recvbuff;
  o.count = count;
  o.datatype = datatype;
  o.peer = peer;
  return Submit("ncclRecv", comm, stream, o);
}

ncclResult_t ncclGroupStart() {
  if (orca::cuda_twin::group_depth++ == 0) orca::cuda_twin::group_ops.clear();
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  using orca::cuda_twin::group_depth;
  using orca::cuda_twin::PendingOp;
  if (group_depth == 0) return Fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group_depth > 0) return ncclSuccess;
  std::vector<PendingOp> pending = std::move(orca::cuda_twin::group_ops);
  orca::cuda_twin::group_ops.clear();
  // One launch per (communicator, stream), in the order of each's first op.
  ncclResult_t result = ncclSuccess;
  std::vector<bool> taken(pending.size(), false);
  for (size_t i = 0; i < pending.size(); ++i) {
    if (taken[i]) continue;
    std::vector<CommOp> ops;
    for (size_t j = i; j < pending.size(); ++j) {
      if (!taken[j] && pending[j].state == pending[i].state &&
          pending[j].stream == pending[i].stream) {
        taken[j] = true;
        ops.push_back(pending[j].op);
      }
    }
    const ncclResult_t r =
        orca::cuda_twin::Launch(pending[i].state, pending[i].stream, std::move(ops));
    if (result == ncclSuccess) result = r;
  }
  return result;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t /*comm*/) {
  // NCCL keeps the last error per process and ignores `comm`; the returned text stays
  // valid in the calling thread until its next call.
  thread_local std::string copy;
  absl::MutexLock lock(&orca::cuda_twin::last_error_mu);
  copy = orca::cuda_twin::LastErrorText();
  return copy.c_str();
}

}  // extern "C"
