#include "bench/loadgen/load_runner.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"

namespace orca::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Shared {
  Clock::time_point t0;
  // done and failed count requests sent; not_sent those a --max-duration cut off.
  std::atomic<int64_t> sent{0}, done{0}, failed{0}, not_sent{0}, output_tokens{0};
  std::atomic<double> last_end_s{0};
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;  // guarded by mu
};

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void Record(Shared& sh, RequestRecord& rec, double send_s) {
  rec.send_s = send_s;
  if (rec.failure == "not_sent") {
    ++sh.not_sent;
    return;
  }
  if (rec.ok) {
    sh.output_tokens += rec.output_tokens;
  } else {
    ++sh.failed;
  }
  // The run lasts until the last request that was sent ends.
  const double end = send_s + rec.e2e_s;
  double prev = sh.last_end_s.load();
  while (end > prev && !sh.last_end_s.compare_exchange_weak(prev, end)) {
  }
  ++sh.done;
}

// Sends request i now (the caller waited for its arrival), within the run's deadline.
void SendOne(const TraceRequest& req, int64_t i, const LoadOptions& o, Shared& sh,
             RequestRecord& rec) {
  const double send_s = Since(sh.t0);
  ClientOptions co = o.client;
  if (o.max_duration_s > 0) {
    co.request_timeout_s =
        std::max(0.001, std::min(co.request_timeout_s, o.max_duration_s - send_s));
  }
  ++sh.sent;
  rec = SendCompletion(co, req, i);
  Record(sh, rec, send_s);
}

void MarkNotSent(const TraceRequest& req, int64_t i, RequestRecord& rec) {
  rec.index = i;
  rec.input_len = req.input_len;
  rec.expected_output = req.output_len;
  rec.failure = "not_sent";
  rec.error = "the run's --max-duration passed before it was sent";
}

void ProgressLoop(const LoadOptions& o, Shared& sh, int64_t total) {
  const bool tty = isatty(fileno(stderr));
  auto line = [&] {
    const double t = Since(sh.t0);
    const int64_t done = sh.done, sent = sh.sent;
    std::fprintf(
        stderr,
        "%s%s sent %lld/%lld  done %lld  failed %lld  in flight %lld  not sent %lld  %.1f s  "
        "%.1f tok/s%s",
        tty ? "\r" : "", o.progress_label.c_str(), static_cast<long long>(sent),
        static_cast<long long>(total), static_cast<long long>(done),
        static_cast<long long>(sh.failed.load()), static_cast<long long>(sent - done),
        static_cast<long long>(sh.not_sent.load()), t,
        t > 0 ? static_cast<double>(sh.output_tokens.load()) / t : 0.0, tty ? "   " : "\n");
    std::fflush(stderr);
  };
  std::unique_lock<std::mutex> lock(sh.mu);
  while (!sh.finished) {
    sh.cv.wait_for(lock, std::chrono::duration<double>(o.progress_interval_s));
    line();
  }
  if (tty) std::fprintf(stderr, "\n");
}

}  // namespace

LoadResult RunLoad(const std::vector<TraceRequest>& trace, const LoadOptions& o) {
  LoadResult result;
  const int64_t n = static_cast<int64_t>(trace.size());
  result.records.resize(trace.size());
  Shared sh;
  sh.t0 = Clock::now();
  std::thread progress;
  if (o.progress_interval_s > 0) progress = std::thread([&] { ProgressLoop(o, sh, n); });
  auto expired = [&] { return o.max_duration_s > 0 && Since(sh.t0) >= o.max_duration_s; };

  std::vector<std::thread> threads;
  // Outlives the client threads, which are joined below (ASan found it scoped to the
  // branch: a stack use after scope by every closed-loop client).
  std::atomic<int64_t> next{0};
  if (o.concurrency > 0) {
    for (int32_t c = 0; c < o.concurrency; ++c) {
      threads.emplace_back([&] {
        for (int64_t i = next++; i < n; i = next++) {
          if (expired()) {
            MarkNotSent(trace[i], i, result.records[i]);
            Record(sh, result.records[i], Since(sh.t0));
            continue;
          }
          SendOne(trace[i], i, o, sh, result.records[i]);
        }
      });
    }
  } else {
    threads.reserve(trace.size());
    for (int64_t i = 0; i < n; ++i) {
      const auto at = sh.t0 + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(trace[i].arrival_s));
      if (o.max_duration_s > 0 && trace[i].arrival_s >= o.max_duration_s) {
        MarkNotSent(trace[i], i, result.records[i]);
        Record(sh, result.records[i], trace[i].arrival_s);
        continue;
      }
      std::this_thread::sleep_until(at);
      threads.emplace_back([&, i] { SendOne(trace[i], i, o, sh, result.records[i]); });
    }
  }
  for (auto& t : threads) t.join();
  result.duration_s = sh.last_end_s.load();
  {
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.finished = true;
  }
  sh.cv.notify_all();
  if (progress.joinable()) progress.join();
  return result;
}

}  // namespace orca::bench
