// Drives one benchmark run: replays a trace against a server, open loop (each request
// sent at its arrival time, on its own thread, whatever the server's backlog) or
// closed loop (C clients, each sending its next request when the previous finished),
// and prints a progress line while it runs.
//
// RunLoad blocks until every request finished or failed. Requests not yet sent when
// `max_duration_s` has passed are recorded as failures ("not_sent") and requests still
// streaming then are cut off ("timeout"), so an overloaded point of a sweep ends in
// bounded time and says so. RunLoad starts its own threads; call it from one thread
// at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/loadgen/client.h"
#include "bench/loadgen/stats.h"
#include "bench/loadgen/trace.h"

namespace orca::bench {

struct LoadOptions {
  ClientOptions client;
  int32_t concurrency = 0;         // > 0: closed loop with this many clients
  double max_duration_s = 0;       // 0: unbounded
  double progress_interval_s = 2;  // 0: no progress line
  std::string progress_label;      // prefix of the progress line
};

struct LoadResult {
  std::vector<RequestRecord> records;  // in trace order
  double duration_s = 0;               // first send to last completion
};

// Runs `trace` against the server as `options` say and returns what was measured.
LoadResult RunLoad(const std::vector<TraceRequest>& trace, const LoadOptions& options);

}  // namespace orca::bench
