// SocketStream: one HTTP connection's byte stream for cpp-httplib's request processing,
// as the library's own SocketStream but with a buffer that outlives a request: bytes
// read ahead (the rest of a request header the ConnectionWaiter read, a pipelined next
// request) are kept and handed on. Reads wait at most the read timeout per call, writes
// the write timeout, and a write fails once the peer has gone away.
// Not thread-safe: used by the one thread serving the connection. Does not own the
// socket.
#pragma once

#include <httplib.h>

#include <string>

namespace orca {

class SocketStream final : public httplib::Stream {
 public:
  // `buffered`: bytes already read from `sock`, read first.
  SocketStream(int sock, int read_timeout_ms, int write_timeout_ms, std::string buffered);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return sock_; }

  // Removes and returns the bytes read ahead and not yet consumed.
  std::string TakeBuffered();

 private:
  const int sock_;
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  std::string buffer_;
  size_t offset_ = 0;
};

// Waits up to `timeout_ms` for `events` on `sock`: >0 ready, 0 timeout, <0 error.
int PollSocket(int sock, short events, int timeout_ms);

// Returns whether the peer of `sock` has closed or reset the connection (a read would
// see end-of-stream or an error); bytes it sent and nobody read yet do not count.
// Never blocks.
bool PeerClosed(int sock);

}  // namespace orca
