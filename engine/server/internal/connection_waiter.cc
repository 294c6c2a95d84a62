#include "engine/server/internal/connection_waiter.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace orca {
namespace {

// How often deadlines are checked (and the longest a deadline is overrun).
constexpr int kTickMs = 50;
constexpr size_t kReadChunk = 16384;

constexpr char kHeaderTooLargeBody[] =
    R"({"error":{"message":"The request header is too large.",)"
    R"("type":"invalid_request_error","param":null,"code":null}})";

const std::string& HeaderTooLarge() {
  static const std::string* response = new std::string(
      "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: application/json\r\n"
      "Connection: close\r\nContent-Length: " +
      std::to_string(sizeof(kHeaderTooLargeBody) - 1) + "\r\n\r\n" + kHeaderTooLargeBody);
  return *response;
}

ssize_t RecvNow(int sock, char* ptr, size_t size) {
  ssize_t n;
  do {
    n = ::recv(sock, ptr, size, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n;
}

void CloseSocket(int sock) {
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

// Whether `buffer` holds a request header's end (a blank line); `from`: where new
// bytes start.
bool HeaderComplete(const std::string& buffer, size_t from) {
  const size_t start = from > 3 ? from - 3 : 0;
  return buffer.find("\r\n\r\n", start) != std::string::npos ||
         buffer.find("\n\n", start) != std::string::npos;
}

}  // namespace

ConnectionWaiter::ConnectionWaiter(ReadyFn ready, ClosedFn closed, size_t max_header_bytes,
                                   ConnectionIo* io)
    : ready_(std::move(ready)),
      closed_(std::move(closed)),
      max_header_bytes_(max_header_bytes),
      io_(io) {}

ConnectionWaiter::~ConnectionWaiter() {
  Stop();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool ConnectionWaiter::Start() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return false;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) return false;
  thread_ = std::thread([this] { Loop(); });
  return true;
}

void ConnectionWaiter::WaitForRequest(int sock, std::string buffered,
                                      std::chrono::milliseconds idle,
                                      std::chrono::milliseconds header, int requests_left) {
  Entry e;
  e.requests_left = requests_left;
  e.header = header;
  e.deadline = Clock::now() + (buffered.empty() ? idle : header);
  if (!buffered.empty() && HeaderComplete(buffered, 0) && !stopping_) {
    ready_(sock, std::move(buffered), requests_left);  // a pipelined request
    return;
  }
  e.buffer = std::move(buffered);
  Add(sock, std::move(e));
}

void ConnectionWaiter::Linger(int sock, std::chrono::milliseconds time) {
  if (io_ != nullptr) io_->Release(sock);  // what lingers is dropped unread, undecrypted
  ::shutdown(sock, SHUT_WR);
  if (lingering_.fetch_add(1) >= kMaxLingering) {
    --lingering_;
    CloseSocket(sock);
    return;
  }
  Entry e;
  e.linger = true;
  e.deadline = Clock::now() + time;
  Add(sock, std::move(e));
}

void ConnectionWaiter::Add(int sock, Entry entry) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopped_) {
      pending_.emplace_back(sock, std::move(entry));
      const uint64_t one = 1;
      (void)!::write(wake_fd_, &one, sizeof(one));
      return;
    }
  }
  Close(sock, entry);
}

void ConnectionWaiter::Close(int sock, const Entry& e) {
  if (io_ != nullptr) io_->Release(sock);
  CloseSocket(sock);
  if (e.linger) {
    --lingering_;
  } else if (closed_) {
    closed_();
  }
}

void ConnectionWaiter::Stop() {
  stopping_ = true;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    if (wake_fd_ >= 0) {
      const uint64_t one = 1;
      (void)!::write(wake_fd_, &one, sizeof(one));
    }
  }
  if (thread_.joinable()) thread_.join();
  // The thread has closed what it held; what was added since is closed here.
  std::vector<std::pair<int, Entry>> left;
  {
    absl::MutexLock lock(&mu_);
    left.swap(pending_);
  }
  for (auto& [sock, e] : left) Close(sock, e);
}

ConnectionWaiter::Next ConnectionWaiter::OnReadable(int sock, Entry& e) {
  char chunk[kReadChunk];
  auto would_block = [] { return errno == EAGAIN || errno == EWOULDBLOCK; };
  if (e.linger) {
    while (true) {
      const ssize_t n = RecvNow(sock, chunk, sizeof(chunk));
      if (n > 0) continue;
      return n < 0 && would_block() ? Next::kWait : Next::kClose;
    }
  }
  // Reads until nothing more has arrived: a TLS session may hold decrypted bytes that no
  // further readiness event would announce.
  while (true) {
    const ssize_t n = io_ != nullptr ? io_->ReadNow(sock, chunk, sizeof(chunk))
                                     : RecvNow(sock, chunk, sizeof(chunk));
    if (n < 0) return would_block() ? Next::kWait : Next::kClose;
    if (n == 0) return Next::kClose;  // the client closed the connection
    const size_t from = e.buffer.size();
    if (from == 0) e.deadline = Clock::now() + e.header;  // the header's clock starts
    e.buffer.append(chunk, static_cast<size_t>(n));
    if (HeaderComplete(e.buffer, from)) return Next::kReady;
    if (e.buffer.size() > max_header_bytes_) {
      const std::string& r = HeaderTooLarge();
      if (io_ != nullptr) {
        io_->WriteNow(sock, r);
      } else {
        (void)!::send(sock, r.data(), r.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      }
      return Next::kClose;
    }
  }
}

void ConnectionWaiter::Loop() {
  epoll_event events[256];
  auto next_sweep = Clock::now();
  while (true) {
    const int n = ::epoll_wait(epoll_fd_, events, 256, kTickMs);
    {
      std::vector<std::pair<int, Entry>> added;
      {
        absl::MutexLock lock(&mu_);
        if (stopped_) break;
        added.swap(pending_);
      }
      for (auto& [sock, e] : added) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = sock;
        if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, sock, &ev) != 0) {
          Close(sock, e);
          continue;
        }
        entries_[sock] = std::move(e);
      }
    }
    for (int i = 0; i < n; ++i) {
      const int sock = events[i].data.fd;
      if (sock == wake_fd_) {
        uint64_t count;
        (void)!::read(wake_fd_, &count, sizeof(count));
        continue;
      }
      auto it = entries_.find(sock);
      if (it == entries_.end()) continue;
      Entry& e = it->second;
      const Next next = OnReadable(sock, e);
      if (next == Next::kReady) {
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sock, nullptr);
        Entry taken = std::move(e);
        entries_.erase(it);
        ready_(sock, std::move(taken.buffer), taken.requests_left);
      } else if (next == Next::kClose) {
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, sock, nullptr);
        Close(sock, e);
        entries_.erase(it);
      }
    }
    const auto now = Clock::now();
    if (now < next_sweep) continue;
    next_sweep = now + std::chrono::milliseconds(kTickMs);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->first, nullptr);
      Close(it->first, it->second);
      it = entries_.erase(it);
    }
  }
  for (auto& [sock, e] : entries_) Close(sock, e);
  entries_.clear();
}

}  // namespace orca
