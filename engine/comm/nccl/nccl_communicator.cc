#include "engine/comm/nccl/nccl_communicator.h"

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/backend/cuda/cuda_status.h"
#include "engine/common/status_macros.h"

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

using Clock = std::chrono::steady_clock;

// How an operation's completion is awaited: spinning (yielding) for the first
// microseconds, which covers a decode step's all-reduce on a GPU, then sleeping with a
// doubling interval up to 1 ms, so a long or stuck operation costs the host nothing.
constexpr auto kSpinFor = std::chrono::microseconds(50);
constexpr auto kFirstSleep = std::chrono::microseconds(20);
constexpr auto kLongestSleep = std::chrono::milliseconds(1);
// The longest wait, after an abort, for the stream to pass the aborted operation.
constexpr auto kDrainFor = std::chrono::seconds(10);

bool IsSet(const std::atomic<bool>* flag) { return flag != nullptr && flag->load(); }

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, cudaEvent_t done, int rank, int world_size,
                   const NcclCommOptions& options)
      : comm_(comm), done_(done), rank_(rank), world_size_(world_size), options_(options) {}
  ~NcclCommunicator() override {
    (void)cudaSetDevice(options_.device);
    // A cancelled session means the group was reset: peers may be gone, and only an
    // abort is sure not to wait for them.
    if (comm_ != nullptr) {
      if (IsSet(options_.cancel)) {
        (void)ncclCommAbort(comm_);
      } else {
        (void)ncclCommDestroy(comm_);
      }
    }
    (void)cudaEventDestroy(done_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  absl::Status AllReduceSum(float* data, size_t count) override {
    ORCA_RETURN_IF_ERROR(Ready());
    return Complete({"all-reduce", count, -1},
                    ORCA_CUDA_STATUS(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm_,
                                                   options_.stream)));
  }

  absl::Status Send(const float* data, size_t count, int peer) override {
    if (peer < 0 || peer >= world_size_ || peer == rank_) return BadPeer(peer);
    ORCA_RETURN_IF_ERROR(Ready());
    return Complete({"send", count, peer}, ORCA_CUDA_STATUS(ncclSend(data, count, ncclFloat32, peer,
                                                                     comm_, options_.stream)));
  }

  absl::Status Recv(float* data, size_t count, int peer) override {
    if (peer < 0 || peer >= world_size_ || peer == rank_) return BadPeer(peer);
    ORCA_RETURN_IF_ERROR(Ready());
    return Complete(
        {"receive", count, peer},
        ORCA_CUDA_STATUS(ncclRecv(data, count, ncclFloat32, peer, comm_, options_.stream)));
  }

  bool SupportsCapture() const override { return true; }

  absl::Status AwaitEnqueued() override {
    ORCA_RETURN_IF_ERROR(Ready());
    return AwaitCompletion({"the operations of a replayed CUDA graph", 0, -1});
  }

 private:
  // An operation, named in errors only (so the hot path builds no strings).
  struct Op {
    const char* kind;
    size_t count;
    int peer;  // -1: a collective
    std::string Describe() const {
      if (count == 0) return kind;
      return peer < 0
                 ? absl::StrCat(kind, " of ", count, " floats")
                 : absl::StrCat(kind, " of ", count, " floats ",
                                std::strcmp(kind, "send") == 0 ? "to" : "from", " rank ", peer);
    }
  };

  // OK when an operation may be issued: the communicator is intact and the calling
  // thread has its device selected.
  absl::Status Ready() {
    if (comm_ == nullptr) return Broken();
    if (absl::Status s = ORCA_CUDA_STATUS(cudaSetDevice(options_.device)); !s.ok()) {
      return Abort("selecting the device", s);
    }
    return absl::OkStatus();
  }

  // Given the status of enqueueing `op`: waits for it to complete. A failed enqueue
  // aborts the communicator too, since the peers have enqueued their side and wait.
  // While the stream captures, `op` was only recorded into a graph: nothing to wait for,
  // and no peer waits on a failure to record it.
  absl::Status Complete(const Op& op, const absl::Status& enqueued) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(options_.stream, &capture) == cudaSuccess &&
        capture != cudaStreamCaptureStatusNone) {
      if (enqueued.ok()) return absl::OkStatus();
      return absl::Status(enqueued.code(),
                          absl::StrCat("nccl rank ", rank_, " of ", world_size_, ": recording ",
                                       op.Describe(), " into a CUDA graph: ", enqueued.message()));
    }
    if (!enqueued.ok()) return Abort(op.Describe(), enqueued);
    return AwaitCompletion(op);
  }

  // Waits until everything enqueued on the stream so far (the operation `op`) has
  // completed; aborts on an asynchronous NCCL error, a cancellation or the timeout.
  absl::Status AwaitCompletion(const Op& op) {
    if (absl::Status s = ORCA_CUDA_STATUS(cudaEventRecord(done_, options_.stream)); !s.ok()) {
      return Abort(op.Describe(), s);
    }
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + absl::ToChronoNanoseconds(options_.timeout);
    auto sleep = kFirstSleep;
    while (true) {
      const cudaError_t state = cudaEventQuery(done_);
      if (state == cudaSuccess) return absl::OkStatus();
      if (state != cudaErrorNotReady) {
        return Abort(op.Describe(), ORCA_CUDA_STATUS(state));
      }
      ncclResult_t async = ncclSuccess;
      if (absl::Status s = ORCA_CUDA_STATUS(ncclCommGetAsyncError(comm_, &async)); !s.ok()) {
        return Abort(op.Describe(), s);
      }
      if (async != ncclSuccess && async != ncclInProgress) {
        return Abort(op.Describe(), absl::UnavailableError(
                                        absl::StrCat("NCCL reported ", ncclGetErrorString(async),
                                                     " (a peer failed or left the group)")));
      }
      if (IsSet(options_.cancel)) {
        return Abort(op.Describe(),
                     absl::UnavailableError("abandoned: the serving group was reset"));
      }
      const Clock::time_point now = Clock::now();
      if (now >= deadline) {
        return Abort(op.Describe(),
                     absl::UnavailableError(absl::StrCat("not complete after ",
                                                         absl::FormatDuration(options_.timeout),
                                                         " (a peer is gone or stalled)")));
      }
      if (now - start < kSpinFor) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(sleep);
        sleep = std::min<std::chrono::microseconds>(sleep * 2, kLongestSleep);
      }
    }
  }

  // Aborts the communicator (ending whatever of it still runs on the device) and
  // returns the failure of `op`, as Unavailable unless it is an internal error.
  absl::Status Abort(const std::string& op, const absl::Status& why) {
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
    DrainStream();
    const std::string msg = absl::StrCat("nccl rank ", rank_, " of ", world_size_, ": ", op,
                                         " failed: ", why.message());
    failure_ = absl::IsInternal(why) || absl::IsInvalidArgument(why) ? absl::InternalError(msg)
                                                                     : absl::UnavailableError(msg);
    return failure_;
  }

  // Waits (bounded) until the stream has passed the aborted operation, and takes the
  // failure that operation may leave on it: the backend outlives the communicator (the
  // rank's next generation reuses it), and its next Synchronize must report its own
  // errors, not this one. Nothing of the aborted operation touches memory afterwards.
  void DrainStream() {
    const Clock::time_point deadline = Clock::now() + kDrainFor;
    while (cudaStreamQuery(options_.stream) == cudaErrorNotReady && Clock::now() < deadline) {
      std::this_thread::sleep_for(kLongestSleep);
    }
    if (cudaStreamQuery(options_.stream) != cudaErrorNotReady) {
      (void)cudaStreamSynchronize(options_.stream);
    }
    (void)cudaGetLastError();
  }

  absl::Status Broken() const {
    return absl::UnavailableError(absl::StrCat("nccl rank ", rank_, " of ", world_size_,
                                               ": the communicator was aborted after an "
                                               "earlier failure (",
                                               failure_.message(), ")"));
  }

  absl::Status BadPeer(int peer) const {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl rank ", rank_, ": peer ", peer, " invalid in a group of ", world_size_));
  }

  ncclComm_t comm_;  // null once aborted (broken)
  cudaEvent_t done_;
  int rank_;
  int world_size_;
  NcclCommOptions options_;
  absl::Status failure_;  // why the communicator was aborted
};

