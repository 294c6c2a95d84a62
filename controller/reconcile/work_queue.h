// A work queue of reconcile keys ("namespace/name") with client-go semantics:
// a key is queued at most once, is never handed to two workers at once (a key
// added while being processed is re-queued when Done), can be delayed, and is
// retried with per-key exponential backoff until Forget.
//
// Thread-safe.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "controller/client/backoff.h"

namespace orca::controller {

class WorkQueue {
 public:
  explicit WorkQueue(BackoffPolicy retry = {absl::Milliseconds(50), absl::Seconds(60), 2.0, 0.1});

  // Queues `key` unless it is queued already.
  void Add(const std::string& key);
  // Queues `key` after `delay` (an earlier pending delay wins).
  void AddAfter(const std::string& key, absl::Duration delay);
  // Queues `key` after its next backoff delay; returns that delay.
  absl::Duration AddRateLimited(const std::string& key);
  // Resets the backoff of `key`.
  void Forget(const std::string& key);
  // Blocks until a key is ready and returns it, or nullopt once shut down.
  std::optional<std::string> Get();
  // Marks `key`, returned by Get, as processed.
  void Done(const std::string& key);
  // Wakes every Get; later Adds are dropped.
  void ShutDown();

  // Returns the number of queued keys (not counting delayed or processing ones).
  size_t Len() const;
  // Returns the number of delayed keys.
  size_t Delayed() const;

 private:
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const BackoffPolicy retry_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirty_ ABSL_GUARDED_BY(mu_);  // queued or to re-queue
  std::set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> waiting_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Backoff> failures_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace orca::controller
