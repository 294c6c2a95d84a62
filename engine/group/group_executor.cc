#include "engine/group/group_executor.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "engine/common/cpu_limit.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/config/pipeline_layers.h"
#include "engine/group/control_plane_guard.h"
#include "engine/group/plan_codec.h"
#include "engine/runner/deferred_masks.h"
#include "engine/runner/kv_cache_sizing.h"
#include "engine/runner/model_runner.h"
#include "orca/v1/control.grpc.pb.h"
#ifdef ORCA_HAVE_NCCL
#include "engine/comm/nccl/nccl_communicator.h"
#endif

namespace orca {
namespace {

using Stream = grpc::ServerReaderWriter<v1::SchedulerMessage, v1::WorkerMessage>;

// One rank's Join call. Writes may come from the engine thread (plans) and from the
// handler that completes the group (GroupInit); reads only from its own handler.
struct Session {
  grpc::ServerContext* ctx = nullptr;
  Stream* stream = nullptr;
  int32_t rank = 0;
  std::string name;
  uint64_t generation = 0;  // the GroupInit it received; 0: none yet
  bool ready = false;
  // Guarded by the executor's mu_: the blocks the rank's device could hold (its
  // WorkerKvCapacity of this generation; 0: not reported).
  int32_t kv_capacity = 0;
  // Guarded by the executor's mu_: when the rank's last message (a heartbeat at least)
  // arrived.
  absl::Time last_heard = absl::Now();

  absl::Mutex write_mu;
  bool closed ABSL_GUARDED_BY(write_mu) = false;  // the Join handler returned: `stream` is gone
  bool Write(const v1::SchedulerMessage& m) {
    absl::MutexLock lock(&write_mu);
    return !closed && stream->Write(m);
  }
  void Close() {
    absl::MutexLock lock(&write_mu);
    closed = true;
  }
};

}  // namespace

class GroupExecutor::Impl final : public v1::ControlPlane::Service {
 public:
  // Messages for sessions, written once the lock is released.
  using Outbox = std::vector<std::pair<std::shared_ptr<Session>, v1::SchedulerMessage>>;

  GroupExecutorOptions options;
  ModelConfig config;
  // Blocks per rank: fixed at creation, or (a cache sized by the ranks' memory) 0 until the
  // first generation's ranks have reported what they hold, and fixed from then on.
  std::atomic<int32_t> num_kv_blocks{0};
  DType kv_cache_dtype = DType::kF32;  // resolved from options.kv_cache.dtype
  // Layers each stage holds (PipelineStageLayers), sent to every rank in GroupInit.
  std::vector<int32_t> stage_layers;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::unique_ptr<ControlPlaneGuard> guard;  // set by Create before the server starts

  int32_t world() const { return options.parallel.pipeline * options.parallel.tensor; }
  int32_t pipeline() const { return options.parallel.pipeline; }
  int32_t tensor() const { return options.parallel.tensor; }
  int32_t sampling_rank() const { return (pipeline() - 1) * tensor(); }
  ModelShard Shard(int32_t rank) const {
    return ModelShard{pipeline(), tensor(), rank / tensor(), rank % tensor(), stage_layers};
  }
  // The workers' data plane: NCCL for a multi-rank CUDA group, Gloo for a CPU one.
  std::string comm() const {
    if (world() == 1) return "none";
    return options.device == Device::kCuda ? "nccl" : "gloo";
  }

  grpc::Status Join(grpc::ServerContext* ctx, Stream* stream) override;
  grpc::Status StoreSet(grpc::ServerContext* ctx, const v1::StoreSetRequest* req,
                        v1::StoreSetResponse*) override {
    if (grpc::Status admitted = guard->Admit(*ctx, "StoreSet"); !admitted.ok()) return admitted;
    absl::MutexLock lock(&mu_);
    store_[req->key()] = req->value();
    return grpc::Status::OK;
  }
  grpc::Status StoreGet(grpc::ServerContext* ctx, const v1::StoreGetRequest* req,
                        v1::StoreGetResponse* resp) override;

