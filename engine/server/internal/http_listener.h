// HttpListener: an httplib::Server whose per-connection loop is orca's, not the
// library's (cpp-httplib 0.11.4 gives handlers no way to end their connection; a
// response header "Connection: close" is sent but the connection stays open).
//   - A handler may call CloseConnectionAfterResponse(): once its response is written,
//     the connection is half-closed, what the client still sends is read and dropped
//     for a short while (so that it sees the response rather than a reset), and the
//     socket is closed. Used when the request body was not read to its end (413): the
//     rest of it must never be parsed as a next request.
//   - Idle keep-alive connections end as soon as the server stops (the library's loop
//     waits out the keep-alive timeout).
// Everything else (request parsing, routing, timeouts, keep-alive limits) is the
// library's: each request still goes through httplib::Server::process_request.
// Thread-safe as httplib::Server is; CloseConnectionAfterResponse() acts on the calling
// handler thread's connection.
#pragma once

#include <httplib.h>

namespace orca {

class HttpListener : public httplib::Server {
 public:
  // Marks the connection of the request being handled on this thread to be closed once
  // its response is written. Does nothing outside a handler.
  static void CloseConnectionAfterResponse();

 private:
  bool process_and_close_socket(socket_t sock) override;
};

}  // namespace orca
