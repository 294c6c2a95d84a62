// List-then-watch of one resource type, feeding events to a handler: the
// controller's view of changes. Relists after 410 Gone, resumes watches from the
// last seen resourceVersion (bookmarks included) after the server closes them, and
// backs off with jitter after errors, logging one line per failure.
//
// Run() blocks on the calling thread; HasSynced() and restarts() may be called
// from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "controller/client/backoff.h"
#include "controller/client/kube_client.h"

namespace orca::controller {

struct InformerOptions {
  std::string ns;              // empty: all namespaces
  std::string label_selector;  // empty: everything
  int watch_timeout_seconds = 300;
  BackoffPolicy backoff{absl::Milliseconds(200), absl::Seconds(30), 2.0, 0.2};
};

class Informer {
 public:
  // Receives ADDED (also for every object of a list), MODIFIED and DELETED events.
  using Handler = std::function<void(const WatchEvent&)>;

  // `client` must outlive the informer.
  Informer(KubeClient* client, ResourceType type, InformerOptions options, Handler handler);

  // Lists and watches until *stop becomes true (checked on every event and between
  // attempts; a blocked watch ends with the client's watch timeout or Shutdown).
  void Run(const std::atomic<bool>* stop);

  // Returns true once the first list has been delivered.
  bool HasSynced() const { return synced_.load(); }
  // Returns how often the watch was re-established (after close, error or 410).
  int restarts() const { return restarts_.load(); }
  // Returns how often it relisted after 410 Gone.
  int relists() const { return relists_.load(); }
  const ResourceType& type() const { return type_; }

 private:
  KubeClient* const client_;
  const ResourceType type_;
  const InformerOptions options_;
  const Handler handler_;
  std::atomic<bool> synced_{false};
  std::atomic<int> restarts_{0};
  std::atomic<int> relists_{0};
};

// Sleeps for `d` or until *stop becomes true, whichever is first.
void SleepUnlessStopped(absl::Duration d, const std::atomic<bool>* stop);

}  // namespace orca::controller