  absl::Status Submit(const IterationPlan& plan);
  absl::StatusOr<IterationResult> Wait();
  bool ready() const {
    absl::MutexLock lock(&mu_);
    return ready_;
  }
  bool WaitReady(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto cond = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return ready_ || shutting_down_; };
    mu_.AwaitWithTimeout(absl::Condition(&cond), timeout);
    return ready_;
  }
  uint64_t generation() const {
    absl::MutexLock lock(&mu_);
    return generation_;
  }
  bool TakeStateLost() {
    absl::MutexLock lock(&mu_);
    return std::exchange(state_lost_, false);
  }
  GroupStatus status() const {
    absl::MutexLock lock(&mu_);
    return GroupStatus{world(), static_cast<int32_t>(sessions_.size()), generation_, breaks_};
  }
  void Shutdown();
  void SetUnresponsiveRankHandler(UnresponsiveRankHandler handler) {
    absl::MutexLock lock(&mu_);
    on_unresponsive_ = std::move(handler);
  }
  // Starts the watchdog that enforces options.rank_deadline_s (when positive).
  void StartWatchdog();

 private:
  // The watchdog's loop: every fraction of the deadline, breaks a ready group when a
  // rank has been silent past the deadline and tells the handler. Returns at shutdown.
  void Watch();
  // Returns the ranks of a ready group not heard from within the deadline before `now`,
  // each with a description for the logs.
  std::vector<std::pair<int32_t, std::string>> SilentRanks(absl::Time now) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // With every rank present and no group formed: starts a new generation and returns
  // the sessions with their GroupInit messages, to be written outside the lock.
  Outbox MaybeInit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // comm() = "nccl": fresh unique ids for the group's communicator (pipeline > 1) and
  // each stage's tensor-parallel one (tensor > 1), so no two generations share one.
  absl::Status SetNcclIds(v1::GroupInit& init);
  // Breaks the formed group (see the header); a no-op while none is formed.
  void Break(const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Handles a rank's message; messages to send in reply go to `out`, to be written outside
  // the lock.
  void HandleMessage(Session& s, const v1::WorkerMessage& m, Outbox& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A cache sized by memory: once every rank of the generation has reported its
  // capacity, fixes the smallest as the group's block count and sends it to every rank.
  void MaybeSizeKvCache(Outbox& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<int32_t, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool formed_ ABSL_GUARDED_BY(mu_) = false;  // GroupInit sent to the current sessions
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<uint64_t> outstanding_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, absl::StatusOr<IterationResult>> results_ ABSL_GUARDED_BY(mu_);
  std::string broken_ ABSL_GUARDED_BY(mu_);       // non-empty: outstanding plans were lost
  bool state_lost_ ABSL_GUARDED_BY(mu_) = false;  // a formed group broke (see TakeStateLost)
  uint64_t breaks_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> store_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  UnresponsiveRankHandler on_unresponsive_ ABSL_GUARDED_BY(mu_);
  // Submit's thread only (the engine's): the plan encoder of generation
  // encoder_generation_.
  PlanEncoder encoder_;
  uint64_t encoder_generation_ = 0;
  std::unique_ptr<ThreadPool> mask_pool_;  // Submit's thread only: made by the first guided plan
  std::thread watchdog_;                   // started by Create, joined by Shutdown
};

grpc::Status GroupExecutor::Impl::Join(grpc::ServerContext* ctx, Stream* stream) {
  if (grpc::Status admitted = guard->Admit(*ctx, "Join"); !admitted.ok()) return admitted;
  v1::WorkerMessage m;
  if (!stream->Read(&m) || !m.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first message must be a hello");
  }
  const v1::WorkerHello& hello = m.hello();
  if (hello.stage() < 0 || hello.stage() >= pipeline() || hello.tp_rank() < 0 ||
      hello.tp_rank() >= tensor()) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("stage ", hello.stage(), " / tp rank ", hello.tp_rank(),
                     " is outside this group of ", pipeline(), " stages x ", tensor(), " ranks"));
  }
  if (ParseDevice(hello.device()) != options.device) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("this group runs on '", DeviceName(options.device),
                                     "'; the worker offers '", hello.device(), "'"));
  }
  auto session = std::make_shared<Session>();
  session->ctx = ctx;
  session->stream = stream;
  session->rank = hello.stage() * tensor() + hello.tp_rank();
  session->name = hello.worker();
  Outbox inits;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down");
    auto it = sessions_.find(session->rank);
    if (it != sessions_.end()) {
      return grpc::Status(
          grpc::StatusCode::ALREADY_EXISTS,
          absl::StrCat("rank ", session->rank, " is already joined by ", it->second->name));
    }
    sessions_[session->rank] = session;
    ORCA_LOG(INFO) << "group: rank " << session->rank << " (stage " << hello.stage() << ", tp "
                   << hello.tp_rank() << ") joined from " << session->name << "; "
                   << sessions_.size() << "/" << world() << " present";
    inits = MaybeInit();
  }
  for (auto& [s, init] : inits) s->Write(init);  // a failed write ends that session's Read

  while (stream->Read(&m)) {
    Outbox out;
    {
      absl::MutexLock lock(&mu_);
      HandleMessage(*session, m, out);
    }
    for (auto& [s, reply] : out) s->Write(reply);  // a failed write ends that session's Read
  }
  session->Close();  // writers holding the session must not touch the stream any more
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session->rank);
  if (it != sessions_.end() && it->second == session) {
    sessions_.erase(it);
    ORCA_LOG(WARNING) << "group: rank " << session->rank << " (" << session->name << ") left";
    Break(absl::StrCat("worker rank ", session->rank, " (", session->name, ") disconnected"));
  }
  return grpc::Status::OK;
}

