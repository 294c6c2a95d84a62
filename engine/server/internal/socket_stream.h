// SocketStream: one HTTP connection's byte stream for cpp-httplib's request processing,
// as the library's own SocketStream but with a buffer that outlives a request: bytes
// read ahead (the rest of a request header the ConnectionWaiter read, a pipelined next
// request) are kept and handed on. Reads wait at most the read timeout per call, writes
// the write timeout, and a write fails once the peer has gone away. With a TLS session
// (internal/tls_sessions.h: the socket is then non-blocking) the bytes are read and
// written through it, with the same timeouts.
// Not thread-safe: used by the one thread serving the connection. Does not own the
// socket or the session.
#pragma once

#include <httplib.h>
#include <openssl/ssl.h>

#include <string>

namespace orca {

class SocketStream final : public httplib::Stream {
 public:
  // `buffered`: bytes already read from `sock` (decrypted), read first. `tls`: the
  // connection's TLS session, null for plain HTTP.
  SocketStream(int sock, int read_timeout_ms, int write_timeout_ms, std::string buffered,
               SSL* tls = nullptr);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return sock_; }

  // Removes and returns the bytes read ahead and not yet consumed (with TLS, what the
  // session has decrypted too: no readiness event would announce those).
  std::string TakeBuffered();

 private:
  // Reads (writes) through the TLS session, waiting up to the timeout for the socket.
  ssize_t TlsRead(char* ptr, size_t size);
  ssize_t TlsWrite(const char* ptr, size_t size);

  const int sock_;
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  std::string buffer_;
  size_t offset_ = 0;
  SSL* const tls_;
};

// Waits up to `timeout_ms` for `events` on `sock`: >0 ready, 0 timeout, <0 error.
int PollSocket(int sock, short events, int timeout_ms);

// Returns whether the peer of `sock` has closed or reset the connection (a read would
// see end-of-stream or an error); bytes it sent and nobody read yet do not count.
// Never blocks.
bool PeerClosed(int sock);

}  // namespace orca
