#include "engine/core/engine.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "engine/common/log.h"
#include "engine/common/status_macros.h"
#include "engine/core/local_executor.h"
#include "engine/runner/kv_cache_sizing.h"
#include "engine/sched/request_limits.h"

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

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options,
                                                       std::unique_ptr<Executor> executor) {
  auto e = std::unique_ptr<Engine>(new Engine());
  e->options_ = options;
  ORCA_ASSIGN_OR_RETURN(e->tokenizer_, Tokenizer::FromDirectory(options.model.dir));
  if (executor == nullptr) {
    ORCA_ASSIGN_OR_RETURN(auto local, LocalExecutor::Create(LocalExecutorOptions{
                                          options.model, options.device, options.kv_cache,
                                          options.scheduler, options.trace}));
    const ModelRunner& runner = local->runner();
    ORCA_LOG(INFO) << "engine: weights " << runner.weight_bytes() / (1 << 20) << " MiB, KV cache "
                   << runner.kv_cache_bytes() / (1 << 20) << " MiB of "
                   << DTypeName(runner.kv_cache_dtype()) << ", activations "
                   << DTypeName(runner.activation_dtype());
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
  // A group that sizes its cache by its ranks' memory knows the block count only once it
  // first forms (AdoptKvCacheSize); until then the pool has the fewest blocks that sizing
  // guarantees, one sequence of max_model_len, so what Submit accepts holds before and after.
  int32_t blocks = e->executor_->num_kv_blocks();
  if (blocks == 0) blocks = MinKvBlocks(sc.max_model_len, e->executor_->block_size());
  e->pool_ = std::make_unique<KvBlockPool>(blocks, e->executor_->block_size());
  e->scheduler_ = std::make_unique<IterationScheduler>(sc, e->pool_.get());
  e->limits_ = e->scheduler_->limits();  // Submit refuses what the scheduler never could run
  e->limits_.vocab_size = c.vocab_size;
  {
    absl::MutexLock lock(&e->mu_);
    e->outputs_ = std::make_unique<OutputProcessor>(*e->tokenizer_, IsRequestLevel(sc.policy));
  }
  ORCA_LOG(INFO) << "engine: " << c.architecture << " from " << options.model.dir << ", KV cache "
                 << (e->executor_->num_kv_blocks() > 0
                         ? absl::StrCat(e->executor_->num_kv_blocks(), " blocks")
                         : std::string("sized when the group forms,"))
                 << " x " << e->executor_->block_size() << " tokens, context " << sc.max_model_len
                 << ", " << sc.max_inflight_batches << " batch(es) in flight";
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
  // (No processor when Create failed before making one.)
  if (outputs_) outputs_->AbortAll(absl::UnavailableError("the server is shutting down"));
}

absl::StatusOr<std::shared_ptr<const TokenGuide>> Engine::Guide(const std::string& pattern,
                                                                GuideSyntax syntax) {
  GuideCache* cache;
  {
    absl::MutexLock lock(&guides_mu_);
    if (!guides_)
      guides_ = std::make_unique<GuideCache>(TokenVocabulary::FromTokenizer(*tokenizer_));
    cache = guides_.get();  // lives as long as the engine
  }
  return cache->Get(pattern, syntax);
}

absl::StatusOr<std::shared_ptr<RequestStream>> Engine::Submit(GenerateParams params) {
  const ModelConfig& c = executor_->config();
  ORCA_RETURN_IF_ERROR(ValidateRequest(params.prompt_tokens, params.max_tokens, limits_));
  auto r = std::make_unique<Request>();
  r->prompt_tokens = std::move(params.prompt_tokens);
  r->sampling = params.sampling;
  r->guide = std::move(params.guide);
  if (r->guide) r->guide_state = r->guide->start();
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
  OutputOptions out{r->stop_token_ids,
                    std::move(params.stop),
                    params.include_stop_str_in_output,
                    params.skip_special_tokens,
                    static_cast<int32_t>(r->prompt_tokens.size()),
                    r->arrival_time,
                    {r->prompt_tokens.end() - std::min<size_t>(r->prompt_tokens.size(), 6),
                     r->prompt_tokens.end()}};

  absl::MutexLock lock(&mu_);
  if (stop_) return absl::UnavailableError("the engine is stopped");
  // Only requests that will not fit into the running batch at the next iteration
  // count against the queue bound: those waiting beyond the free batch slots.
  const int32_t pending = snapshot_.num_waiting + static_cast<int32_t>(inbox_.size());
  const int32_t free_slots = std::max(0, scheduler_config_.max_running() - snapshot_.num_running);
  if (pending - free_slots >= options_.scheduler.max_waiting_requests) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server is overloaded: ", options_.scheduler.max_waiting_requests,
                     " requests are already waiting"));
  }
  r->id = next_id_++;
  auto stream = outputs_->Add(r->id, std::move(out));
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
    const uint64_t id = r->id;
    const double arrival = r->arrival_time;
    absl::Status s = scheduler_->Add(std::move(r));
    if (!s.ok()) {
      outputs_->Finish(id, FinishReason::kError, s, Now());
    } else {
      queued_.emplace_back(id, arrival);
    }
  }
  inbox_.clear();
  for (uint64_t id : aborts_) {
    scheduler_->Abort(id);
    outputs_->Finish(id, FinishReason::kAbort, absl::OkStatus(), Now());
  }
  aborts_.clear();
}

