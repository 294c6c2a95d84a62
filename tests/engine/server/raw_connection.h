// RawConnection: a plain loopback TCP connection for the server tests that must control
// the bytes on the wire (half-sent headers, chunked bodies written by hand, plain HTTP
// to a TLS port, connections that never send). Blocking reads give up after 10 s without
// a byte, so a server that never answers fails the test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace orca::testing {

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawConnection() { ::close(fd_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return connected_; }
  bool Send(const std::string& data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Reads until the server closes the connection (sets `closed`) or 10 s pass without a
  // byte.
  std::string ReadAll(bool* closed) {
    std::string out;
    char buf[4096];
    while (true) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        *closed = n == 0;
        return out;
      }
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // Reads what the server sends until it closes the connection (true) or `timeout`
  // passes (false).
  bool ReadUntilClosed(std::chrono::milliseconds timeout, std::string* out = nullptr) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    char buf[4096];
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return true;  // closed (or reset)
      if (out != nullptr) out->append(buf, static_cast<size_t>(n));
    }
  }
  // Whether the server has closed the connection (without waiting).
  bool ClosedNow() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace orca::testing
