// A per-iteration timeline in the Chrome Trace Event Format (chrome://tracing,
// ui.perfetto.dev): `--trace-file` (server.trace_file) makes the serving process write
// one "complete" event per step of every iteration — the scheduler's schedule, plan
// send, wait and update on its own track, and each rank's receive, forward, all-reduces,
// send, LM head and sampling on one track per rank (docs/engine.md, "Per-iteration
// trace").
//
// Timestamps are microseconds of the system clock, so spans a worker measured in
// another process line up with the scheduler's (exactly on one host; to within the
// clocks' NTP offset across hosts). On CUDA a span is host time: it covers the issue of
// asynchronous work and whatever waits for it.
//
// TraceWriter writes whole events to its file, in batches of up to 256 KiB and at least
// once a second (the JSON array format's closing bracket is optional, so a file cut
// short by a crash still loads), and stops after `max_events`, saying so in the file.
// Thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace orca {

// One timed step, as a rank measured it.
struct TraceSpan {
  std::string name;
  int64_t start_us = 0;  // TraceNowUs() at its start
  int64_t dur_us = 0;
};

// Microseconds since the Unix epoch (system clock).
int64_t TraceNowUs();

// Appends {name, start, now - start} to `spans` when it goes out of scope, if `spans` is
// not null (tracing off costs one branch).
class ScopedSpan {
 public:
  ScopedSpan(std::vector<TraceSpan>* spans, const char* name)
      : spans_(spans), name_(name), start_us_(spans ? TraceNowUs() : 0) {}
  ~ScopedSpan() {
    if (spans_) spans_->push_back(TraceSpan{name_, start_us_, TraceNowUs() - start_us_});
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  std::vector<TraceSpan>* spans_;
  const char* name_;
  int64_t start_us_;
};

class TraceWriter {
 public:
  // Tracks: the scheduler's, and one per rank of the group.
  static constexpr int kSchedulerTrack = 1;
  static int RankTrack(int32_t rank) { return 100 + rank; }

  // Creates (truncates) `path`. InvalidArgument naming the path when it cannot.
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path,
                                                           int64_t max_events = 2'000'000);
  ~TraceWriter();  // closes the array and the file

  // Names a track (a "process" row in the viewer); the first name given wins.
  void NameTrack(int track, const std::string& name);
  // One more number in an event's args (e.g. the tokens an iteration schedules).
  struct Arg {
    const char* key;  // a literal: written as is, unescaped
    int64_t value;
  };

  // Writes one complete event on `track`; `iteration` goes into its args (< 0: none),
  // then `args`.
  void Span(int track, const TraceSpan& span, int64_t iteration = -1,
            std::initializer_list<Arg> args = {});
  void Spans(int track, const std::vector<TraceSpan>& spans, int64_t iteration = -1);

  int64_t events_written() const;

 private:
  TraceWriter(std::FILE* file, std::string path, int64_t max_events);
  // Appends one event (and its comma) to the batch; writes the batch out when it is
  // large or a second old.
  void WriteLocked(const std::string& json) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const int64_t max_events_;
  mutable absl::Mutex mu_;
  std::FILE* file_ ABSL_GUARDED_BY(mu_);
  std::string batch_ ABSL_GUARDED_BY(mu_);
  int64_t flushed_us_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t events_ ABSL_GUARDED_BY(mu_) = 0;
  bool full_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> named_ ABSL_GUARDED_BY(mu_);
};

}  // namespace orca