void Engine::ExpireQueued(double now) {
  const double timeout = options_.scheduler.queue_timeout_s;
  while (!queued_.empty()) {
    const auto [id, arrival] = queued_.front();
    const Request* r = scheduler_->Find(id);
    // Admitted once (a preempted request keeps its admission) or finished: not queued.
    if (r == nullptr || r->admit_order >= 0 || r->status != RequestStatus::kWaiting) {
      queued_.pop_front();
      continue;
    }
    // Arrival order: once the oldest is within its deadline, so are the rest.
    if (timeout <= 0 || now - arrival < timeout) return;
    queued_.pop_front();
    scheduler_->Abort(id);
    const absl::Status expired = absl::UnavailableError(absl::StrCat(
        "the request waited ", static_cast<int64_t>(now - arrival),
        " s without being scheduled (queue deadline ", timeout,
        " s: the serving group is down or the server is overloaded); it can be retried"));
    outputs_->Finish(id, FinishReason::kError, expired, now);
  }
}

void Engine::RetireFinished(double now) {
  for (auto& r : scheduler_->TakeFinished()) outputs_->Retire(r->id, r->finish_reason, now);
  if (scheduler_->num_running() == 0) outputs_->ReleaseHeld(now);
}

void Engine::UpdateSnapshot() {
  snapshot_.num_running = scheduler_->num_running();
  snapshot_.num_waiting = scheduler_->num_waiting();
  snapshot_.kv_cache_usage = pool_->usage();
  snapshot_.kv_cache_blocks = pool_->num_blocks();
  snapshot_.num_preemptions = scheduler_->num_preemptions();
  snapshot_.prefix_cache_hit_tokens = scheduler_->num_prefix_cache_hit_tokens();
  snapshot_.iterations = iterations_;
  snapshot_.generated_tokens = generated_tokens_;
}

