// GroupExecutor: the scheduler's side of a serving group (DESIGN.md section 4). It
// serves orca.v1.ControlPlane (proto/orca/v1/control.proto): workers dial it and join
// as (stage, tp rank); once all pipeline × tensor ranks are present it sends each a
// GroupInit (layout, KV cache size, and the data plane of this generation: on CPUs the
// Gloo rendezvous prefix, for the key-value store it hosts; on CUDA fresh NCCL unique
// ids, one for the whole group and one per stage). When every rank has reported
// ready the group is ready, and every plan is sent to every rank at once; the sampling
// rank (last stage, tp rank 0) returns the tokens. Up to `pipeline` plans are in flight.
//
// Failure: when a rank's stream breaks, a rank reports a fatal error, or a result is
// overdue, the group is broken: outstanding plans fail with Unavailable (the engine
// fails its running requests with a retriable error), the other ranks' streams are
// ended so they re-dial with a fresh communicator, and the group re-initialises under
// a new generation when all ranks are back. Nothing waits forever.
//
// Submit/Wait are called by the engine thread; ready() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/config/engine_config.h"
#include "engine/core/executor.h"

namespace orca {

struct GroupExecutorOptions {
  std::string model_dir;             // read for the model's shape (config.json)
  ParallelOptions parallel;          // pipeline x tensor (control_port: see `listen`)
  Device device = Device::kCpu;      // what the workers must run on
  std::string listen = "0.0.0.0:0";  // control-plane address; port 0 picks one
  KvCacheOptions kv_cache;           // per rank, sized by KvCacheBlocks
  double comm_timeout_s = 60;        // each data-plane operation on the workers
  double iteration_timeout_s = 300;  // a result later than this breaks the group
};

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

  class Impl;

 private:
  explicit GroupExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace orca
