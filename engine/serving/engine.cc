#include "engine/serving/engine.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/sched/request_limits.h"
#include "engine/serving/local_executor.h"
#include "engine/serving/stop_checker.h"

namespace orca {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Draws the seed of a request that did not ask for one (the only place seeds are drawn).
uint64_t DrawSeed() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

}  // namespace

struct Engine::Live {
  std::shared_ptr<RequestStream> stream;
  std::unique_ptr<StreamingDetokenizer> detok;
  std::unique_ptr<StopChecker> stop;
  std::vector<int32_t> stop_token_ids;
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_prompt_tokens = 0;
  double arrival = 0;
  double first_scheduled = -1;
  double first_token = -1;
  double last_token = -1;
  bool done = false;
  FinishReason reason = FinishReason::kNone;
  std::vector<StreamEvent> held;  // request-level policy: returned when the batch ends
};

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options,
                                                       std::unique_ptr<Executor> executor) {
  auto e = std::unique_ptr<Engine>(new Engine());
  e->options_ = options;
  ORCA_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::FromDirectory(options.model.dir));
  if (executor == nullptr) {
    ORCA_ASSIGN_OR_RETURN(auto local, LocalExecutor::Create(LocalExecutorOptions{
                                          options.model, options.device, options.kv_cache}));
    ORCA_LOG(INFO) << "engine: weights " << local->runner().weight_bytes() / (1 << 20)
                   << " MiB, KV cache " << local->runner().kv_cache_bytes() / (1 << 20) << " MiB";
    executor = std::move(local);
  }
  e->executor_ = std::move(executor);
  const ModelConfig& c = e->executor_->config();
  SchedulerConfig& sc = e->scheduler_config_;
  static_cast<SchedulerOptions&>(sc) = options.scheduler;
  sc.max_model_len = options.model.max_model_len;
  if (sc.max_model_len <= 0 || sc.max_model_len > c.max_position_embeddings) {
    sc.max_model_len = c.max_position_embeddings;
  }
  sc.max_inflight_batches = e->executor_->max_inflight();
  e->pool_ =
      std::make_unique<KvBlockPool>(e->executor_->num_kv_blocks(), e->executor_->block_size());
  e->scheduler_ = std::make_unique<IterationScheduler>(sc, e->pool_.get());
  ORCA_LOG(INFO) << "engine: " << c.architecture << " from " << options.model.dir << ", KV cache "
                 << e->executor_->num_kv_blocks() << " blocks x " << e->executor_->block_size()
                 << " tokens, context " << sc.max_model_len << ", " << sc.max_inflight_batches
                 << " batch(es) in flight";
  return e;
}

Engine::~Engine() { Stop(); }

void Engine::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  for (auto& [id, live] : live_) {
    StreamEvent ev;
    ev.finished = true;
    ev.finish_reason = FinishReason::kAbort;
    ev.status = absl::UnavailableError("the server is shutting down");
    live->stream->Push(std::move(ev));
  }
  live_.clear();
}

absl::StatusOr<std::shared_ptr<RequestStream>> Engine::Submit(GenerateParams params) {
  const ModelConfig& c = executor_->config();
  ORCA_RETURN_IF_ERROR(ValidateRequest(
      params.prompt_tokens, params.max_tokens,
      RequestLimits{c.vocab_size, scheduler_config_.max_model_len,
                    int64_t{pool_->num_blocks()} * pool_->block_size()}));
  auto r = std::make_unique<Request>();
  auto live = std::make_unique<Live>();
  r->prompt_tokens = std::move(params.prompt_tokens);
  r->sampling = params.sampling;
  r->sampling.seed = params.seed ? *params.seed : DrawSeed();
  r->max_tokens = params.max_tokens;
  r->min_tokens = params.min_tokens;
  r->arrival_time = Now();
  if (!params.ignore_eos) {
    r->stop_token_ids = c.eos_token_ids;
    if (auto eos = tokenizer_->eos_id()) r->stop_token_ids.push_back(*eos);
  }
  r->stop_token_ids.insert(r->stop_token_ids.end(), params.stop_token_ids.begin(),
                           params.stop_token_ids.end());
  live->stop_token_ids = r->stop_token_ids;
  live->detok = std::make_unique<StreamingDetokenizer>(*tokenizer_, params.skip_special_tokens);
  live->stop =
      std::make_unique<StopChecker>(std::move(params.stop), params.include_stop_str_in_output);
  live->prompt_tokens = static_cast<int32_t>(r->prompt_tokens.size());
  live->arrival = r->arrival_time;

  absl::MutexLock lock(&mu_);
  if (stop_) return absl::UnavailableError("the engine is stopped");
  if (snapshot_.num_waiting + static_cast<int32_t>(inbox_.size()) >=
      options_.scheduler.max_waiting_requests) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server is overloaded: ", options_.scheduler.max_waiting_requests,
                     " requests are already waiting"));
  }
  r->id = next_id_++;
  live->stream = std::make_shared<RequestStream>(r->id);
  auto stream = live->stream;
  live_[r->id] = std::move(live);
  inbox_.push_back(std::move(r));
  return stream;
}

