#include "engine/server/internal/http_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "engine/common/log.h"
#include "engine/server/internal/connection_waiter.h"
#include "engine/server/internal/socket_stream.h"
#include "engine/server/internal/tls_sessions.h"

namespace orca {
namespace {

// How long a connection closed after its response keeps reading (and dropping) what the
// client still sends, so that the client reads the response before the socket closes
// (closing with unread data makes the kernel answer with a reset).
constexpr std::chrono::milliseconds kLingerTime{2000};

struct Connection {
  int sock = -1;
  bool close_after_response = false;
  std::shared_ptr<void> hold;  // HoldUntilResponseWritten
};
thread_local Connection* current_connection = nullptr;

int TimeoutMs(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

void CloseSocket(int sock) {
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

}  // namespace

// The task queue httplib's accept loop hands each new connection to: it runs the task
// (process_and_close_socket, which only passes the connection to the waiter) on the
// accepting thread, and owns the waiter and the worker threads. httplib calls
// shutdown() when the listener stops.
class HttpListener::Dispatcher final : public httplib::TaskQueue {
 public:
  explicit Dispatcher(HttpListener* listener)
      : waiter(
            [listener, this](int sock, std::string buffered, int left) {
              workers.enqueue([listener, sock, buffered = std::move(buffered), left]() mutable {
                listener->Serve(sock, std::move(buffered), left);
              });
            },
            [listener] { --listener->connections_; }, listener->options_.max_header_bytes,
            listener->options_.tls.get()),
        workers(static_cast<size_t>(std::max(1, listener->options_.worker_threads))),
        listener_(listener) {
    started = waiter.Start();
    if (!started) {
      ORCA_LOG(ERROR) << "HTTP: cannot set up epoll; connections are refused";
    }
  }

  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {
    waiter.Stop();       // idle and half-received connections end now
    workers.shutdown();  // requests being served finish
    listener_->dispatcher_ = nullptr;
  }

  ConnectionWaiter waiter;
  httplib::ThreadPool workers;
  bool started = false;

 private:
  HttpListener* const listener_;
};

HttpListener::HttpListener(HttpListenerOptions options)
    : options_(std::move(options)), max_connections_(options_.max_connections) {
  new_task_queue = [this] {
    auto* d = new Dispatcher(this);
    dispatcher_ = d;
    return d;
  };
}

void HttpListener::CloseConnectionAfterResponse() {
  if (current_connection != nullptr) current_connection->close_after_response = true;
}

bool HttpListener::ClientGone() {
  return current_connection != nullptr && PeerClosed(current_connection->sock);
}

void HttpListener::HoldUntilResponseWritten(std::shared_ptr<void> hold) {
  if (current_connection != nullptr) current_connection->hold = std::move(hold);
}

void HttpListener::CloseConnection(int sock) {
  if (options_.tls) options_.tls->Release(sock);
  CloseSocket(sock);
}

// Runs on the accepting thread: refuses a connection over the cap, or passes it to the
// waiter until its first request header is complete.
bool HttpListener::process_and_close_socket(socket_t sock) {
  Dispatcher* d = dispatcher_;
  if (d == nullptr || !d->started) {
    CloseSocket(sock);
    return false;
  }
  if (connections_.fetch_add(1) >= max_connections_) {
    --connections_;
    if (options_.tls) {  // a plain-text answer would read as garbage before a handshake
      CloseSocket(sock);
      return false;
    }
    const std::string response =
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
        "Content-Type: application/json\r\nConnection: close\r\n"
        "Content-Length: " +
        std::to_string(options_.busy_body.size()) + "\r\n\r\n" + options_.busy_body;
    (void)!::send(sock, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    d->waiter.Linger(sock, kLingerTime);
    return false;
  }
  if (options_.tls && !options_.tls->Attach(sock)) {
    --connections_;
    CloseConnection(sock);
    return false;
  }
  // Answers go out as written: without this, Nagle holds a keep-alive connection's next
  // small response (and every SSE event after the first) until the client's delayed ACK,
  // ~40 ms on Linux.
  const int one = 1;
  (void)::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  d->waiter.WaitForRequest(sock, "", options_.header_timeout, options_.header_timeout,
                           static_cast<int>(keep_alive_max_count_));
  return true;
}

void HttpListener::Serve(int sock, std::string buffered, int requests_left) {
  Connection connection;
  connection.sock = sock;
  current_connection = &connection;
  SocketStream stream(sock, TimeoutMs(read_timeout_sec_, read_timeout_usec_),
                      TimeoutMs(write_timeout_sec_, write_timeout_usec_), std::move(buffered),
                      options_.tls ? options_.tls->Session(sock) : nullptr);
  bool connection_closed = false;
  const bool ok =
      process_request(stream, /*close_connection=*/requests_left <= 1, connection_closed, nullptr);
  current_connection = nullptr;
  connection.hold.reset();  // the response is written (or failed)
  Dispatcher* d = dispatcher_;
  if (connection.close_after_response && d != nullptr) {
    --connections_;
    d->waiter.Linger(sock, kLingerTime);
    return;
  }
  if (!ok || connection_closed || requests_left <= 1 || d == nullptr ||
      svr_sock_ == INVALID_SOCKET) {
    --connections_;
    CloseConnection(sock);
    return;
  }
  // Waits for the next request without a thread (the bytes read ahead go with it).
  d->waiter.WaitForRequest(sock, stream.TakeBuffered(), options_.idle_timeout,
                           options_.header_timeout, requests_left - 1);
}

}  // namespace orca
