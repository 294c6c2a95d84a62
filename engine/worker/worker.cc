#include "engine/worker/worker.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/backend/registry.h"
#include "engine/comm/gloo/gloo_communicator.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/group/plan_codec.h"
#include "engine/runner/kv_cache_sizing.h"
#include "engine/worker/grpc_store.h"
#include "orca/v1/control.grpc.pb.h"
#ifdef ORCA_HAVE_NCCL
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/comm/nccl/nccl_communicator.h"
#endif

namespace orca {
namespace {

using Stream = grpc::ClientReaderWriter<v1::WorkerMessage, v1::SchedulerMessage>;

absl::Status FromGrpc(const grpc::Status& s, const std::string& what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

// Errors that retrying cannot fix. AlreadyExists is retried: after a restart the
// scheduler may not yet have noticed that the rank's previous connection is dead.
bool IsConfigurationError(const absl::Status& s) {
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) || absl::IsFailedPrecondition(s) ||
         absl::IsUnimplemented(s) || absl::IsDataLoss(s) || absl::IsUnauthenticated(s);
}

// Returns the status of a failed Join; a refused token says so, and how to fix it.
absl::Status JoinFailure(const grpc::Status& s, const std::string& scheduler) {
  if (s.error_code() != grpc::StatusCode::UNAUTHENTICATED) return FromGrpc(s, "joining the group");
  return absl::UnauthenticatedError(absl::StrCat(
      "control-plane token refused by the scheduler at ", scheduler, " (", s.error_message(),
      "): give the worker and the scheduler the same parallelism.control_token_file "
      "(--control-token-file)"));
}

// The session's writes, from the rank's thread (ready, results, errors) and the
// heartbeat thread: a gRPC stream takes one write at a time, and none after WritesDone.
class SessionWriter {
 public:
  explicit SessionWriter(Stream* stream) : stream_(stream) {}
  bool Write(const v1::WorkerMessage& m) {
    absl::MutexLock lock(&mu_);
    return !done_ && stream_->Write(m);
  }
  void WritesDone() {
    absl::MutexLock lock(&mu_);
    if (!std::exchange(done_, true)) stream_->WritesDone();
  }

 private:
  Stream* stream_;
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

// Reads the scheduler's messages on a thread of its own for the rest of a session, so
// that the session's end (the group broke elsewhere, the scheduler went away, Stop) is
// noticed at once even while the rank's thread waits on the data plane: `ended` turns
// true, which makes the NCCL communicators give up their waits. Each plan is passed to
// `received` as it arrives and queued in order.
class SchedulerReader {
 public:
  SchedulerReader(Stream* stream, std::atomic<bool>* ended,
                  std::function<void(const v1::IterationPlan&)> received)
      : stream_(stream),
        ended_(ended),
        received_(std::move(received)),
        thread_([this] { Loop(); }) {}
  ~SchedulerReader() { Join(); }

  // Waits for the next plan; false once the session has ended and no plan is left.
  bool Next(v1::IterationPlan* plan) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !plans_.empty() || done_; };
    mu_.Await(absl::Condition(&ready));
    if (plans_.empty()) return false;
    *plan = std::move(plans_.front());
    plans_.pop_front();
    return true;
  }

  // Waits for the group's KV block count (KvCacheSize, when GroupInit asked the rank to
  // size its cache by memory); false once the session has ended without one.
  bool NextKvCacheSize(int32_t* num_blocks) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return kv_blocks_ > 0 || done_; };
    mu_.Await(absl::Condition(&ready));
    *num_blocks = kv_blocks_;
    return kv_blocks_ > 0;
  }

  // Waits for the stream's end (the caller has cancelled the call, or the scheduler has
  // ended it); afterwards the stream may be finished.
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    v1::SchedulerMessage m;
    while (stream_->Read(&m)) {
      if (m.has_kv_cache_size()) {
        absl::MutexLock lock(&mu_);
        kv_blocks_ = std::max(1, m.kv_cache_size().num_blocks());
        continue;
      }
      if (!m.has_plan()) continue;
      received_(m.plan());
      absl::MutexLock lock(&mu_);
      plans_.push_back(std::move(*m.mutable_plan()));
    }
    ended_->store(true);
    absl::MutexLock lock(&mu_);
    done_ = true;
  }

  Stream* stream_;
  std::atomic<bool>* ended_;
  std::function<void(const v1::IterationPlan&)> received_;
  absl::Mutex mu_;
  std::deque<v1::IterationPlan> plans_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  int32_t kv_blocks_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts once the members above exist
};