void Engine::Abort(uint64_t request_id) {
  absl::MutexLock lock(&mu_);
  aborts_.push_back(request_id);
}

EngineSnapshot Engine::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return snapshot_;
}

void Engine::DrainInbox() {
  for (auto& r : inbox_) {
    uint64_t id = r->id;
    absl::Status s = scheduler_->Add(std::move(r));
    if (!s.ok()) FinishLive(id, FinishReason::kError, s);
  }
  inbox_.clear();
  for (uint64_t id : aborts_) {
    scheduler_->Abort(id);
    FinishLive(id, FinishReason::kAbort, absl::OkStatus());
  }
  aborts_.clear();
}

void Engine::FinishLive(uint64_t id, FinishReason reason, const absl::Status& status) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Live& live = *it->second;
  StreamEvent ev;
  ev.finished = true;
  ev.finish_reason = reason;
  ev.status = status;
  ev.prompt_tokens = live.prompt_tokens;
  ev.completion_tokens = live.completion_tokens;
  ev.cached_prompt_tokens = live.cached_prompt_tokens;
  live.held.push_back(std::move(ev));
  live.reason = reason;
  ReleaseDone(id, Now());
}

void Engine::Emit(Live& live, const RequestUpdate& u, double now) {
  StreamEvent ev;
  FinishReason reason = u.finish_reason;
  for (size_t i = 0; i < u.new_tokens.size(); ++i) {
    const int32_t t = u.new_tokens[i];
    ev.token_ids.push_back(t);
    if (i < u.samples.size()) ev.samples.push_back(u.samples[i]);
    ++live.completion_tokens;
    const bool stop_token = reason == FinishReason::kStop &&
                            std::find(live.stop_token_ids.begin(), live.stop_token_ids.end(), t) !=
                                live.stop_token_ids.end();
    if (!stop_token) ev.text += live.stop->Append(live.detok->Push(t));
    if (live.stop->stopped()) {
      reason = FinishReason::kStop;
      if (!u.finished) scheduler_->Finish(u.request_id, FinishReason::kStop);
    }
  }
  const bool finished = u.finished || reason != FinishReason::kNone;
  if (finished && !live.stop->stopped()) {
    ev.text += live.stop->Append(live.detok->Flush());
    ev.text += live.stop->Flush();
  }
  if (observer_ && !ev.token_ids.empty()) {
    if (live.first_token < 0) {
      live.first_token = now;
      observer_->OnFirstToken(now - live.arrival,
                              std::max(0.0, live.first_scheduled - live.arrival));
    } else {
      observer_->OnToken(now - live.last_token);
    }
  }
  live.last_token = now;
  ev.prompt_tokens = live.prompt_tokens;
  ev.completion_tokens = live.completion_tokens;
  ev.cached_prompt_tokens = live.cached_prompt_tokens;
  if (finished) {
    ev.finished = true;
    ev.finish_reason = reason;
    live.done = true;
    live.reason = reason;
  }
  if (IsRequestLevel(options_.scheduler.policy)) {
    live.held.push_back(std::move(ev));  // static batching returns only when the batch ends
  } else {
    live.stream->Push(std::move(ev));
  }
}

void Engine::ReleaseDone(uint64_t id, double now) {
  auto it = live_.find(id);
  Live& live = *it->second;
  for (auto& h : live.held) live.stream->Push(std::move(h));
  if (observer_) {
    observer_->OnFinished(live.reason, live.prompt_tokens, live.completion_tokens,
                          now - live.arrival);
  }
  live_.erase(it);
}

void Engine::RetireFinished(double now) {
  // Requests that finished (by token, length, stop string, abort) leave now; under
  // static batching those that completed wait for their batch.
  const bool static_batching = IsRequestLevel(options_.scheduler.policy);
  for (auto& r : scheduler_->TakeFinished()) {
    auto it = live_.find(r->id);
    if (it == live_.end()) continue;
    if (!it->second->done) {
      FinishLive(r->id, r->finish_reason, absl::OkStatus());
    } else if (!static_batching) {
      ReleaseDone(r->id, now);
    }
  }
  if (static_batching && scheduler_->num_running() == 0) {
    // The static batch is over: release every held response.
    std::vector<uint64_t> done;
    for (auto& [id, live] : live_) {
      if (live->done) done.push_back(id);
    }
    for (uint64_t id : done) ReleaseDone(id, now);
  }
}

void Engine::UpdateSnapshot() {
  snapshot_.num_running = scheduler_->num_running();
  snapshot_.num_waiting = scheduler_->num_waiting();
  snapshot_.kv_cache_usage = pool_->usage();
  snapshot_.num_preemptions = scheduler_->num_preemptions();
  snapshot_.prefix_cache_hit_tokens = scheduler_->num_prefix_cache_hit_tokens();
  snapshot_.iterations = iterations_;
}

