// GroupExecutor: the scheduler's side of a serving group (DESIGN.md section 4). It
// serves orca.v1.ControlPlane (proto/orca/v1/control.proto): workers dial it and join
// as (stage, tp rank); once all pipeline × tensor ranks are present it sends each a
// GroupInit (layout, KV cache size, and the data plane of this generation: on CPUs the
// Gloo rendezvous prefix, for the key-value store it hosts; on CUDA fresh NCCL unique
// ids, one for the whole group and one per stage). When every rank has reported
// ready the group is ready, and every plan is sent to every rank at once; the sampling
// rank (last stage, tp rank 0) returns the tokens. Up to `pipeline` plans are in flight.
//
// Liveness: every rank sends a heartbeat every fraction of a second for its whole
// session, from a thread of its own, also while it computes or waits on the data plane
// (a WorkerReady of the current generation sent again: the control protocol has no
// message of its own for it yet). A rank of a ready group not heard from within
// `rank_deadline_s` is unresponsive: a stopped or frozen process keeps its TCP
// connection (keepalive notices only after ~20 s), and it may have taken the plan
// before it stopped, so neither the stream nor the plans give it away. The group breaks,
// every session ends, and the unresponsive-rank handler is told, e.g. to kill that
// worker so its supervisor restarts it. So every plan has a deadline on each rank; a
// slow iteration is not unresponsiveness (its result is bounded by
// `iteration_timeout_s`).
//
// Failure: when a rank's stream breaks, a rank reports a fatal error, a rank misses the
// rank deadline, or a result is overdue, the group is broken: outstanding plans fail
// with Unavailable (the engine fails its running requests with a retriable error), the
// ranks' streams are ended so they re-dial with a fresh communicator, and the group
// re-initialises under a new generation when all ranks are back. Nothing waits forever.
//
// Authentication: with a control_token every call (Join, StoreSet, StoreGet) must carry
// it, else it fails UNAUTHENTICATED before it does anything (control_plane_guard.h).
//
// Submit/Wait are called by the engine thread; ready() and SetUnresponsiveRankHandler
// from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/common/trace.h"
#include "engine/config/engine_config.h"
#include "engine/core/executor.h"

namespace orca {

struct GroupExecutorOptions {
  std::string model_dir;             // read for the model's shape (config.json)
  ParallelOptions parallel;          // pipeline x tensor (control_port: see `listen`)
  Device device = Device::kCpu;      // what the workers must run on
  std::string listen = "0.0.0.0:0";  // control-plane address; port 0 picks one
  // Per rank, sized by KvCacheBlocks; or, where KvCacheSizedByMemory (CUDA, no size
  // given), by the ranks' device memory when the group first forms: each rank runs a
  // profiling pass at the scheduler's largest iteration (`scheduler.max_batched_tokens`
  // over `scheduler.max_batch_size` sequences), reports the blocks its memory leaves room
  // for, and every rank allocates the smallest count; num_kv_blocks() is 0 until then.
  // Later generations (a re-formed group) reuse that count.
  KvCacheOptions kv_cache;
  SchedulerOptions scheduler;
  int64_t max_model_len = 0;         // the longest sequence the cache must hold; 0: the model's
  double comm_timeout_s = 60;        // each data-plane operation on the workers
  double iteration_timeout_s = 300;  // a result later than this breaks the group
  // A rank of a ready group silent this long (no heartbeat, no answer) is unresponsive
  // and breaks the group (see above); 0 = no deadline. Many worker heartbeats long.
  // From parallelism.rank_deadline_s (--rank-deadline).
  double rank_deadline_s = 10;
  // The shared token every control-plane call must carry (the content of
  // parallelism.control_token_file); "" = none: anyone who reaches `listen` may join.
  std::string control_token;
  // null = off. Otherwise every rank times its steps of each plan (GroupInit.trace) and
  // the executor writes them on the rank's track (engine/common/trace.h).
  std::shared_ptr<TraceWriter> trace;
};

// Called once for each rank that missed the deadline, after the group broke, with
// the rank (stage * tensor + tp_rank) and the reason; on the executor's watchdog
// thread, with none of its locks held.
using UnresponsiveRankHandler = std::function<void(int32_t rank, const std::string& reason)>;

class GroupExecutor : public Executor {
 public:
  // Validates the layout against the model and starts the control-plane server. Fails
  // with FailedPrecondition for a multi-rank CUDA group when this build has no NCCL.
  static absl::StatusOr<std::unique_ptr<GroupExecutor>> Create(const GroupExecutorOptions& options);
  ~GroupExecutor() override;

  int port() const;
  uint64_t generation() const;

  const ModelConfig& config() const override;
  int32_t num_kv_blocks() const override;
  int32_t block_size() const override;
  int32_t max_inflight() const override;
  bool ready() const override;
  bool WaitReady(absl::Duration timeout) override;
  bool TakeStateLost() override;
  GroupStatus group_status() const override;
  absl::Status Submit(const IterationPlan& plan) override;
  absl::StatusOr<IterationResult> Wait() override;
  // Sets what is told about unresponsive ranks (replacing any earlier handler; null:
  // none, the default). The handler must stay callable until this executor is destroyed.
  void SetUnresponsiveRankHandler(UnresponsiveRankHandler handler);

  class Impl;

 private:
  explicit GroupExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace orca