// Sends `beat` every `interval` from a thread of its own until stopped, whatever the
// rank's thread is doing: the scheduler's evidence that this process is alive (a
// stopped or frozen one keeps its connection open). `pause` (tests) runs before each.
class Heartbeat {
 public:
  Heartbeat(SessionWriter* writer, v1::WorkerMessage beat, absl::Duration interval,
            std::function<void()> pause)
      : writer_(writer),
        beat_(std::move(beat)),
        interval_(interval),
        pause_(std::move(pause)),
        thread_([this] { Loop(); }) {}
  ~Heartbeat() { Stop(); }

  // Stops the heartbeats; none is written once it returns.
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
        if (mu_.AwaitWithTimeout(absl::Condition(&stopped), interval_)) return;
      }
      if (pause_) pause_();
      writer_->Write(beat_);  // a failed write: the session is ending
    }
  }

  SessionWriter* writer_;
  const v1::WorkerMessage beat_;
  const absl::Duration interval_;
  std::function<void()> pause_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the members above exist
};

// Joins this rank's NCCL communicators of the generation `init` describes: its stage's
// tensor-parallel one (tensor > 1) and the whole group's (pipeline > 1), in that order
// on every rank, on the CUDA backend's device and stream.
absl::Status ConnectNccl(const v1::GroupInit& init, const ModelShard& shard, Backend* backend,
                         absl::Duration timeout, const std::atomic<bool>* cancel,
                         std::unique_ptr<Communicator>& tp_comm,
                         std::unique_ptr<Communicator>& pp_comm) {
#ifdef ORCA_HAVE_NCCL
  auto* cuda = dynamic_cast<CudaBackend*>(backend);
  if (cuda == nullptr) {
    return absl::FailedPreconditionError(
        "the group's communicator is NCCL, which needs the CUDA backend (--device cuda)");
  }
  NcclCommOptions options;
  options.device = cuda->device();
  options.stream = cuda->stream();
  options.timeout = timeout;
  options.cancel = cancel;
  if (shard.tensor > 1) {
    if (init.nccl_tp_unique_ids_size() != shard.pipeline) {
      return absl::InvalidArgumentError(
          absl::StrCat("GroupInit has ", init.nccl_tp_unique_ids_size(),
                       " tensor-parallel NCCL ids for ", shard.pipeline, " stages"));
    }
    ORCA_ASSIGN_OR_RETURN(tp_comm, CreateNcclCommunicator(init.nccl_tp_unique_ids(shard.stage),
                                                          shard.tp_rank, shard.tensor, options));
  }
  if (shard.pipeline > 1) {
    ORCA_ASSIGN_OR_RETURN(pp_comm, CreateNcclCommunicator(init.nccl_unique_id(), shard.rank(),
                                                          shard.world_size(), options));
  }
  return absl::OkStatus();
#else
  (void)init, (void)shard, (void)backend, (void)timeout, (void)cancel, (void)tp_comm, (void)pp_comm;
  return absl::FailedPreconditionError(
      "the group's communicator is NCCL (a multi-rank --device cuda group), and this orca "
      "was built without NCCL");
#endif
}

}  // namespace

WorkerRank::WorkerRank(WorkerOptions options) : options_(std::move(options)) {
  since_ns_ = absl::ToUnixNanos(absl::Now());
}

WorkerRank::~WorkerRank() { Stop(); }

void WorkerRank::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
}

void WorkerRank::Drain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  // In a group: its session goes on until the scheduler ends it. Otherwise nothing is
  // lost by stopping the dial (or the wait for the group to form) now.
  if (!in_group_ && ctx_ != nullptr) ctx_->TryCancel();
}

void WorkerRank::SetInGroup(bool in_group) {
  in_group_ = in_group;
  since_ns_ = absl::ToUnixNanos(absl::Now());
}

