#include "controller/reconcile/informer.h"

#include <thread>

#include "absl/time/clock.h"
#include "controller/client/kube_errors.h"
#include "engine/common/log.h"

namespace orca::controller {

void SleepUnlessStopped(absl::Duration d, const std::atomic<bool>* stop) {
  absl::Time until = absl::Now() + d;
  while (!stop->load() && absl::Now() < until) {
    absl::SleepFor(std::min(absl::Milliseconds(20), until - absl::Now()));
  }
}

Informer::Informer(KubeClient* client, ResourceType type, InformerOptions options, Handler handler)
    : client_(client),
      type_(std::move(type)),
      options_(std::move(options)),
      handler_(std::move(handler)) {}

void Informer::Run(const std::atomic<bool>* stop) {
  Backoff backoff(options_.backoff);
  std::string rv;
  while (!stop->load()) {
    if (rv.empty()) {
      ListOptions lo;
      lo.label_selector = options_.label_selector;
      absl::StatusOr<ObjectList> list = client_->List(type_, options_.ns, lo);
      if (!list.ok()) {
        absl::Duration delay = backoff.Next();
        ORCA_LOG(WARNING) << list.status().message() << "; retrying in " << delay;
        SleepUnlessStopped(delay, stop);
        continue;
      }
      for (Json& item : list->items) {
        handler_(WatchEvent{WatchEventType::kAdded, std::move(item)});
      }
      rv = list->resource_version;
      synced_ = true;
      backoff.Reset();
    }
    WatchOptions wo;
    wo.label_selector = options_.label_selector;
    wo.resource_version = rv;
    wo.timeout_seconds = options_.watch_timeout_seconds;
    absl::Status s = client_->Watch(type_, options_.ns, wo, [&](const WatchEvent& ev) {
      if (stop->load()) return false;
      if (ev.object.is_object() && ev.object.contains("metadata")) {
        std::string next = ev.object["metadata"].value("resourceVersion", "");
        if (!next.empty()) rv = next;
      }
      if (ev.type != WatchEventType::kBookmark) handler_(ev);
      backoff.Reset();
      return true;
    });
    if (stop->load()) break;
    ++restarts_;
    if (IsGone(s)) {
      ++relists_;
      ORCA_LOG(INFO) << "watch of " << type_.plural << " expired (410 Gone); relisting";
      rv.clear();
      continue;
    }
    if (!s.ok()) {
      absl::Duration delay = backoff.Next();
      ORCA_LOG(WARNING) << s.message() << "; re-watching in " << delay;
      SleepUnlessStopped(delay, stop);
    }
  }
}

}  // namespace orca::controller
