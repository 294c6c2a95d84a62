// ConnectionWaiter: one thread (epoll) that holds the HTTP connections nobody is serving
// right now, so that slow or idle clients cost a file descriptor and a buffer, never a
// thread:
//   - a connection waiting for a complete request header (a new one, or a keep-alive
//     one between requests): once the header's blank line has arrived, the connection
//     and the bytes read so far go to the `ready` callback; if its deadline passes first,
//     its client closes it, or the header grows past max_header_bytes (answered 431),
//     it is closed and `closed` is called;
//   - a connection being closed (Linger): what its client still sends is read and
//     dropped until the client closes or the linger time passes, so that the client
//     reads our last answer instead of a reset.
// Thread-safe. Callbacks run on the waiter's thread, or on the caller's for a header
// already complete; they must not block. Owns the sockets it holds (closes them).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace orca {

class ConnectionWaiter {
 public:
  using Clock = std::chrono::steady_clock;
  // Takes over `sock` (its request header is complete within `buffered`).
  using ReadyFn = std::function<void(int sock, std::string buffered, int requests_left)>;
  // A connection waiting for a request was closed here.
  using ClosedFn = std::function<void()>;

  ConnectionWaiter(ReadyFn ready, ClosedFn closed, size_t max_header_bytes);
  ~ConnectionWaiter();

  // Starts the thread; false when epoll cannot be set up.
  bool Start();
  // Waits for the next request header on `sock`, after the bytes already `buffered`:
  // the first byte must come within `idle`, and the whole header within `header` of the
  // first byte. After Stop(): closes `sock` (and calls `closed`).
  void WaitForRequest(int sock, std::string buffered, std::chrono::milliseconds idle,
                      std::chrono::milliseconds header, int requests_left);
  // Half-closes `sock`, drops what its client still sends for up to `time`, closes it.
  // Closes it at once when kMaxLingering connections linger already, or after Stop().
  void Linger(int sock, std::chrono::milliseconds time);
  // Closes every connection it holds and joins the thread. Idempotent.
  void Stop();

  static constexpr size_t kMaxLingering = 1024;

 private:
  struct Entry {
    bool linger = false;
    std::string buffer;
    Clock::time_point deadline;
    std::chrono::milliseconds header{0};
    int requests_left = 0;
  };
  void Loop();
  void Add(int sock, Entry entry);
  enum class Next { kWait, kReady, kClose };
  // Reads what arrived on `sock`; returns what becomes of it.
  Next OnReadable(int sock, Entry& e);
  void Close(int sock, const Entry& e);

  const ReadyFn ready_;
  const ClosedFn closed_;
  const size_t max_header_bytes_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> lingering_{0};
  absl::Mutex mu_;
  std::vector<std::pair<int, Entry>> pending_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::unordered_map<int, Entry> entries_;  // the waiter's thread only
};

}  // namespace orca