void GroupExecutor::Impl::HandleMessage(Session& s, const v1::WorkerMessage& m, Outbox& out) {
  s.last_heard = absl::Now();
  if (!formed_ || s.generation != generation_) return;  // a message of a broken generation
  switch (m.msg_case()) {
    case v1::WorkerMessage::kReady: {
      if (m.ready().generation() != generation_) return;
      if (s.ready) return;  // again: a heartbeat
      // A heartbeat before the rank's real ready (it beats while it loads its shard) has
      // no cache to report: the rank is not ready yet.
      if (m.ready().kv_cache_bytes() == 0) return;
      // A rank whose cache differs from the one this scheduler sized (a worker of
      // another release that ignores kv_cache_dtype, say) would compute from it anyway.
      const ModelShard shard = Shard(s.rank);
      const uint64_t expected =
          ModelRunner::KvBytesPerBlock(config, shard, options.kv_cache.block_size, kv_cache_dtype) *
          static_cast<uint64_t>(num_kv_blocks);
      if (m.ready().kv_cache_bytes() != expected) {
        Break(absl::StrCat("worker rank ", s.rank, " (", s.name, ") allocated ",
                           m.ready().kv_cache_bytes(), " bytes of KV cache where the group sized ",
                           expected, " (", num_kv_blocks.load(), " blocks of ",
                           std::string(DTypeName(kv_cache_dtype)),
                           "): do the scheduler and the worker run the same release?"));
        return;
      }
      s.ready = true;
      bool all = static_cast<int32_t>(sessions_.size()) == world();
      for (const auto& [rank, other] : sessions_) all = all && other->ready;
      if (all && !ready_) {
        ready_ = true;
        ORCA_LOG(INFO) << "group: generation " << generation_ << " ready (" << pipeline()
                       << " stages x " << tensor() << " ranks)";
      }
      return;
    }
    case v1::WorkerMessage::kKvCapacity: {
      const v1::WorkerKvCapacity& c = m.kv_capacity();
      if (c.generation() != generation_ || num_kv_blocks.load() > 0 || s.kv_capacity > 0) return;
      if (c.num_blocks() <= 0) {
        Break(absl::StrCat("worker rank ", s.rank, " (", s.name, ") reported room for ",
                           c.num_blocks(), " KV blocks"));
        return;
      }
      s.kv_capacity = c.num_blocks();
      ORCA_LOG(INFO) << "group: rank " << s.rank << " (" << s.name << "): " << c.arithmetic();
      MaybeSizeKvCache(out);
      return;
    }
    case v1::WorkerMessage::kDone: {
      IterationResult r = FromProto(m.done());
      if (options.trace) {
        options.trace->Spans(TraceWriter::RankTrack(s.rank), r.spans,
                             static_cast<int64_t>(r.iteration));
        r.spans.clear();
      }
      if (s.rank == sampling_rank()) results_[m.done().iteration()] = std::move(r);
      return;
    }
    case v1::WorkerMessage::kError: {
      const v1::WorkerError& e = m.error();
      if (e.fatal()) {
        Break(absl::StrCat("worker rank ", s.rank, " failed: ", e.message()));
      } else if (s.rank == sampling_rank()) {
        results_[e.iteration()] = absl::InvalidArgumentError(e.message());
      }
      return;
    }
    default:
      return;
  }
}

