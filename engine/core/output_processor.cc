#include "engine/core/output_processor.h"

#include <algorithm>

namespace orca {

struct OutputProcessor::Live {
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
  bool done = false;  // the final event is built (held or sent)
  FinishReason reason = FinishReason::kNone;
  std::vector<StreamEvent> held;  // hold_responses: returned when the batch is over

  StreamEvent Event() const {
    StreamEvent ev;
    ev.prompt_tokens = prompt_tokens;
    ev.completion_tokens = completion_tokens;
    ev.cached_prompt_tokens = cached_prompt_tokens;
    return ev;
  }
};

OutputProcessor::OutputProcessor(const Tokenizer& tokenizer, bool hold_responses)
    : tokenizer_(tokenizer), hold_(hold_responses) {}

OutputProcessor::~OutputProcessor() = default;

std::shared_ptr<RequestStream> OutputProcessor::Add(uint64_t id, OutputOptions options) {
  auto live = std::make_unique<Live>();
  live->stream = std::make_shared<RequestStream>(id);
  live->detok = std::make_unique<StreamingDetokenizer>(tokenizer_, options.skip_special_tokens,
                                                       options.prompt_tail);
  live->stop =
      std::make_unique<StopChecker>(std::move(options.stop), options.include_stop_str_in_output);
  live->stop_token_ids = std::move(options.stop_token_ids);
  live->prompt_tokens = options.prompt_tokens;
  live->arrival = options.arrival;
  auto stream = live->stream;
  live_[id] = std::move(live);
  return stream;
}

void OutputProcessor::Scheduled(uint64_t id, double now, int32_t cached_prompt_tokens) {
  auto it = live_.find(id);
  if (it == live_.end() || it->second->first_scheduled >= 0) return;
  it->second->first_scheduled = now;
  it->second->cached_prompt_tokens = cached_prompt_tokens;
}

FinishReason OutputProcessor::Apply(const RequestUpdate& u, double now) {
  auto it = live_.find(u.request_id);
  if (it == live_.end()) return FinishReason::kNone;
  Live& live = *it->second;
  StreamEvent ev;
  ev.prompt_logprobs = u.prompt_logprobs;
  FinishReason reason = u.finish_reason;
  FinishReason decided = FinishReason::kNone;
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
      if (!u.finished) decided = FinishReason::kStop;
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
  if (!ev.token_ids.empty()) live.last_token = now;
  ev.prompt_tokens = live.prompt_tokens;
  ev.completion_tokens = live.completion_tokens;
  ev.cached_prompt_tokens = live.cached_prompt_tokens;
  if (finished) {
    ev.finished = true;
    ev.finish_reason = reason;
    if (reason == FinishReason::kError) ev.status = u.error;
    live.done = true;
    live.reason = reason;
  }
  if (hold_) {
    live.held.push_back(std::move(ev));  // static batching returns only when the batch ends
  } else {
    live.stream->Push(std::move(ev));
  }
  return decided;
}

void OutputProcessor::Retire(uint64_t id, FinishReason reason, double now) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  if (!it->second->done) {
    Finish(id, reason, absl::OkStatus(), now);
  } else if (!hold_) {
    Release(id, now);
  }
}

void OutputProcessor::ReleaseHeld(double now) {
  if (!hold_) return;
  std::vector<uint64_t> done;
  for (const auto& [id, live] : live_) {
    if (live->done) done.push_back(id);
  }
  for (uint64_t id : done) Release(id, now);
}

void OutputProcessor::Finish(uint64_t id, FinishReason reason, const absl::Status& status,
                             double now) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Live& live = *it->second;
  StreamEvent ev = live.Event();
  ev.finished = true;
  ev.finish_reason = reason;
  ev.status = status;
  live.held.push_back(std::move(ev));
  live.reason = reason;
  Release(id, now);
}

void OutputProcessor::Fail(uint64_t id, const absl::Status& error, double now) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  if (it->second->done) {
    Release(id, now);
  } else {
    Finish(id, FinishReason::kError, error, now);
  }
}

void OutputProcessor::AbortAll(const absl::Status& status) {
  for (auto& [id, live] : live_) {
    StreamEvent ev;
    ev.finished = true;
    ev.finish_reason = FinishReason::kAbort;
    ev.status = status;
    live->stream->Push(std::move(ev));
  }
  live_.clear();
}

void OutputProcessor::Release(uint64_t id, double now) {
  auto it = live_.find(id);
  Live& live = *it->second;
  for (auto& h : live.held) live.stream->Push(std::move(h));
  if (observer_) {
    observer_->OnFinished(live.reason, live.prompt_tokens, live.completion_tokens,
                          now - live.arrival);
  }
  live_.erase(it);
}

}  // namespace orca
