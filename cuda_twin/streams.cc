// Streams and events of the CUDA twin (see streams.h and runtime_internal.h).
#include "cuda_twin/streams.h"

#include <pthread.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cuda_twin/host_guard.h"
#include "cuda_twin/runtime_internal.h"
#include "cuda_twin/twin_config.h"

namespace orca::cuda_twin {
namespace {

class Stream;

// A point on a stream: reached once the stream has completed `seq` items.
struct StreamPoint {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
};

struct Item {
  DeviceWork work;
  std::vector<StreamPoint> waits;  // points on other streams that must be reached first
};

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(int device, bool blocking, bool legacy)
      : device_(device), blocking_(blocking), legacy_(legacy) {}

  void Start(int id) {
    std::thread([self = shared_from_this(), id] { self->Run(id); }).detach();
  }

  int device() const { return device_; }
  bool blocking() const { return blocking_; }
  bool legacy() const { return legacy_; }

  // Appends an item; returns its sequence number (1-based). While the stream captures,
  // the item's work is recorded instead (and the number is the last one queued).
  uint64_t Push(Item item) {
    absl::MutexLock lock(&mu_);
    if (capture_ != nullptr) {
      capture_->push_back(std::move(item.work));
      return enqueued_;
    }
    queue_.push_back(std::move(item));
    return ++enqueued_;
  }
  // Stream capture (cudaStreamBeginCapture .. EndCapture): false when already capturing.
  bool BeginCapture() {
    absl::MutexLock lock(&mu_);
    if (capture_ != nullptr) return false;
    capture_ = std::make_unique<std::vector<DeviceWork>>();
    capture_invalid_ = false;
    return true;
  }
  // The recorded work (null when not capturing); `invalid` when a call the capture
  // cannot hold (a synchronisation) was made meanwhile.
  std::unique_ptr<std::vector<DeviceWork>> EndCapture(bool* invalid) {
    absl::MutexLock lock(&mu_);
    *invalid = capture_invalid_;
    return std::move(capture_);
  }
  bool capturing() {
    absl::MutexLock lock(&mu_);
    return capture_ != nullptr;
  }
  void InvalidateCapture() {
    absl::MutexLock lock(&mu_);
    capture_invalid_ = true;
  }
  uint64_t enqueued() {
    absl::MutexLock lock(&mu_);
    return enqueued_;
  }
  bool Reached(uint64_t seq) {
    absl::MutexLock lock(&mu_);
    return completed_ >= seq;
  }
  void WaitFor(uint64_t seq) {
    struct Arg {
      Stream* stream;
      uint64_t seq;
    } arg{this, seq};
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Arg* a) ABSL_NO_THREAD_SAFETY_ANALYSIS { return a->stream->completed_ >= a->seq; },
        &arg));
  }
  cudaError_t TakeError() {
    absl::MutexLock lock(&mu_);
    return std::exchange(error_, cudaSuccess);
  }
  // Lets the thread exit once the queue is drained.
  void Stop() {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }

 private:
  void Run(int id) {
    const std::string name = absl::StrCat("cudatwin-d", device_, "s", id);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    for (;;) {
      Item item;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](Stream* s)
                 ABSL_NO_THREAD_SAFETY_ANALYSIS { return !s->queue_.empty() || s->stopping_; },
            this));
        if (queue_.empty()) return;
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      for (const StreamPoint& p : item.waits) p.stream->WaitFor(p.seq);
      EnterDeviceWork();
      const cudaError_t err = item.work ? item.work() : cudaSuccess;
      LeaveDeviceWork();
      absl::MutexLock lock(&mu_);
      if (err != cudaSuccess && error_ == cudaSuccess) error_ = err;
      ++completed_;
    }
  }

  const int device_;
  const bool blocking_;
  const bool legacy_;
  absl::Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  cudaError_t error_ ABSL_GUARDED_BY(mu_) = cudaSuccess;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<std::vector<DeviceWork>> capture_ ABSL_GUARDED_BY(mu_);
  bool capture_invalid_ ABSL_GUARDED_BY(mu_) = false;
};

// One recording of an event: the point it marks and when the device reached it.
struct EventRecord {
  StreamPoint point;
  std::chrono::steady_clock::time_point reached;
  // Recorded while its stream captured: a node of the graph, no point on the stream.
  // CUDA refuses to query, synchronise or time such an event (cudaErrorCapturedEvent).
  bool captured = false;
};

struct Event {
  bool timing = true;
  absl::Mutex mu;
  std::shared_ptr<EventRecord> last ABSL_GUARDED_BY(mu);  // null: never recorded
};

class Streams {
 public:
  std::shared_ptr<Stream> Resolve(cudaStream_t handle) {
    absl::MutexLock lock(&mu_);
    const uintptr_t h = reinterpret_cast<uintptr_t>(handle);
    if (h == 0 || h == reinterpret_cast<uintptr_t>(cudaStreamLegacy) ||
        h == reinterpret_cast<uintptr_t>(cudaStreamPerThread)) {
      return LegacyLocked(CurrentDevice());
    }
    auto it = streams_.find(handle);
    return it == streams_.end() ? nullptr : it->second;
  }