RankProgress WorkerRank::progress() const {
  RankProgress p;
  p.name = absl::StrCat("stage ", options_.stage, " tp ", options_.tp_rank);
  p.in_group = in_group_.load();
  p.serving = p.in_group && ready_.load();
  p.since = absl::FromUnixNanos(since_ns_.load());
  p.plan = plan_.load();
  if (const int64_t started = plan_started_ns_.load(); started != 0) {
    p.plan_started = absl::FromUnixNanos(started);
  }
  return p;
}

std::string WorkerRank::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

absl::Status WorkerRank::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_ || draining_) return absl::OkStatus();
    }
    absl::Status s = Session();
    ready_ = false;
    plan_started_ns_ = 0;
    if (in_group_) SetInGroup(false);
    // The runner's graphs recorded these communicators' operations: they go first.
    if (runner_) runner_->ReleaseCommunicators();
    tp_comm_.reset();
    pp_comm_.reset();
    {
      absl::MutexLock lock(&mu_);
      if (stop_ || draining_) return absl::OkStatus();
      if (!s.ok()) last_error_ = std::string(s.message());
    }
    if (IsConfigurationError(s)) return s;
    if (!s.ok()) {
      ORCA_LOG(WARNING) << "worker " << options_.name << ": " << s << "; dialing again";
    }
    absl::MutexLock lock(&mu_);
    auto stopped = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || draining_; };
    mu_.AwaitWithTimeout(absl::Condition(&stopped), options_.retry);
  }
}

