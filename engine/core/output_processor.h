// OutputProcessor: what the client of each live request sees (the output half of the
// core loop; vLLM's OutputProcessor). For every request it owns the incremental
// detokenizer, the stop-string checker, the token counts and timings and the
// RequestStream; it turns the scheduler's RequestUpdates into StreamEvents and hands its
// own finish decisions back as data (Apply returns kStop when a stop string matched; the
// engine tells the scheduler). It is also the one place that holds responses under
// request-level (static) batching: with `hold_responses`, a request's events wait until
// its batch is over (ReleaseHeld).
//
// Not thread-safe: the Engine calls it under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/core/request_stream.h"
#include "engine/core/stop_checker.h"
#include "engine/sched/scheduler.h"
#include "engine/tokenizer/tokenizer.h"

namespace orca {

// Counters and per-iteration observations, read by the metrics exporter. Callbacks run
// on the engine thread and must be cheap.
struct EngineObserver {
  virtual ~EngineObserver() = default;
  virtual void OnIteration(double duration_s, double scheduler_overhead_s, int32_t batch_size,
                           int32_t num_tokens, int32_t inflight) = 0;
  virtual void OnFirstToken(double ttft_s, double queue_s) = 0;
  virtual void OnToken(double inter_token_s) = 0;
  virtual void OnFinished(FinishReason reason, int32_t prompt_tokens, int32_t completion_tokens,
                          double e2e_s) = 0;
};

// How one request's output is produced.
struct OutputOptions {
  std::vector<int32_t> stop_token_ids;  // never shown as text
  std::vector<std::string> stop;        // stop strings
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  int32_t prompt_tokens = 0;
  double arrival = 0;  // seconds, the engine's clock
  // The prompt's last few ids: the first output token is decoded after them, so a
  // leading space ("▁time" after "Once upon a") is kept, as vLLM does.
  std::vector<int32_t> prompt_tail;
};

class OutputProcessor {
 public:
  // `tokenizer` must outlive the processor.
  OutputProcessor(const Tokenizer& tokenizer, bool hold_responses);
  ~OutputProcessor();

  void set_observer(EngineObserver* observer) { observer_ = observer; }

  // Registers request `id`; returns the stream its events go to.
  std::shared_ptr<RequestStream> Add(uint64_t id, OutputOptions options);
  // Records when `id` was first scheduled and how much of its prompt the prefix cache
  // held (first call only).
  void Scheduled(uint64_t id, double now, int32_t cached_prompt_tokens);
  // Applies one iteration's update: detokenizes, checks stop strings, emits (or holds)
  // the event. Returns kStop when a stop string ended the request though the scheduler
  // had not (the engine must finish it there), kNone otherwise.
  FinishReason Apply(const RequestUpdate& update, double now);
  // The scheduler finished `id` with `reason`: a request that had not completed gets a
  // final event now (abort, error, or a stop the scheduler decided); a completed one is
  // released unless responses are held.
  void Retire(uint64_t id, FinishReason reason, double now);
  // The static batch is over: releases every completed request's held events.
  void ReleaseHeld(double now);
  // Ends `id` with `reason` and `status` (abort, error) at once, with its held events.
  void Finish(uint64_t id, FinishReason reason, const absl::Status& status, double now);
  // The request's KV cache is lost: a completed request still gets its response, any
  // other fails with `error`.
  void Fail(uint64_t id, const absl::Status& error, double now);
  // Ends every live request with `status` (the engine stops).
  void AbortAll(const absl::Status& status);

 private:
  struct Live;
  // Pushes the held events of `id`, reports it finished, forgets it.
  void Release(uint64_t id, double now);

  const Tokenizer& tokenizer_;
  const bool hold_;
  EngineObserver* observer_ = nullptr;
  std::map<uint64_t, std::unique_ptr<Live>> live_;
};

}  // namespace orca