void Engine::FailRunning(const absl::Status& error) {
  for (uint64_t id : scheduler_->RunningIds()) {
    // Abort finishes a request in any state, a member of a static batch that completed
    // and waits for its batch included: that one gets the response it completed, the
    // others the retriable error.
    scheduler_->Abort(id);
    auto it = live_.find(id);
    if (it != live_.end() && it->second->done) {
      ReleaseDone(id, Now());
    } else {
      FinishLive(id, FinishReason::kError, error);
    }
  }
  pool_->DropCached();
}

void Engine::Loop() {
  while (Step()) {
  }
}

bool Engine::Step() {
  if (!TakeNewWork()) return false;
  if (inflight_.empty() && !executor_->ready()) {
    // A serving group is (re)forming: requests wait in the queue meanwhile.
    executor_->WaitReady(absl::Milliseconds(100));
    return true;
  }
  if (ScheduleAndSubmit()) return true;  // schedule -> execute
  if (inflight_.empty()) {
    WaitForCapacity();
    return true;
  }
  CompleteOldest(absl::OkStatus());  // update
  return true;
}

bool Engine::TakeNewWork() {
  absl::MutexLock lock(&mu_);
  if (!scheduler_->has_work() && inflight_.empty()) {
    auto wake = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return stop_ || !inbox_.empty() || !aborts_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Milliseconds(100));
  }
  if (stop_) return false;
  DrainInbox();
  // A group that broke between plans took the running requests' KV cache with it
  // (with plans outstanding, their failure reports it instead).
  if (inflight_.empty() && executor_->TakeStateLost()) {
    FailRunning(absl::UnavailableError("the serving group broke; the request can be retried"));
  }
  RetireFinished(Now());  // e.g. a static batch whose last running member was aborted
  return true;
}

bool Engine::ScheduleAndSubmit() {
  // Keep up to one batch per pipeline stage in flight; requests in flight are not
  // scheduled again until their batch returns.
  if (static_cast<int32_t>(inflight_.size()) >= executor_->max_inflight()) return false;
  const double t0 = Now();
  ScheduledBatch batch = scheduler_->Schedule();
  if (batch.empty()) return false;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& s : batch.plan.seqs) {
      auto it = live_.find(s.seq_id);
      if (it == live_.end() || it->second->first_scheduled >= 0) continue;
      it->second->first_scheduled = t0;
      if (const Request* r = scheduler_->Find(s.seq_id)) {
        it->second->cached_prompt_tokens = r->num_cached_prompt_tokens;
      }
    }
  }
  batch.plan.iteration = next_plan_++;
  absl::Status submitted = executor_->Submit(batch.plan);
  inflight_.push_back(InFlight{std::move(batch), t0, Now()});
  if (!submitted.ok()) CompleteOldest(submitted);
  return true;
}

void Engine::WaitForCapacity() {
  absl::MutexLock lock(&mu_);
  UpdateSnapshot();
  if (scheduler_->has_work()) {
    // Nothing fits right now (e.g. waiting for KV blocks held by in-flight work).
    auto wake = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || !aborts_.empty(); };
    mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Milliseconds(5));
  }
}

void Engine::CompleteOldest(const absl::Status& submit_error) {
  InFlight f = std::move(inflight_.front());
  inflight_.pop_front();
  absl::StatusOr<IterationResult> result =
      submit_error.ok() ? executor_->Wait() : absl::StatusOr<IterationResult>(submit_error);
  const double t2 = Now();
  absl::MutexLock lock(&mu_);
  if (!result.ok()) {
    const bool group_broke = absl::IsUnavailable(result.status());
    // A lost group is retriable; any other failure of a validated request is ours.
    const absl::Status error =
        group_broke ? result.status() : absl::InternalError(result.status().message());
    ORCA_LOG(ERROR) << "iteration " << f.batch.plan.iteration << " failed: " << result.status();
    std::vector<InFlight> lost;
    lost.push_back(std::move(f));
    if (group_broke) {  // every outstanding batch is lost with it
      for (auto& g : inflight_) lost.push_back(std::move(g));
      inflight_.clear();
    }
    for (const InFlight& g : lost) {
      for (const auto& s : g.batch.plan.seqs) {
        scheduler_->Finish(s.seq_id, FinishReason::kError);
        FinishLive(s.seq_id, FinishReason::kError, error);
      }
      scheduler_->Update(g.batch, IterationResult{});
    }
    if (group_broke) FailRunning(error);
    f = std::move(lost.front());
  } else {
    for (const RequestUpdate& u : scheduler_->Update(f.batch, *result)) {
      auto it = live_.find(u.request_id);
      if (it == live_.end()) continue;
      Emit(*it->second, u, t2);
    }
  }
  RetireFinished(t2);
  const double t3 = Now();
  ++iterations_;
  UpdateSnapshot();
  if (observer_) {
    observer_->OnIteration(t3 - f.scheduled, (f.submitted - f.scheduled) + (t3 - t2),
                           static_cast<int32_t>(f.batch.plan.seqs.size()),
                           static_cast<int32_t>(f.batch.plan.num_tokens()),
                           static_cast<int32_t>(inflight_.size()) + 1);
  }
}

}  // namespace orca