void GroupExecutor::Impl::MaybeSizeKvCache(Outbox& out) {
  if (static_cast<int32_t>(sessions_.size()) != world()) return;
  int32_t blocks = INT32_MAX;
  std::string each;
  for (const auto& [rank, session] : sessions_) {
    if (session->kv_capacity <= 0) return;  // not every rank has measured yet
    blocks = std::min(blocks, session->kv_capacity);
    absl::StrAppend(&each, each.empty() ? "" : ", ", "rank ", rank, ": ", session->kv_capacity);
  }
  num_kv_blocks = blocks;
  ORCA_LOG(INFO) << "group: KV cache " << blocks << " blocks of " << options.kv_cache.block_size
                 << " tokens per rank, the smallest of the ranks' (" << each
                 << "); kept for every later generation";
  v1::SchedulerMessage m;
  m.mutable_kv_cache_size()->set_generation(generation_);
  m.mutable_kv_cache_size()->set_num_blocks(blocks);
  for (auto& [rank, session] : sessions_) out.emplace_back(session, m);
}

GroupExecutor::Impl::Outbox GroupExecutor::Impl::MaybeInit() {
  Outbox out;
  if (formed_ || static_cast<int32_t>(sessions_.size()) != world()) return out;
  v1::SchedulerMessage m;
  v1::GroupInit* init = m.mutable_init();
  if (absl::Status s = SetNcclIds(*init); !s.ok()) {
    // Nothing to form the group with: the workers dial again, and the next time all are
    // present the ids are tried afresh.
    ORCA_LOG(ERROR) << "group: cannot create the NCCL unique ids: " << s
                    << "; sending the workers away";
    for (auto& [rank, session] : sessions_) session->ctx->TryCancel();
    sessions_.clear();
    return out;
  }
  ++generation_;
  formed_ = true;
  ready_ = false;
  store_.clear();
  init->set_generation(generation_);
  init->set_pipeline(pipeline());
  init->set_tensor(tensor());
  for (int32_t n : stage_layers) init->add_stage_layers(n);
  init->set_block_size(options.kv_cache.block_size);
  init->set_num_kv_blocks(num_kv_blocks);
  if (num_kv_blocks == 0) {  // sized by the ranks' memory: once, by the first generation
    v1::KvCacheSizing* sizing = init->mutable_kv_sizing();
    sizing->set_profile_tokens(options.scheduler.max_batched_tokens);
    sizing->set_profile_seqs(options.scheduler.max_batch_size);
    sizing->set_max_model_len(options.max_model_len);
  }
  init->set_kv_cache_dtype(std::string(DTypeName(kv_cache_dtype)));
  init->set_trace(options.trace != nullptr);
  init->set_comm(comm());
  init->set_store_prefix(absl::StrCat("orca/g", generation_, "/"));
  init->set_comm_timeout_s(options.comm_timeout_s);
  for (auto& [rank, s] : sessions_) {
    s->generation = generation_;
    s->ready = false;
    s->kv_capacity = 0;
    out.emplace_back(s, m);
  }
  ORCA_LOG(INFO) << "group: all " << world() << " ranks present; initialising generation "
                 << generation_;
  return out;
}

