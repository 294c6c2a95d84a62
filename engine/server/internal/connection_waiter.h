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
// Request bytes are read from the socket itself, or through a ConnectionIo (HTTPS:
// internal/tls_sessions.h decrypts them and is told before a socket is closed).
#pragma once

#include <sys/types.h>

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

// How the bytes of a request are read from a connection when they are not plain (TLS),
// and how its session ends. Thread-safe: called for different sockets from the waiter's
// thread and the connection threads, for one socket by one thread at a time.
class ConnectionIo {
 public:
  virtual ~ConnectionIo() = default;
  // Reads what has arrived on `sock` without blocking (finishing the session's handshake
  // first): > 0 bytes, 0 when the peer closed, < 0 with errno (EAGAIN: nothing yet).
  virtual ssize_t ReadNow(int sock, char* buf, size_t size) = 0;
  // Writes `data` to `sock` without blocking, best effort (error answers).
  virtual void WriteNow(int sock, const std::string& data) = 0;
  // Ends the session of `sock` (which is closed or lingers next); idempotent.
  virtual void Release(int sock) = 0;
};

class ConnectionWaiter {
 public:
  using Clock = std::chrono::steady_clock;
  // Takes over `sock` (its request header is complete within `buffered`).
  using ReadyFn = std::function<void(int sock, std::string buffered, int requests_left)>;
  // A connection waiting for a request was closed here.
  using ClosedFn = std::function<void()>;

  // `io`: how request bytes are read (null: from the socket); must outlive the waiter.
  ConnectionWaiter(ReadyFn ready, ClosedFn closed, size_t max_header_bytes,
                   ConnectionIo* io = nullptr);
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
  ConnectionIo* const io_;
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