// ncclCommInitRank blocks until every rank has joined, with no timeout of its own, and
// cannot be interrupted. It runs on a thread of its own so that a rank whose peers never
// come (one failed before joining) gives up after `options.timeout` or a cancellation;
// the abandoned thread aborts the communicator should it ever form.
absl::StatusOr<ncclComm_t> InitRank(const ncclUniqueId& id, int rank, int world_size,
                                    const NcclCommOptions& options) {
  struct State {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    bool abandoned ABSL_GUARDED_BY(mu) = false;
    ncclComm_t comm ABSL_GUARDED_BY(mu) = nullptr;
    absl::Status status ABSL_GUARDED_BY(mu);
  };
  auto state = std::make_shared<State>();
  const int device = options.device;
  std::thread([state, id, rank, world_size, device] {
    ncclComm_t comm = nullptr;
    absl::Status s = ORCA_CUDA_STATUS(cudaSetDevice(device));
    if (s.ok()) s = ORCA_CUDA_STATUS(ncclCommInitRank(&comm, world_size, id, rank));
    absl::MutexLock lock(&state->mu);
    if (state->abandoned) {
      if (comm != nullptr) (void)ncclCommAbort(comm);
      return;
    }
    state->done = true;
    state->comm = comm;
    state->status = std::move(s);
  }).detach();

  const absl::Time deadline = absl::Now() + options.timeout;
  absl::MutexLock lock(&state->mu);
  while (!state->done) {
    const bool cancelled = IsSet(options.cancel);
    if (cancelled || absl::Now() >= deadline) {
      state->abandoned = true;
      return absl::UnavailableError(
          absl::StrCat("nccl rank ", rank, " of ", world_size, ": the group did not form ",
                       cancelled ? "(the serving group was reset)"
                                 : absl::StrCat("within ", absl::FormatDuration(options.timeout))));
    }
    state->mu.AwaitWithTimeout(absl::Condition(&state->done), absl::Milliseconds(10));
  }
  if (!state->status.ok()) {
    if (state->comm != nullptr) (void)ncclCommAbort(state->comm);
    return state->status;
  }
  return state->comm;
}

}  // namespace

