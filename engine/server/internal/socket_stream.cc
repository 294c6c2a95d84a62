#include "engine/server/internal/socket_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace orca {
namespace {

constexpr size_t kReadChunk = 4096;

ssize_t Recv(int sock, char* ptr, size_t size, int flags) {
  ssize_t n;
  do {
    n = ::recv(sock, ptr, size, flags);
  } while (n < 0 && errno == EINTR);
  return n;
}

void Address(int sock, int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (get(sock, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
  char host[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  ip = host;
}

}  // namespace

int PollSocket(int sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0) return -1;
  return r;
}

bool PeerClosed(int sock) {
  pollfd p{sock, POLLIN | POLLRDHUP, 0};
  int r;
  do {
    r = ::poll(&p, 1, 0);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return false;
  if ((p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) != 0) return true;
  char c;
  const ssize_t n = Recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

SocketStream::SocketStream(int sock, int read_timeout_ms, int write_timeout_ms,
                           std::string buffered, SSL* tls)
    : sock_(sock),
      read_timeout_ms_(read_timeout_ms),
      write_timeout_ms_(write_timeout_ms),
      buffer_(std::move(buffered)),
      tls_(tls) {}

bool SocketStream::is_readable() const {
  if (tls_ != nullptr && SSL_pending(tls_) > 0) return true;
  return PollSocket(sock_, POLLIN, read_timeout_ms_) > 0;
}

// Writable and the peer has not gone away (a peek that reads end-of-stream).
bool SocketStream::is_writable() const {
  if (PollSocket(sock_, POLLOUT, write_timeout_ms_) <= 0) return false;
  if (PollSocket(sock_, POLLIN, 0) <= 0) return true;
  char c;
  const ssize_t n = Recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

ssize_t SocketStream::read(char* ptr, size_t size) {
  if (offset_ < buffer_.size()) {
    const size_t n = std::min(size, buffer_.size() - offset_);
    std::memcpy(ptr, buffer_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }
  if (tls_ != nullptr) return TlsRead(ptr, size);
  if (!is_readable()) return -1;
  if (size >= kReadChunk) return Recv(sock_, ptr, size, 0);
  buffer_.resize(kReadChunk);
  offset_ = 0;
  const ssize_t n = Recv(sock_, buffer_.data(), buffer_.size(), 0);
  buffer_.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (n <= 0) return n;
  return read(ptr, size);
}

ssize_t SocketStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  if (tls_ != nullptr) return TlsWrite(ptr, size);
  ssize_t n;
  do {
    n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n;
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  Address(sock_, ::getpeername, ip, port);
}

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  Address(sock_, ::getsockname, ip, port);
}

std::string SocketStream::TakeBuffered() {
  std::string rest = buffer_.substr(std::min(offset_, buffer_.size()));
  buffer_.clear();
  offset_ = 0;
  while (tls_ != nullptr && SSL_pending(tls_) > 0) {
    char chunk[kReadChunk];
    ERR_clear_error();
    const int n = SSL_read(tls_, chunk, sizeof(chunk));
    if (n <= 0) break;
    rest.append(chunk, static_cast<size_t>(n));
  }
  ERR_clear_error();
  return rest;
}

// The session's socket is non-blocking: a read or write that would block waits for the
// socket (up to the timeout) and is tried again, as OpenSSL asks.
ssize_t SocketStream::TlsRead(char* ptr, size_t size) {
  while (true) {
    ERR_clear_error();
    const int n = SSL_read(tls_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return n;
    const int err = SSL_get_error(tls_, n);
    ERR_clear_error();
    if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && n == 0)) return 0;
    const short wait = err == SSL_ERROR_WANT_READ    ? POLLIN
                       : err == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                     : 0;
    if (wait == 0 || PollSocket(sock_, wait, read_timeout_ms_) <= 0) return -1;
  }
}

ssize_t SocketStream::TlsWrite(const char* ptr, size_t size) {
  while (true) {
    ERR_clear_error();
    const int n = SSL_write(tls_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
    if (n > 0) return n;
    const int err = SSL_get_error(tls_, n);
    ERR_clear_error();
    const short wait = err == SSL_ERROR_WANT_WRITE  ? POLLOUT
                       : err == SSL_ERROR_WANT_READ ? POLLIN
                                                    : 0;
    if (wait == 0 || PollSocket(sock_, wait, write_timeout_ms_) <= 0) return -1;
  }
}

}  // namespace orca