absl::Status WorkerRank::Session() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  auto channel =
      grpc::CreateCustomChannel(options_.scheduler, grpc::InsecureChannelCredentials(), args);
  auto stub = v1::ControlPlane::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_wait_for_ready(true);  // the scheduler may start after us
  if (!options_.control_token.empty()) {
    ctx.AddMetadata("authorization", "Bearer " + options_.control_token);
  }
  {
    absl::MutexLock lock(&mu_);
    // draining_ too: a Drain() between Run()'s check and here found no ctx_ to cancel, and
    // this dial (wait_for_ready) would otherwise wait for a scheduler forever.
    if (stop_ || draining_) return absl::OkStatus();
    ctx_ = &ctx;
  }
  struct Clear {
    WorkerRank* w;
    ~Clear() {
      absl::MutexLock lock(&w->mu_);
      w->ctx_ = nullptr;
    }
  } clear{this};
  std::unique_ptr<Stream> stream = stub->Join(&ctx);

  v1::WorkerMessage hello;
  v1::WorkerHello* h = hello.mutable_hello();
  h->set_stage(options_.stage);
  h->set_tp_rank(options_.tp_rank);
  h->set_device(std::string(DeviceName(options_.device.type)));
  h->set_host(options_.host);
  h->set_worker(options_.name);
  v1::SchedulerMessage in;
  if (!stream->Write(hello) || !stream->Read(&in)) {
    return JoinFailure(stream->Finish(), options_.scheduler);
  }
  if (!in.has_init()) {
    ctx.TryCancel();
    return absl::InternalError("the scheduler did not send GroupInit first");
  }
  bool leave = false;
  {
    absl::MutexLock lock(&mu_);
    leave = stop_ || draining_;
    if (!leave) SetInGroup(true);  // under mu_: Drain() sees a dialing rank or one in a group
  }
  if (leave) {  // stopped while the group formed: leave before taking part
    ctx.TryCancel();
    stream->Finish();
    return absl::OkStatus();
  }
  const v1::GroupInit init = std::move(*in.mutable_init());
  const ModelShard shard{init.pipeline(),
                         init.tensor(),
                         options_.stage,
                         options_.tp_rank,
                         {init.stage_layers().begin(), init.stage_layers().end()}};
  ORCA_LOG(INFO) << "worker " << options_.name << ": generation " << init.generation() << ", rank "
                 << shard.rank() << " of " << shard.world_size() << " (stage " << shard.stage
                 << ", tp " << shard.tp_rank << ")";

  session_ended_ = false;
  SessionWriter writer(stream.get());
  v1::WorkerMessage beat;  // the protocol's stand-in for a heartbeat: Ready, again
  beat.mutable_ready()->set_generation(init.generation());
  Heartbeat heartbeat(&writer, beat, options_.heartbeat, options_.pause_hook);
  SchedulerReader reader(stream.get(), &session_ended_, [&](const v1::IterationPlan&) {
    if (options_.pause_hook) options_.pause_hook();
  });
  auto finish = [&](const std::string& what) {
    heartbeat.Stop();
    reader.Join();
    return FromGrpc(stream->Finish(), what);
  };
  auto fail = [&](const absl::Status& s) {
    v1::WorkerMessage m;
    m.mutable_error()->set_message(std::string(s.message()));
    m.mutable_error()->set_fatal(true);
    writer.Write(m);
    writer.WritesDone();
    ctx.TryCancel();
    heartbeat.Stop();
    reader.Join();
    return s;
  };
  // The backend first: an NCCL communicator runs on its stream.
  if (!backend_) {
    auto b = CreateBackend(options_.device);
    if (!b.ok()) return fail(b.status());
    backend_ = std::move(*b);
  }
  const absl::Duration timeout =
      absl::Seconds(init.comm_timeout_s() > 0 ? init.comm_timeout_s() : 60);
  if (init.comm() == "gloo") {
    GrpcStore store(stub.get(), absl::ToChronoMilliseconds(timeout), options_.control_token);
    GlooOptions go;
    go.hostname = options_.host;
    go.timeout = timeout;
    auto connect = [&](const std::string& prefix, int rank, int size,
                       std::unique_ptr<Communicator>& out) -> absl::Status {
      ORCA_ASSIGN_OR_RETURN(out, CreateGlooCommunicator(store, prefix, rank, size, go));
      return absl::OkStatus();
    };
    absl::Status s;
    if (shard.tensor > 1) {
      s = connect(absl::StrCat(init.store_prefix(), "tp", shard.stage, "/"), shard.tp_rank,
                  shard.tensor, tp_comm_);
    }
    if (s.ok() && shard.pipeline > 1) {
      s = connect(absl::StrCat(init.store_prefix(), "pp/"), shard.rank(), shard.world_size(),
                  pp_comm_);
    }
    if (!s.ok()) return fail(s);
  } else if (init.comm() == "nccl") {
    absl::Status s =
        ConnectNccl(init, shard, backend_.get(), timeout, &session_ended_, tp_comm_, pp_comm_);
    if (!s.ok()) return fail(s);
  } else if (init.comm() != "none") {
    return fail(absl::UnimplementedError(absl::StrCat("communicator '", init.comm(), "'")));
  }
  absl::StatusOr<DType> parsed_kv_dtype =
      init.kv_cache_dtype().empty() ? DType::kF32 : ParseDType(init.kv_cache_dtype());
  if (!parsed_kv_dtype.ok()) {
    return fail(absl::InvalidArgumentError(
        absl::StrCat("group init: kv_cache_dtype: ", parsed_kv_dtype.status().message())));
  }
  const DType kv_dtype = *parsed_kv_dtype;
  // A cache sized by memory (the group's first generation): a probe cache while the rank
  // profiles, then the count the scheduler chose from every rank's capacity.
  const bool size_by_memory = init.has_kv_sizing();
  const v1::KvCacheSizing& sizing = init.kv_sizing();
  const ModelShard& had = runner_ ? runner_->shard() : shard;
  const bool reuse =
      !size_by_memory && runner_ && had.pipeline == shard.pipeline && had.tensor == shard.tensor &&
      had.Layers(runner_->config().num_layers) == shard.Layers(runner_->config().num_layers) &&
      runner_->block_size() == init.block_size() &&
      runner_->num_kv_blocks() == init.num_kv_blocks() && runner_->kv_cache_dtype() == kv_dtype;
  if (reuse) {
    if (absl::Status s = runner_->SetCommunicators(tp_comm_.get(), pp_comm_.get()); !s.ok()) {
      return fail(s);
    }
  } else {
    runner_.reset();
    ModelRunnerOptions ro;
    ro.block_size = init.block_size();
    ro.num_kv_blocks = size_by_memory ? ProbeKvBlocks(sizing.profile_tokens(),
                                                      sizing.profile_seqs(), init.block_size())
                                      : init.num_kv_blocks();
    ro.kv_cache_dtype = kv_dtype;
    ro.dtype = options_.model.dtype;
    ro.sampler_threads = options_.device.threads;
    ro.sample_on_backend = options_.device.sample_on_device;
    ro.graphs = options_.device.cuda_graphs;
    ro.sixteen_bit_activations = options_.device.sixteen_bit_activations;
    ro.shard = shard;
    ro.tp_comm = tp_comm_.get();
    ro.pp_comm = pp_comm_.get();
    auto runner = ModelRunner::Create(options_.model.dir, backend_.get(), ro);
    if (!runner.ok()) return fail(runner.status());
    runner_ = std::move(*runner);
    activation_dtype_ = runner_->activation_dtype();
  }
  if (size_by_memory) {
    absl::StatusOr<KvMemoryPlan> plan =
        MeasureKvCapacity(*runner_, *backend_, sizing.profile_tokens(), sizing.profile_seqs(),
                          sizing.max_model_len());
    if (!plan.ok()) {
      runner_.reset();  // its probe cache is no use to a later generation
      return fail(plan.status());
    }
    ORCA_LOG(INFO) << "worker " << options_.name << ": " << plan->Describe();
    v1::WorkerMessage capacity;
    capacity.mutable_kv_capacity()->set_generation(init.generation());
    capacity.mutable_kv_capacity()->set_num_blocks(plan->num_blocks);
    capacity.mutable_kv_capacity()->set_arithmetic(plan->Describe());
    if (!writer.Write(capacity)) return finish("reporting the KV capacity");
    int32_t num_blocks = 0;
    if (!reader.NextKvCacheSize(&num_blocks)) return finish("waiting for the KV cache size");
    if (num_blocks > plan->num_blocks) {
      return fail(absl::InvalidArgumentError(
          absl::StrCat("the scheduler sized the KV cache at ", num_blocks,
                       " blocks, more than this rank's ", plan->num_blocks)));
    }
    if (absl::Status s = runner_->ResizeKvCache(num_blocks); !s.ok()) {
      runner_.reset();
      return fail(s);
    }
  }
  runner_->set_tracing(init.trace());
  v1::WorkerMessage ready;
  ready.mutable_ready()->set_generation(init.generation());
  ready.mutable_ready()->set_weight_bytes(runner_->weight_bytes());
  ready.mutable_ready()->set_kv_cache_bytes(runner_->kv_cache_bytes());
  if (!writer.Write(ready)) return finish("reporting ready");
  generation_ = init.generation();
  ready_ = true;
  const auto [first_layer, end_layer] = shard.Layers(runner_->config().num_layers);
  ORCA_LOG(INFO) << "worker " << options_.name << ": ready, layers " << first_layer << ".."
                 << end_layer - 1 << ", weights " << runner_->weight_bytes() / (1 << 20)
                 << " MiB, activations " << DTypeName(runner_->activation_dtype());

  // Plans are deltas against what earlier plans of this generation gave (plan_codec.h).
  PlanDecoder decoder;
  v1::IterationPlan next;
  while (reader.Next(&next)) {
    absl::StatusOr<IterationPlan> decoded = decoder.Decode(next);
    // A rank whose view of the sequences is wrong cannot go on: a fatal error.
    if (!decoded.ok()) return fail(decoded.status());
    IterationPlan plan = *std::move(decoded);
    plan_ = plan.iteration;
    plan_started_ns_ = absl::ToUnixNanos(absl::Now());
    const int64_t replays = runner_->graph_replays();
    absl::StatusOr<IterationResult> result = runner_->Execute(plan);
    plan_started_ns_ = 0;
    ++iterations_;
    graph_replays_ += runner_->graph_replays() - replays;
    v1::WorkerMessage out;
    if (!result.ok()) {
      // A plan the runner rejects is rejected by every rank before any data-plane
      // traffic; anything else leaves the group inconsistent.
      const bool fatal = !absl::IsInvalidArgument(result.status());
      out.mutable_error()->set_iteration(plan.iteration);
      out.mutable_error()->set_message(std::string(result.status().message()));
      out.mutable_error()->set_fatal(fatal);
      if (fatal) return fail(result.status());
      if (!writer.Write(out)) break;
      continue;
    }
    if (!shard.samples() && !init.trace()) continue;
    ToProto(*result, out.mutable_done());
    if (!writer.Write(out)) break;
  }
  return finish("the session ended");
}

}  // namespace orca
