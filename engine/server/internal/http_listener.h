// HttpListener: an httplib::Server whose connection handling is orca's, not the
// library's (cpp-httplib 0.11.4 gives one thread to each connection for its whole life,
// with no deadline on a request header, and no way for a handler to end its connection).
//   - Connections nobody is serving (a request header still arriving, a keep-alive
//     connection between requests, one being closed) wait in one ConnectionWaiter thread
//     (internal/connection_waiter.h); a worker thread (worker_threads of them) takes a
//     connection only once its request header is complete, and gives it back after the
//     response. Slow or idle clients cost no thread.
//   - Deadlines: a request header must be complete within header_timeout of its first
//     byte (of the connection, for the first request); a keep-alive connection with no
//     next request within idle_timeout is closed. The body and the response keep the
//     server's read and write timeouts (per read or write).
//   - At most max_connections connections are open; one more is answered
//     `503 Service Unavailable` with Retry-After (busy_body) and closed at once.
//   - A handler may call CloseConnectionAfterResponse(): once its response is written,
//     the connection is half-closed, what the client still sends is read and dropped for
//     a short while (so that it sees the response rather than a reset), and the socket is
//     closed. Used when the request body was not read to its end (413): the rest of it
//     must never be parsed as a next request.
//   - A handler may ask ClientGone() whether its client has closed the connection (to
//     abort work nobody will read).
//   - When the server stops, waiting connections end at once; requests being served
//     finish first.
// Request parsing and routing are the library's: each request goes through
// httplib::Server::process_request. Thread-safe as httplib::Server is; the static
// functions act on the calling handler thread's connection.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

namespace orca {

class TlsSessions;

struct HttpListenerOptions {
  int worker_threads = 64;     // requests served at once (a stream holds one)
  int max_connections = 4096;  // open connections; beyond: 503
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds idle_timeout{5000};  // between keep-alive requests
  size_t max_header_bytes = 64 << 10;            // beyond: 431
  std::string busy_body;             // the JSON body of the 503 for a connection over the cap
  std::shared_ptr<TlsSessions> tls;  // null: plain HTTP
};

class HttpListener : public httplib::Server {
 public:
  explicit HttpListener(HttpListenerOptions options);

  // Sets the connection cap (before listening).
  void set_max_connections(int n) { max_connections_ = n; }
  int max_connections() const { return max_connections_; }
  // Returns the connections open now (waiting or being served).
  int open_connections() const { return connections_; }

  // Marks the connection of the request being handled on this thread to be closed once
  // its response is written. Does nothing outside a handler.
  static void CloseConnectionAfterResponse();
  // Returns whether the client of the request being handled on this thread has closed
  // (or reset) its connection. Never blocks; false outside a handler. A client that
  // half-closes its side after sending the request counts as gone.
  static bool ClientGone();
  // Keeps `hold` alive until the response of the request being handled on this thread
  // has been written to the end (a stream included), or the connection failed; then
  // drops it. Replaces an earlier hold of the same request. Does nothing outside a
  // handler (`hold` is dropped at once).
  static void HoldUntilResponseWritten(std::shared_ptr<void> hold);

 private:
  class Dispatcher;
  bool process_and_close_socket(socket_t sock) override;
  // Serves one request whose header is within `buffered` on a worker thread, then gives
  // the connection back to the waiter or closes it.
  void Serve(int sock, std::string buffered, int requests_left);
  // Ends the TLS session of `sock`, if any, and closes it.
  void CloseConnection(int sock);

  const HttpListenerOptions options_;
  std::atomic<int> max_connections_;
  std::atomic<int> connections_{0};
  std::atomic<Dispatcher*> dispatcher_{nullptr};
};

}  // namespace orca
