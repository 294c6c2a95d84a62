// Helpers of the serving-group tests (group_test, nccl_group_test): greedy requests on
// an engine and what their streams deliver, polling with a deadline, and the ranks of a
// group as WorkerRank threads of the test process. Every wait has a deadline.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/core/engine.h"
#include "engine/worker/worker.h"

namespace orca::testing {

struct TestRequest {
  std::string prompt;
  int32_t max_tokens;
  std::string guide = "";  // "": unguided (a pattern must outlast max_tokens)
  GuideSyntax guide_syntax = GuideSyntax::kRegex;
};

// What a request's stream delivered.
struct Collected {
  std::vector<int32_t> tokens;
  bool finished = false;
  StreamEvent last;  // the finishing event when finished
};

// Pops events until the request finishes, `min_tokens` tokens have arrived (when >= 0)
// or `timeout` passes.
Collected Collect(RequestStream& stream, absl::Duration timeout, int min_tokens = -1,
                  Collected so_far = {});

// Submits `r` greedily (ignoring EOS); null when the engine refuses it (reported).
std::shared_ptr<RequestStream> SubmitGreedy(Engine& engine, const TestRequest& r);

// Submits every request of `requests` at once and returns each one's tokens (empty when
// it failed or took longer than `timeout`; the failure is reported).
std::vector<std::vector<int32_t>> RunRequests(Engine& engine,
                                              const std::vector<TestRequest>& requests,
                                              absl::Duration timeout = absl::Seconds(60));

// Polls `cond` every 10 ms until it holds or `timeout` passes; returns its last value.
template <typename F>
bool Eventually(F cond, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!cond()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

// The ranks of a group as threads of this process, each with a WorkerRank serving
// sessions until stopped. Every wait has a deadline; a rank that does not stop in time
// fails the test and is abandoned (leaked, its thread detached) rather than hang it.
class Ranks {
 public:
  Ranks(std::string dir, int port, int32_t tensor)
      : dir_(std::move(dir)), port_(port), tensor_(tensor) {}
  ~Ranks();

  // The options of global rank `rank` on `device` (CUDA: device index `rank`).
  WorkerOptions Options(int32_t rank, Device device = Device::kCpu) const;

  void StartRank(int32_t rank, Device device = Device::kCpu) { Start(rank, Options(rank, device)); }
  void Start(int32_t rank, WorkerOptions options);

  WorkerRank& worker(int32_t rank) { return *workers_.at(rank).worker; }

  // Waits for rank's Run() to return by itself (a configuration error).
  absl::Status WaitExit(int32_t rank, absl::Duration timeout);

  // Stops the rank and joins its thread; returns Run()'s status.
  absl::Status StopRank(int32_t rank, absl::Duration timeout = absl::Seconds(30));

 private:
  struct Worker {
    std::unique_ptr<WorkerRank> worker;
    std::thread thread;
    std::future<absl::Status> done;
  };
  std::string dir_;
  int port_;
  int32_t tensor_;
  mutable int started_ = 0;
  std::map<int32_t, Worker> workers_;
};

}  // namespace orca::testing