absl::Status GroupExecutor::Impl::SetNcclIds(v1::GroupInit& init) {
  if (comm() != "nccl") return absl::OkStatus();
#ifdef ORCA_HAVE_NCCL
  if (pipeline() > 1) {
    ORCA_ASSIGN_OR_RETURN(*init.mutable_nccl_unique_id(), NewNcclUniqueId());
  }
  if (tensor() > 1) {
    for (int32_t stage = 0; stage < pipeline(); ++stage) {
      ORCA_ASSIGN_OR_RETURN(*init.add_nccl_tp_unique_ids(), NewNcclUniqueId());
    }
  }
  return absl::OkStatus();
#else
  (void)init;
  return absl::FailedPreconditionError("this orca was built without NCCL");
#endif
}

void GroupExecutor::Impl::Break(const std::string& reason) {
  if (!formed_) return;
  formed_ = false;
  ready_ = false;
  state_lost_ = true;
  ++breaks_;
  ORCA_LOG(WARNING) << "group: generation " << generation_ << " broken: " << reason
                    << "; waiting for every rank to rejoin";
  if (!outstanding_.empty()) broken_ = reason;
  outstanding_.clear();
  results_.clear();
  // The other ranks' communicators include the lost rank: end their sessions so they
  // re-dial and rendezvous afresh.
  for (auto& [rank, s] : sessions_) s->ctx->TryCancel();
  sessions_.clear();
}

grpc::Status GroupExecutor::Impl::StoreGet(grpc::ServerContext* ctx, const v1::StoreGetRequest* req,
                                           v1::StoreGetResponse* resp) {
  if (grpc::Status admitted = guard->Admit(*ctx, "StoreGet"); !admitted.ok()) return admitted;
  absl::MutexLock lock(&mu_);
  auto all_present = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    if (shutting_down_ || ctx->IsCancelled()) return true;
    for (const std::string& k : req->keys()) {
      if (store_.count(k) == 0) return false;
    }
    return true;
  };
  const absl::Time deadline =
      std::min(absl::FromChrono(ctx->deadline()), absl::Now() + absl::Seconds(300));
  while (!all_present()) {
    if (absl::Now() >= deadline) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "rendezvous keys did not appear");
    }
    mu_.AwaitWithDeadline(absl::Condition(&all_present),
                          std::min(deadline, absl::Now() + absl::Milliseconds(200)));
  }
  for (const std::string& k : req->keys()) {
    auto it = store_.find(k);
    if (it == store_.end()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "group reset");
    resp->add_values(it->second);
  }
  return grpc::Status::OK;
}

absl::Status GroupExecutor::Impl::Submit(const IterationPlan& plan) {
  std::vector<std::shared_ptr<Session>> targets;
  uint64_t generation = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!ready_) {
      broken_.clear();  // the caller drops every outstanding plan on Unavailable
      outstanding_.clear();
      results_.clear();
      return absl::UnavailableError("the serving group is not ready (a worker is missing)");
    }
    outstanding_.push_back(plan.iteration);
    for (auto& [rank, s] : sessions_) targets.push_back(s);
    generation = generation_;
  }
  // Plans are deltas against what this generation's ranks hold (plan_codec.h); a new
  // generation's ranks hold nothing.
  if (encoder_generation_ != generation) {
    encoder_ = PlanEncoder();
    encoder_generation_ = generation;
  }
  // The ranks hold no guides: guided rows' masks travel made, made here on every core
  // at once (a grammar's new state walks the vocabulary).
  IterationPlan made;
  if (HasDeferredMasks(plan)) {
    made = plan;
    std::vector<ScheduledSequence*> seqs;
    for (ScheduledSequence& s : made.seqs) seqs.push_back(&s);
    if (mask_pool_ == nullptr) mask_pool_ = std::make_unique<ThreadPool>(AvailableCpus());
    MakeDeferredMasks(absl::MakeSpan(seqs), mask_pool_.get());
  }
  v1::SchedulerMessage m;
  encoder_.Encode(made.seqs.empty() ? plan : made, m.mutable_plan());
  for (auto& s : targets) {
    if (!s->Write(m)) {
      absl::MutexLock lock(&mu_);
      Break(absl::StrCat("cannot send the plan to worker rank ", s->rank));
      break;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<IterationResult> GroupExecutor::Impl::Wait() {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !broken_.empty() || outstanding_.empty() || results_.count(outstanding_.front()) > 0 ||
           shutting_down_;
  };
  const bool in_time =
      mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(options.iteration_timeout_s));
  if (!in_time) {
    Break(absl::StrCat("no result within ", options.iteration_timeout_s, " s"));
  }
  if (shutting_down_) return absl::UnavailableError("the scheduler is shutting down");
  if (!broken_.empty()) {
    std::string reason = std::move(broken_);
    broken_.clear();
    return absl::UnavailableError(
        absl::StrCat("the serving group broke (", reason, "); the request can be retried"));
  }
  if (outstanding_.empty()) return absl::FailedPreconditionError("no plan is outstanding");
  auto it = results_.find(outstanding_.front());
  outstanding_.pop_front();
  if (!it->second.ok()) {
    absl::Status failed = it->second.status();
    results_.erase(it);
    return failed;
  }
  IterationResult r = std::move(*it->second);
  results_.erase(it);
  return r;
}

