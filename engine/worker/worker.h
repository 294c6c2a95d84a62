// WorkerRank: one rank of a serving group (DESIGN.md section 4), the role `orca worker`
// runs once per rank it hosts. It dials the scheduler's control plane
// (orca.v1.ControlPlane/Join), announces its stage and tp rank, and on GroupInit builds
// its backend, its communicators (Gloo, rendezvousing through the scheduler; or NCCL on
// the CUDA backend's stream, from the unique ids in GroupInit) and its model shard;
// then it executes every plan the scheduler streams, in order, and (when it is the
// sampling rank) returns the sampled tokens. Throughout a session a thread of its own
// sends heartbeats (a repeated WorkerReady), also while the rank computes or waits on
// the data plane: the scheduler's evidence that the process is alive (a stopped one
// keeps its connection open). The scheduler's messages are read on a
// thread of their own, so a session that ends while the rank waits on the data plane
// cancels that wait (NCCL; Gloo's own timeout and TCP errors end it). When the session
// breaks (the scheduler restarts, another rank is lost) it drops the communicators and
// dials again; the loaded shard is kept when the next generation has the same layout.
//
// Lifecycle (docs/distributed.md): progress() reports whether the rank is in a group and
// which plan it executes since when (WorkerHealth turns that into /health, /ready and the
// join timeout). Drain() lets a rank in a group go on executing plans until the scheduler
// ends its session (the scheduler drains first), then Run() returns; a rank not in a
// group returns at once. Stop() ends the session now.
//
// Authentication: with a control_token every call to the scheduler (Join, the Gloo
// rendezvous store) carries `authorization: Bearer <token>`. A scheduler that refuses it
// (UNAUTHENTICATED: a wrong or missing token on either side) ends Run() at once with an
// error saying "control-plane token refused": dialing again cannot fix it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/backend/backend.h"
#include "engine/comm/communicator.h"
#include "engine/config/engine_config.h"
#include "engine/runner/model_runner.h"
#include "engine/worker/worker_health.h"

namespace grpc {
class ClientContext;
}

namespace orca {

struct WorkerOptions {
  std::string scheduler;  // host:port of the scheduler's control plane
  ModelOptions model;     // dir and dtype
  int32_t stage = 0;
  int32_t tp_rank = 0;
  DeviceOptions device;  // this rank's: threads its share, index its GPU
  std::string host;      // address peers reach this rank's data plane at; "" = hostname
  std::string name;      // for the scheduler's logs
  // The shared control-plane token (parallelism.control_token_file's content); "" = none.
  std::string control_token;
  absl::Duration retry = absl::Seconds(1);  // between dial attempts
  // Between heartbeats; well below the scheduler's rank deadline (10 s by default).
  absl::Duration heartbeat = absl::Milliseconds(500);
  // Tests: called before each heartbeat and before each arriving plan is queued (on the
  // session's heartbeat and reader threads); blocking it stands for a stopped process.
  // Null in production.
  std::function<void()> pause_hook;
};

class WorkerRank {
 public:
  explicit WorkerRank(WorkerOptions options);
  ~WorkerRank();

  // Serves sessions until Stop() or, after Drain(), until its session ends. Returns the
  // error that makes going on pointless (the model cannot be loaded, the shard does not
  // fit the model), OK after Stop() or Drain().
  absl::Status Run();
  // Ends Run() soon (the current session is cancelled). Thread-safe.
  void Stop();
  // Ends Run() once the current session ends, without dialing again: a rank in a group
  // keeps executing its plans until the scheduler ends the session; one dialing or
  // waiting for its group to form stops at once. Thread-safe.
  void Drain();

  // Returns the rank's progress now (for WorkerHealth). Thread-safe.
  RankProgress progress() const;
  // Returns why the last session ended or could not start ("" if none did). Thread-safe.
  std::string last_error() const;
  const WorkerOptions& options() const { return options_; }

  bool ready() const { return ready_.load(); }
  int64_t iterations() const { return iterations_.load(); }
  // Iterations this rank replayed from CUDA graphs (ModelRunner::graph_replays), over
  // its runners so far.
  int64_t graph_replays() const { return graph_replays_.load(); }
  // The type its runner computes a layer's activations in (ModelRunner::activation_dtype;
  // F32 before the first runner).
  DType activation_dtype() const { return activation_dtype_.load(); }
  uint64_t generation() const { return generation_.load(); }

 private:
  // One Join call; returns when it ends. A non-OK status is logged and retried unless
  // it is InvalidArgument / NotFound / FailedPrecondition / Unimplemented / DataLoss /
  // Unauthenticated (configuration errors, corrupt model files, a refused token).
  absl::Status Session();
  // Records that the rank entered (or left) a group now.
  void SetInGroup(bool in_group);

  WorkerOptions options_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Communicator> tp_comm_;  // this stage's tensor-parallel ranks
  std::unique_ptr<Communicator> pp_comm_;  // the whole group: activations between stages
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> iterations_{0};
  std::atomic<int64_t> graph_replays_{0};
  std::atomic<DType> activation_dtype_{DType::kF32};
  std::atomic<uint64_t> generation_{0};
  // True once the current session's stream has ended: NCCL communicators give up.
  std::atomic<bool> session_ended_{false};
  // Progress (see progress()): written by the rank's thread, read by any.
  std::atomic<bool> in_group_{false};
  std::atomic<int64_t> since_ns_{0};         // Unix ns when in_group_ last changed
  std::atomic<int64_t> plan_started_ns_{0};  // Unix ns; 0: not executing a plan
  std::atomic<uint64_t> plan_{0};

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace orca