  cudaStream_t Create(int device, bool blocking) {
    auto s = std::make_shared<Stream>(device, blocking, /*legacy=*/false);
    absl::MutexLock lock(&mu_);
    s->Start(++next_id_);
    auto handle = reinterpret_cast<cudaStream_t>(s.get());
    streams_[handle] = s;
    return handle;
  }

  bool Destroy(cudaStream_t handle) {
    std::shared_ptr<Stream> s;
    {
      absl::MutexLock lock(&mu_);
      auto it = streams_.find(handle);
      if (it == streams_.end()) return false;
      s = it->second;
      streams_.erase(it);
    }
    s->Stop();  // its queued work still runs, as CUDA's does
    return true;
  }

  // Points the next item on `s` must wait for: the legacy stream orders with the
  // blocking streams of its device, and they with it.
  std::vector<StreamPoint> ImplicitWaits(const Stream& s) {
    std::vector<StreamPoint> waits;
    if (!s.legacy() && !s.blocking()) return waits;
    absl::MutexLock lock(&mu_);
    if (s.legacy()) {
      for (auto& [h, other] : streams_) {
        if (other->device() == s.device() && other->blocking()) {
          waits.push_back({other, other->enqueued()});
        }
      }
    } else {
      auto legacy = LegacyLocked(s.device());
      waits.push_back({legacy, legacy->enqueued()});
    }
    return waits;
  }

  std::vector<std::shared_ptr<Stream>> OfDevice(int device) {
    absl::MutexLock lock(&mu_);
    std::vector<std::shared_ptr<Stream>> out = {LegacyLocked(device)};
    for (auto& [h, s] : streams_) {
      if (s->device() == device) out.push_back(s);
    }
    return out;
  }

 private:
  std::shared_ptr<Stream> LegacyLocked(int device) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto& s = legacy_[device];
    if (s == nullptr) {
      s = std::make_shared<Stream>(device, /*blocking=*/true, /*legacy=*/true);
      s->Start(0);
    }
    return s;
  }

  absl::Mutex mu_;
  std::map<cudaStream_t, std::shared_ptr<Stream>> streams_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::shared_ptr<Stream>> legacy_ ABSL_GUARDED_BY(mu_);
  int next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

Streams& AllStreams() {
  static Streams* streams = new Streams();  // never destroyed: device threads outlive main
  return *streams;
}

uint64_t Push(const std::shared_ptr<Stream>& s, DeviceWork work) {
  Item item;
  item.work = std::move(work);
  item.waits = AllStreams().ImplicitWaits(*s);
  return s->Push(std::move(item));
}

thread_local int tls_device = 0;
thread_local cudaError_t tls_last_error = cudaSuccess;

class EventRegistry {
 public:
  cudaEvent_t Add(std::unique_ptr<Event> e) {
    auto handle = reinterpret_cast<cudaEvent_t>(e.get());
    absl::MutexLock lock(&mu_);
    events_[handle] = std::move(e);
    return handle;
  }
  Event* Find(cudaEvent_t handle) {
    absl::MutexLock lock(&mu_);
    auto it = events_.find(handle);
    return it == events_.end() ? nullptr : it->second.get();
  }
  bool Remove(cudaEvent_t handle) {
    absl::MutexLock lock(&mu_);
    return events_.erase(handle) > 0;
  }

 private:
  absl::Mutex mu_;
  std::map<cudaEvent_t, std::unique_ptr<Event>> events_ ABSL_GUARDED_BY(mu_);
};

EventRegistry& Events() {
  static EventRegistry* events = new EventRegistry();
  return *events;
}

std::shared_ptr<EventRecord> LastRecord(Event* e) {
  absl::MutexLock lock(&e->mu);
  return e->last;
}

}  // namespace

cudaError_t Enqueue(cudaStream_t stream, DeviceWork work) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  Push(s, std::move(work));
  return cudaSuccess;
}

cudaError_t BeginCapture(cudaStream_t stream) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (s->legacy()) return cudaErrorStreamCaptureUnsupported;
  return s->BeginCapture() ? cudaSuccess : cudaErrorIllegalState;
}

cudaError_t EndCapture(cudaStream_t stream, std::vector<DeviceWork>* work) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  bool invalid = false;
  std::unique_ptr<std::vector<DeviceWork>> recorded = s->EndCapture(&invalid);
  if (recorded == nullptr) return cudaErrorIllegalState;
  if (invalid) return cudaErrorStreamCaptureInvalidated;
  *work = std::move(*recorded);
  return cudaSuccess;
}

bool IsCapturing(cudaStream_t stream) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  return s != nullptr && s->capturing();
}

cudaError_t RefuseInCapture(cudaStream_t stream) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (s != nullptr) s->InvalidateCapture();
  return cudaErrorStreamCaptureUnsupported;
}

int CurrentDevice() { return tls_device; }

int StreamDevice(cudaStream_t stream) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  return s == nullptr ? -1 : s->device();
}

