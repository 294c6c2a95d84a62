#include "controller/reconcile/work_queue.h"

#include "absl/time/clock.h"

namespace orca::controller {

WorkQueue::WorkQueue(BackoffPolicy retry) : retry_(retry) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // Done() re-queues it
  queue_.push_back(key);
  cv_.Signal();
}

void WorkQueue::Add(const std::string& key) {
  absl::MutexLock lock(&mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  if (shutdown_) return;
  if (delay <= absl::ZeroDuration()) {
    AddLocked(key);
    return;
  }
  absl::Time when = absl::Now() + delay;
  auto it = waiting_.find(key);
  if (it == waiting_.end() || when < it->second) waiting_[key] = when;
  cv_.SignalAll();
}

absl::Duration WorkQueue::AddRateLimited(const std::string& key) {
  absl::Duration delay;
  {
    absl::MutexLock lock(&mu_);
    auto it = failures_.try_emplace(key, retry_).first;
    delay = it->second.Next();
  }
  AddAfter(key, delay);
  return delay;
}

void WorkQueue::Forget(const std::string& key) {
  absl::MutexLock lock(&mu_);
  failures_.erase(key);
}

std::optional<std::string> WorkQueue::Get() {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (shutdown_) return std::nullopt;
    absl::Time now = absl::Now();
    absl::Time next = absl::InfiniteFuture();
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second <= now) {
        AddLocked(it->first);
        it = waiting_.erase(it);
      } else {
        next = std::min(next, it->second);
        ++it;
      }
    }
    if (!queue_.empty()) {
      std::string key = queue_.front();
      queue_.pop_front();
      dirty_.erase(key);
      processing_.insert(key);
      return key;
    }
    if (next == absl::InfiniteFuture()) {
      cv_.Wait(&mu_);
    } else {
      cv_.WaitWithDeadline(&mu_, next);
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  absl::MutexLock lock(&mu_);
  processing_.erase(key);
  if (dirty_.count(key) && !shutdown_) {
    queue_.push_back(key);
    cv_.Signal();
  }
}

void WorkQueue::ShutDown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  cv_.SignalAll();
}

size_t WorkQueue::Len() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

size_t WorkQueue::Delayed() const {
  absl::MutexLock lock(&mu_);
  return waiting_.size();
}

}  // namespace orca::controller
