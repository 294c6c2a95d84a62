#include "engine/server/internal/http_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

namespace orca {
namespace {

// How long a connection closed after its response keeps reading (and dropping) what the
// client still sends, so that the client reads the response before the socket closes
// (closing with unread data makes the kernel answer with a reset).
constexpr auto kLingerTime = std::chrono::seconds(2);
// How often a connection waiting for its next request checks that the server still runs.
constexpr int kIdlePollMs = 50;

struct Connection {
  bool close_after_response = false;
};
thread_local Connection* current_connection = nullptr;

int TimeoutMs(time_t sec, time_t usec) { return static_cast<int>(sec * 1000 + usec / 1000); }

// Waits up to `timeout_ms` for `events` on `sock`: >0 ready, 0 timeout, <0 error.
int PollFor(int sock, short events, int timeout_ms) {
  pollfd p{sock, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r > 0 && (p.revents & (POLLERR | POLLNVAL)) != 0) return -1;
  return r;
}

// The connection's byte stream, as httplib's own SocketStream: reads are buffered (the
// request line and headers are read a byte at a time) and wait at most the read timeout,
// writes the write timeout. One per connection, so bytes of a pipelined next request
// that were read with the previous one are kept.
class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int sock, int read_timeout_ms, int write_timeout_ms)
      : sock_(sock), read_timeout_ms_(read_timeout_ms), write_timeout_ms_(write_timeout_ms) {}

  bool is_readable() const override { return PollFor(sock_, POLLIN, read_timeout_ms_) > 0; }
  // Writable and the peer has not gone away (a peek that reads end-of-stream).
  bool is_writable() const override {
    if (PollFor(sock_, POLLOUT, write_timeout_ms_) <= 0) return false;
    if (PollFor(sock_, POLLIN, 0) <= 0) return true;
    char c;
    ssize_t n;
    do {
      n = ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
  }
  ssize_t read(char* ptr, size_t size) override {
    if (offset_ < size_) {
      const size_t n = std::min(size, size_ - offset_);
      std::memcpy(ptr, buffer_ + offset_, n);
      offset_ += n;
      return static_cast<ssize_t>(n);
    }
    if (!is_readable()) return -1;
    if (size >= sizeof(buffer_)) return Recv(ptr, size);
    offset_ = size_ = 0;
    const ssize_t n = Recv(buffer_, sizeof(buffer_));
    if (n <= 0) return n;
    size_ = static_cast<size_t>(n);
    return read(ptr, size);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // Whether bytes of a next request are already buffered.
  bool has_buffered() const { return offset_ < size_; }

 private:
  ssize_t Recv(char* ptr, size_t size) {
    ssize_t n;
    do {
      n = ::recv(sock_, ptr, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (get(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
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

  const int sock_;
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  char buffer_[4096];
  size_t offset_ = 0, size_ = 0;
};

// Reads and drops what the peer sends until it closes or kLingerTime passes.
void Linger(int sock) {
  ::shutdown(sock, SHUT_WR);
  const auto deadline = std::chrono::steady_clock::now() + kLingerTime;
  char sink[16384];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || PollFor(sock, POLLIN, static_cast<int>(left.count())) <= 0) return;
    ssize_t n;
    do {
      n = ::recv(sock, sink, sizeof(sink), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return;
  }
}

}  // namespace

void HttpListener::CloseConnectionAfterResponse() {
  if (current_connection != nullptr) current_connection->close_after_response = true;
}

// The loop of httplib's process_server_socket (keep-alive count and timeout, the server's
// read and write timeouts), with the two changes the header describes.
bool HttpListener::process_and_close_socket(socket_t sock) {
  Connection connection;
  current_connection = &connection;
  SocketStream stream(sock, TimeoutMs(read_timeout_sec_, read_timeout_usec_),
                      TimeoutMs(write_timeout_sec_, write_timeout_usec_));
  // Waits for the next request while the server runs, up to the keep-alive timeout.
  auto next_request = [&] {
    if (stream.has_buffered()) return true;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    while (svr_sock_ != INVALID_SOCKET && std::chrono::steady_clock::now() < deadline) {
      const int r = PollFor(sock, POLLIN, kIdlePollMs);
      if (r != 0) return r > 0;
    }
    return false;
  };
  bool ok = false;
  for (size_t left = keep_alive_max_count_;
       left > 0 && svr_sock_ != INVALID_SOCKET && next_request(); --left) {
    bool connection_closed = false;
    ok = process_request(stream, /*close_connection=*/left == 1, connection_closed, nullptr);
    if (connection.close_after_response) {
      Linger(sock);
      break;
    }
    if (!ok || connection_closed) break;
  }
  current_connection = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace orca