void GroupExecutor::Impl::StartWatchdog() {
  if (options.rank_deadline_s > 0) watchdog_ = std::thread([this] { Watch(); });
}

std::vector<std::pair<int32_t, std::string>> GroupExecutor::Impl::SilentRanks(
    absl::Time now) const {
  std::vector<std::pair<int32_t, std::string>> out;
  if (!ready_) return out;
  const absl::Time cutoff = now - absl::Seconds(options.rank_deadline_s);
  for (const auto& [rank, s] : sessions_) {
    if (s->last_heard >= cutoff) continue;
    std::string why = absl::StrCat(
        "worker rank ", rank, " (", s->name, ") has not been heard from for ",
        absl::FormatDuration(absl::Trunc(now - s->last_heard, absl::Milliseconds(100))),
        " (deadline ", options.rank_deadline_s, " s: stopped or hung)");
    if (!outstanding_.empty()) absl::StrAppend(&why, " with plan ", outstanding_.front(), " due");
    out.emplace_back(rank, std::move(why));
  }
  return out;
}

void GroupExecutor::Impl::Watch() {
  const absl::Duration period = std::clamp(absl::Seconds(options.rank_deadline_s) / 4,
                                           absl::Milliseconds(10), absl::Milliseconds(250));
  while (true) {
    std::vector<std::pair<int32_t, std::string>> overdue;
    UnresponsiveRankHandler handler;
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return shutting_down_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), period)) return;
      overdue = SilentRanks(absl::Now());
      if (overdue.empty()) continue;
      for (const auto& [rank, why] : overdue) {
        ORCA_LOG(ERROR) << "group: " << why << "; ending its session";
      }
      // Ends every session, the unresponsive ranks' included: a frozen process that
      // resumes finds its session gone and dials again.
      Break(overdue.front().second);
      handler = on_unresponsive_;
    }
    if (!handler) continue;
    for (const auto& [rank, why] : overdue) handler(rank, why);
  }
}

void GroupExecutor::Impl::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    for (auto& [rank, s] : sessions_) s->ctx->TryCancel();
  }
  if (watchdog_.joinable()) watchdog_.join();
  if (server) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