absl::StatusOr<std::string> NewNcclUniqueId() {
  ncclUniqueId id;
  ORCA_CUDA_RETURN_IF_ERROR(ncclGetUniqueId(&id));
  return std::string(id.internal, sizeof(id.internal));
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    const std::string& unique_id, int rank, int world_size, const NcclCommOptions& options) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof(id.internal)) {
    return absl::InvalidArgumentError(absl::StrCat("NCCL unique id has ", unique_id.size(),
                                                   " bytes, want ", sizeof(id.internal)));
  }
  if (world_size <= 0 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("NCCL rank ", rank, " invalid in a group of ", world_size));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the NCCL timeout must be positive");
  }
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  ORCA_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  cudaEvent_t done = nullptr;
  ORCA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  absl::StatusOr<ncclComm_t> comm = InitRank(id, rank, world_size, options);
  if (!comm.ok()) {
    (void)cudaEventDestroy(done);
    return comm.status();
  }
  return std::unique_ptr<Communicator>(
      new NcclCommunicator(*comm, done, rank, world_size, options));
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const std::string& unique_id,
                                                                     int rank, int world_size,
                                                                     int device,
                                                                     cudaStream_t stream) {
  NcclCommOptions options;
  options.device = device;
  options.stream = stream;
  return CreateNcclCommunicator(unique_id, rank, world_size, options);
}

}  // namespace orca