cudaError_t Fail(cudaError_t err) {
  if (err != cudaSuccess) tls_last_error = err;
  return err;
}
cudaError_t TakeLastError() { return std::exchange(tls_last_error, cudaSuccess); }
cudaError_t PeekLastError() { return tls_last_error; }

bool ValidDevice(int device) { return device >= 0 && device < Config().devices; }
void SetCurrentDevice(int device) { tls_device = device; }

cudaError_t SynchronizeStream(cudaStream_t stream) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  if (s->capturing()) {  // as CUDA: not allowed, and the capture is lost
    s->InvalidateCapture();
    return cudaErrorStreamCaptureUnsupported;
  }
  s->WaitFor(s->enqueued());
  return s->TakeError();
}

cudaError_t QueryStream(cudaStream_t stream) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  return s->Reached(s->enqueued()) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t SynchronizeDevice(int device) {
  cudaError_t first = cudaSuccess;
  for (const auto& s : AllStreams().OfDevice(device)) {
    s->WaitFor(s->enqueued());
    const cudaError_t err = s->TakeError();
    if (first == cudaSuccess) first = err;
  }
  return first;
}

cudaError_t CreateStream(unsigned flags, cudaStream_t* out) {
  if (out == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return cudaErrorInvalidValue;
  *out = AllStreams().Create(CurrentDevice(), (flags & cudaStreamNonBlocking) == 0);
  return cudaSuccess;
}

cudaError_t DestroyStream(cudaStream_t stream) {
  return AllStreams().Destroy(stream) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t RunAndWait(cudaStream_t stream, std::function<cudaError_t()> work) {
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  s->WaitFor(Push(s, std::move(work)));
  return s->TakeError();
}

cudaError_t CreateEvent(unsigned flags, cudaEvent_t* out) {
  constexpr unsigned kKnown =
      cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (out == nullptr || (flags & ~kKnown) != 0 || (flags & cudaEventInterprocess) != 0) {
    return cudaErrorInvalidValue;
  }
  auto e = std::make_unique<Event>();
  e->timing = (flags & cudaEventDisableTiming) == 0;
  *out = Events().Add(std::move(e));
  return cudaSuccess;
}

cudaError_t DestroyEvent(cudaEvent_t event) {
  return Events().Remove(event) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t RecordEvent(cudaEvent_t event, cudaStream_t stream) {
  Event* e = Events().Find(event);
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (e == nullptr || s == nullptr) return cudaErrorInvalidResourceHandle;
  auto record = std::make_shared<EventRecord>();
  record->point.stream = s;
  record->captured = s->capturing();
  record->point.seq = Push(s, [record] {
    record->reached = std::chrono::steady_clock::now();
    return cudaSuccess;
  });
  absl::MutexLock lock(&e->mu);
  e->last = std::move(record);
  return cudaSuccess;
}

cudaError_t SynchronizeEvent(cudaEvent_t event) {
  Event* e = Events().Find(event);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  std::shared_ptr<EventRecord> r = LastRecord(e);
  if (r == nullptr) return cudaSuccess;
  if (r->captured) return cudaErrorCapturedEvent;
  r->point.stream->WaitFor(r->point.seq);
  return cudaSuccess;
}

cudaError_t QueryEvent(cudaEvent_t event) {
  Event* e = Events().Find(event);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  std::shared_ptr<EventRecord> r = LastRecord(e);
  if (r != nullptr && r->captured) return cudaErrorCapturedEvent;
  return r == nullptr || r->point.stream->Reached(r->point.seq) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t EventElapsedMs(float* ms, cudaEvent_t start, cudaEvent_t end) {
  Event* a = Events().Find(start);
  Event* b = Events().Find(end);
  if (ms == nullptr) return cudaErrorInvalidValue;
  if (a == nullptr || b == nullptr) return cudaErrorInvalidResourceHandle;
  if (!a->timing || !b->timing) return cudaErrorInvalidResourceHandle;
  std::shared_ptr<EventRecord> ra = LastRecord(a), rb = LastRecord(b);
  if (ra == nullptr || rb == nullptr) return cudaErrorInvalidResourceHandle;
  if (ra->captured || rb->captured) return cudaErrorCapturedEvent;
  if (!ra->point.stream->Reached(ra->point.seq) || !rb->point.stream->Reached(rb->point.seq)) {
    return cudaErrorNotReady;
  }
  *ms = std::chrono::duration<float, std::milli>(rb->reached - ra->reached).count();
  return cudaSuccess;
}

cudaError_t StreamWaitEvent(cudaStream_t stream, cudaEvent_t event) {
  Event* e = Events().Find(event);
  std::shared_ptr<Stream> s = AllStreams().Resolve(stream);
  if (e == nullptr || s == nullptr) return cudaErrorInvalidResourceHandle;
  std::shared_ptr<EventRecord> r = LastRecord(e);
  if (r == nullptr) return cudaSuccess;  // never recorded: nothing to wait for
  Item item;
  item.waits = AllStreams().ImplicitWaits(*s);
  item.waits.push_back(r->point);
  s->Push(std::move(item));
  return cudaSuccess;
}

}  // namespace orca::cuda_twin