absl::StatusOr<std::unique_ptr<GroupExecutor>> GroupExecutor::Create(
    const GroupExecutorOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  ORCA_ASSIGN_OR_RETURN(impl->config, LoadModelConfig(options.model_dir));
#ifndef ORCA_HAVE_NCCL
  if (impl->comm() == "nccl") {
    return absl::FailedPreconditionError(
        "a --device cuda group of more than one rank talks NCCL, and this orca was built "
        "without it (NCCL was not found at build time; set NCCL_HOME or install "
        "libnccl-dev and rebuild)");
  }
#endif
  ORCA_ASSIGN_OR_RETURN(impl->kv_cache_dtype,
                        ResolveKvCacheDType(options.kv_cache.dtype, options.device));
  ORCA_ASSIGN_OR_RETURN(const std::vector<int32_t> requested,
                        ParseStageLayers(options.parallel.pipeline_layers));
  ORCA_ASSIGN_OR_RETURN(impl->stage_layers,
                        PipelineStageLayers(impl->config, impl->pipeline(), requested));
  if (KvCacheSizedByMemory(options.kv_cache, options.device)) {
    for (int32_t rank = 0; rank < impl->world(); ++rank) {
      ORCA_RETURN_IF_ERROR(ValidateModelShard(impl->config, impl->Shard(rank)));
    }
  } else {
    ORCA_ASSIGN_OR_RETURN(int32_t fixed,
                          KvCacheBlocks(impl->config, impl->stage_layers, impl->tensor(),
                                        options.kv_cache, impl->kv_cache_dtype));
    impl->num_kv_blocks = fixed;
  }
  const std::string dtype(DTypeName(impl->kv_cache_dtype));
  const int32_t blocks = impl->num_kv_blocks.load();
  const std::string kv_cache =
      blocks > 0 ? absl::StrCat(blocks, " blocks of ", dtype, " per rank")
                 : absl::StrCat("of ", dtype,
                                " sized by the ranks' device memory when the group first forms");

  if (options.trace) {
    options.trace->NameTrack(TraceWriter::kSchedulerTrack, "scheduler");
    for (int32_t rank = 0; rank < impl->world(); ++rank) {
      options.trace->NameTrack(TraceWriter::RankTrack(rank),
                               absl::StrCat("rank ", rank, " (stage ", rank / impl->tensor(),
                                            ", tp ", rank % impl->tensor(), ")"));
    }
  }
  impl->guard = std::make_unique<ControlPlaneGuard>(options.control_token);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &impl->port);
  builder.RegisterService(impl.get());
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  // Workers ping every few seconds so a vanished peer is noticed without traffic.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.listen));
  }
  ORCA_LOG(INFO) << "group: control plane on port " << impl->port << ", waiting for "
                 << impl->world() << " rank(s) (" << impl->pipeline() << " stages x "
                 << impl->tensor() << " tensor ranks; layers per stage "
                 << absl::StrJoin(impl->stage_layers, " + ")
                 << (requested.empty() ? ", balanced with the LM head at half its weight" : "")
                 << "), KV cache " << kv_cache << "; "
                 << (impl->guard->enabled() ? "calls must carry the control-plane token"
                                            : "UNAUTHENTICATED: anyone who reaches this port may "
                                              "join the group or write its rendezvous store "
                                              "(set parallelism.control_token_file)");
  impl->StartWatchdog();
  return std::unique_ptr<GroupExecutor>(new GroupExecutor(std::move(impl)));
}

GroupExecutor::GroupExecutor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GroupExecutor::~GroupExecutor() { impl_->Shutdown(); }
int GroupExecutor::port() const { return impl_->port; }
uint64_t GroupExecutor::generation() const { return impl_->generation(); }
const ModelConfig& GroupExecutor::config() const { return impl_->config; }
int32_t GroupExecutor::num_kv_blocks() const { return impl_->num_kv_blocks; }
int32_t GroupExecutor::block_size() const { return impl_->options.kv_cache.block_size; }
int32_t GroupExecutor::max_inflight() const { return impl_->pipeline(); }
bool GroupExecutor::ready() const { return impl_->ready(); }
bool GroupExecutor::WaitReady(absl::Duration timeout) { return impl_->WaitReady(timeout); }
bool GroupExecutor::TakeStateLost() { return impl_->TakeStateLost(); }
GroupStatus GroupExecutor::group_status() const { return impl_->status(); }
absl::Status GroupExecutor::Submit(const IterationPlan& plan) { return impl_->Submit(plan); }
absl::StatusOr<IterationResult> GroupExecutor::Wait() { return impl_->Wait(); }
void GroupExecutor::SetUnresponsiveRankHandler(UnresponsiveRankHandler handler) {
  impl_->SetUnresponsiveRankHandler(std::move(handler));
}

}  // namespace orca