void Engine::FailRunning(const absl::Status& error) {
  for (uint64_t id : scheduler_->RunningIds()) {
    // Abort finishes a request in any state, a member of a static batch that completed
    // and waits for its batch included: that one gets the response it completed, the
    // others the retriable error.
    scheduler_->Abort(id);
    outputs_->Fail(id, error, Now());
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
  if (!kv_size_adopted_ && executor_->num_kv_blocks() > 0) AdoptKvCacheSize();
  if (ScheduleAndSubmit()) return true;  // schedule -> execute
  if (inflight_.empty()) {
    WaitForCapacity();
    return true;
  }
  CompleteOldest(absl::OkStatus());  // update
  return true;
}

void Engine::AdoptKvCacheSize() {
  kv_size_adopted_ = true;
  const int32_t blocks = executor_->num_kv_blocks();
  if (blocks == pool_->num_blocks()) return;
  // Nothing has run before the group first formed, so nothing holds a block.
  if (absl::Status s = pool_->Resize(blocks); !s.ok()) {
    ORCA_LOG(ERROR) << "engine: the group sized the KV cache at " << blocks << " blocks: " << s;
    return;
  }
  ORCA_LOG(INFO) << "engine: KV cache " << blocks << " blocks x " << pool_->block_size()
                 << " tokens, sized by the group's memory";
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
  ExpireQueued(Now());
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
  const int64_t trace_t0 = options_.trace ? TraceNowUs() : 0;
  ScheduledBatch batch = scheduler_->Schedule();
  if (batch.empty()) return false;
  const int64_t trace_t1 = options_.trace ? TraceNowUs() : 0;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& s : batch.plan.seqs) {
      const Request* r = scheduler_->Find(s.seq_id);
      outputs_->Scheduled(s.seq_id, t0, r != nullptr ? r->num_cached_prompt_tokens : 0);
    }
  }
  batch.plan.iteration = next_plan_++;
  absl::Status submitted = executor_->Submit(batch.plan);
  if (options_.trace) {
    const int64_t it = static_cast<int64_t>(batch.plan.iteration);
    const int64_t trace_t2 = TraceNowUs();
    // The iteration's shape, so a trace tells what each iteration's time was spent on:
    // rows of one token that sample are decodes, the rest prompt (chunks); `context` is
    // the tokens attention reads, summed over the sequences.
    int64_t decodes = 0, prompt_tokens = 0, context = 0;
    for (const ScheduledSequence& s : batch.plan.seqs) {
      const int64_t n = static_cast<int64_t>(s.token_ids.size());
      if (n == 1 && s.sample && s.output_index > 0) {
        ++decodes;
      } else {
        prompt_tokens += n;
      }
      context += s.start_pos + n;
    }
    options_.trace->Span(TraceWriter::kSchedulerTrack,
                         TraceSpan{"schedule", trace_t0, trace_t1 - trace_t0}, it,
                         {{"sequences", static_cast<int64_t>(batch.plan.seqs.size())},
                          {"decodes", decodes},
                          {"prompt_tokens", prompt_tokens},
                          {"context_tokens", context}});
    // A group's executor encodes and sends the plan; the in-process one runs it.
    options_.trace->Span(TraceWriter::kSchedulerTrack,
                         TraceSpan{"submit", trace_t1, trace_t2 - trace_t1}, it);
  }
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
  const int64_t trace_wait = options_.trace ? TraceNowUs() : 0;
  absl::StatusOr<IterationResult> result =
      submit_error.ok() ? executor_->Wait() : absl::StatusOr<IterationResult>(submit_error);
  const double t2 = Now();
  const int64_t trace_update = options_.trace ? TraceNowUs() : 0;
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
        outputs_->Finish(s.seq_id, FinishReason::kError, error, t2);
      }
      scheduler_->Update(g.batch, IterationResult{});
    }
    if (group_broke) FailRunning(error);
    f = std::move(lost.front());
  } else {
    for (const RequestUpdate& u : scheduler_->Update(f.batch, *result)) {
      generated_tokens_ += static_cast<int64_t>(u.new_tokens.size());
      // A stop string the output processor matched finishes the request there too.
      if (outputs_->Apply(u, t2) == FinishReason::kStop) {
        scheduler_->Finish(u.request_id, FinishReason::kStop);
      }
    }
  }
  RetireFinished(t2);
  const double t3 = Now();
  // The whole loop a decode waits for, scheduling to outputs: what target_itl_ms bounds.
  if (result.ok()) {
    scheduler_->ObserveIteration(f.batch, t3 - f.scheduled);
    LogCostModel();
  }
  if (options_.trace) {
    const int64_t it = static_cast<int64_t>(f.batch.plan.iteration);
    options_.trace->Span(TraceWriter::kSchedulerTrack,
                         TraceSpan{"wait", trace_wait, trace_update - trace_wait}, it);
    options_.trace->Span(TraceWriter::kSchedulerTrack,
                         TraceSpan{"update", trace_update, TraceNowUs() - trace_update}, it);
  }
  ++iterations_;
  UpdateSnapshot();
  if (observer_) {
    observer_->OnIteration(t3 - f.scheduled, (f.submitted - f.scheduled) + (t3 - t2),
                           static_cast<int32_t>(f.batch.plan.seqs.size()),
                           static_cast<int32_t>(f.batch.plan.num_tokens()),
                           static_cast<int32_t>(inflight_.size()) + 1);
  }
}

void Engine::LogCostModel() {
  // When the latency target first has a model to work with, and every 5,000 iterations
  // after, so an operator can check what the target leaves for prefill.
  const IterationCostModel& m = scheduler_->cost_model();
  if (scheduler_config_.target_itl_ms <= 0 || !m.ready()) return;
  if (cost_model_logged_ && m.num_observations() % 5000 != 0) return;
  cost_model_logged_ = true;
  const auto& c = m.coefficients();
  IterationShape decode;
  decode.AddRow(1, 512);
  ORCA_LOG(INFO) << "engine: iteration cost model after " << m.num_observations()
                 << " iterations: " << 1e3 * c[0] << " ms + " << 1e3 * c[1] / 16 << " ms/row + "
                 << 1e3 * c[2] / 256 << " ms/token + " << 1e9 * c[3] / 65536
                 << " ns per query-key pair; a decode at 512 tokens of context: "
                 << 1e3 * m.Predict(decode) << " ms; target " << scheduler_config_.target_itl_ms
                 << " ms";
}

}  // namespace orca
