// Sockets and the peer mesh of the NCCL twin (see nccl_twin_transport.h).
#include "cuda_twin/nccl_twin_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace orca::cuda_twin {
namespace {

// A corrupt header must not make the receiver allocate without bound.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 40;

sockaddr_in ToSockaddr(const Endpoint& e) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(e.ip);
  a.sin_port = htons(e.port);
  return a;
}

// Milliseconds from now until `deadline` for poll(): -1 for none, 0 once passed.
int PollTimeoutMs(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return -1;
  const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

// Waits until `fd` has `events` or `deadline`; false on timeout or poll failure.
bool PollUntil(int fd, short events, absl::Time deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, PollTimeoutMs(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

bool TwinHost(uint32_t* ip, std::string* error) {
  const char* env = std::getenv("ORCA_NCCL_TWIN_HOST");
  const char* text = (env != nullptr && *env != '\0') ? env : "127.0.0.1";
  in_addr addr{};
  if (inet_pton(AF_INET, text, &addr) != 1) {
    *error = absl::StrCat("ORCA_NCCL_TWIN_HOST='", text, "' is not a dotted IPv4 address");
    return false;
  }
  *ip = ntohl(addr.s_addr);
  return true;
}

absl::Duration InitTimeout() {
  const char* env = std::getenv("ORCA_NCCL_TWIN_INIT_TIMEOUT_S");
  double seconds = 0;
  if (env != nullptr && absl::SimpleAtod(env, &seconds) && seconds > 0) {
    return absl::Seconds(seconds);
  }
  return absl::Seconds(300);
}

int ListenOn(uint32_t ip, uint16_t* port, std::string* error) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = absl::StrCat("socket: ", std::strerror(errno));
    return -1;
  }
  sockaddr_in a = ToSockaddr(Endpoint{ip, 0});
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, SOMAXCONN) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    *error = absl::StrCat("listen: ", std::strerror(errno));
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

int AcceptUntil(int listen_fd, absl::Time deadline) {
  for (;;) {
    if (!PollUntil(listen_fd, POLLIN, deadline)) return -1;
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      const int one = 1;  // small messages (a decode step's all-reduce) go out at once
      (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) return -1;
  }
}

int ConnectUntil(const Endpoint& to, absl::Time deadline, std::string* error) {
  for (;;) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *error = absl::StrCat("socket: ", std::strerror(errno));
      return -1;
    }
    const sockaddr_in a = ToSockaddr(to);
    int rc;
    do {
      rc = connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a));
    } while (rc != 0 && errno == EINTR);
    if (rc == 0) {
      const int one = 1;
      (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    const int err = errno;
    close(fd);
    char ip[INET_ADDRSTRLEN] = "?";
    in_addr addr{htonl(to.ip)};
    inet_ntop(AF_INET, &addr, ip, sizeof(ip));
    *error = absl::StrCat("connect to ", ip, ":", to.port, ": ", std::strerror(err));
    if ((err != ECONNREFUSED && err != ETIMEDOUT && err != EAGAIN) || absl::Now() >= deadline) {
      return -1;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

bool WriteFull(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadFull(int fd, void* data, size_t bytes, absl::Time deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    if (deadline != absl::InfiniteFuture() && !PollUntil(fd, POLLIN, deadline)) return false;
    const ssize_t n = recv(fd, p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

void CloseFd(int fd) {
  if (fd >= 0) close(fd);
}

const char* KindName(MessageKind kind) {
  switch (kind) {
    case MessageKind::kAllReduce:
      return "AllReduce";
    case MessageKind::kBroadcast:
      return "Broadcast";
    case MessageKind::kP2p:
      return "Send/Recv";
    case MessageKind::kError:
      return "Error";
    case MessageKind::kGoodbye:
      return "Goodbye";
  }
  return "?";
}

PeerMesh::PeerMesh(int rank, int nranks, std::vector<int> fds)
    : rank_(rank),
      nranks_(nranks),
      inbound_(static_cast<size_t>(nranks)),
      state_(static_cast<size_t>(nranks), PeerState::kLive),
      received_(static_cast<size_t>(nranks), 0) {
  peers_.reserve(static_cast<size_t>(nranks));
  for (int p = 0; p < nranks; ++p) {
    peers_.push_back(std::make_unique<Peer>());
    peers_.back()->fd = p == rank ? -1 : fds[static_cast<size_t>(p)];
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) receivers_.emplace_back([this, p] { ReceiveLoop(p); });
  }
}

PeerMesh::~PeerMesh() {
  Abort();
  for (const auto& peer : peers_) CloseFd(peer->fd);
}

void PeerMesh::RecordError(ncclResult_t error, const std::string& what) {
  if (async_error_ != ncclSuccess) return;
  async_error_ = error;
  async_error_text_ = absl::StrCat("rank ", rank_, ": ", what);
}

ncclResult_t PeerMesh::async_error() const {
  absl::MutexLock lock(&mu_);
  return async_error_;
}

std::string PeerMesh::async_error_text() const {
  absl::MutexLock lock(&mu_);
  return async_error_text_;
}

void PeerMesh::ReceiveLoop(int peer) {
  const int fd = peers_[static_cast<size_t>(peer)]->fd;
  for (;;) {
    Message m;
    if (!ReadFull(fd, &m.header, sizeof(m.header))) break;
    const MessageHeader& h = m.header;
    if (h.magic != kMessageMagic || h.bytes > kMaxPayloadBytes) {
      absl::MutexLock lock(&mu_);
      usage_failed_ = true;
      RecordError(ncclInternalError, absl::StrCat("corrupt message from rank ", peer));
      return;
    }
    m.payload.resize(h.bytes);
    if (h.bytes > 0 && !ReadFull(fd, m.payload.data(), h.bytes)) break;

    absl::MutexLock lock(&mu_);
    if (h.seq != received_[static_cast<size_t>(peer)]++) {
      usage_failed_ = true;
      RecordError(ncclInternalError,
                  absl::StrCat("message ", h.seq, " from rank ", peer, " out of sequence"));
      return;
    }
    if (h.kind == MessageKind::kGoodbye) {
      state_[static_cast<size_t>(peer)] = PeerState::kGoodbye;
      return;
    }
    if (h.kind == MessageKind::kError) {
      usage_failed_ = true;
      RecordError(ncclInvalidUsage, absl::StrCat("rank ", peer, " reported: ",
                                                 std::string(m.payload.begin(), m.payload.end())));
      continue;
    }
    inbound_[static_cast<size_t>(peer)].push_back(std::move(m));
  }
  // The connection broke without a goodbye: unless we are closing it ourselves, the
  // peer is gone (killed, or its host or network failed).
  absl::MutexLock lock(&mu_);
  if (!closing_ && state_[static_cast<size_t>(peer)] == PeerState::kLive) {
    state_[static_cast<size_t>(peer)] = PeerState::kDead;
    RecordError(ncclRemoteError, absl::StrCat("connection to rank ", peer,
                                              " closed: the peer process exited or "
                                              "the network failed"));
  }
}

PeerMesh::Result PeerMesh::Send(int peer, MessageHeader header, const void* payload, size_t bytes) {
  header.magic = kMessageMagic;
  header.bytes = bytes;
  const size_t p = static_cast<size_t>(peer);
  bool gone = false;  // the peer said goodbye
  // Blocks (as a spinning kernel would) until Abort or a usage error.
  const auto block = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    mu_.Await(absl::Condition(
        +[](PeerMesh* m) ABSL_NO_THREAD_SAFETY_ANALYSIS { return m->aborted_ || m->usage_failed_; },
        this));
    return aborted_ ? Result::kAborted : Result::kFailed;
  };
  {
    absl::MutexLock lock(&mu_);
    if (aborted_) return Result::kAborted;
    if (usage_failed_) return Result::kFailed;
    if (peer == rank_) {
      Message m;
      m.header = header;
      m.payload.assign(static_cast<const char*>(payload),
                       static_cast<const char*>(payload) + bytes);
      inbound_[p].push_back(std::move(m));
      return Result::kOk;
    }
    if (state_[p] == PeerState::kDead) return block();
    gone = state_[p] == PeerState::kGoodbye;
  }
  if (gone) return SentToGone(peer);
  Peer& to = *peers_[p];
  bool ok;
  {
    absl::MutexLock lock(&to.send_mu);
    header.seq = to.sent++;
    ok = WriteFull(to.fd, &header, sizeof(header)) &&
         (bytes == 0 || WriteFull(to.fd, payload, bytes));
  }
  if (ok) return Result::kOk;
  {
    absl::MutexLock lock(&mu_);
    if (aborted_) return Result::kAborted;
    gone = state_[p] == PeerState::kGoodbye;  // it closed while we were writing
    if (!gone) {
      if (!closing_ && state_[p] == PeerState::kLive) {
        state_[p] = PeerState::kDead;
        RecordError(ncclRemoteError, absl::StrCat("sending to rank ", peer,
                                                  " failed: the peer "
                                                  "process exited or the network failed"));
      }
      return block();
    }
  }
  return SentToGone(peer);
}

PeerMesh::Result PeerMesh::SentToGone(int peer) {
  FailUsage(absl::StrCat("sending to rank ", peer, ", which destroyed its communicator"));
  return Result::kFailed;
}

PeerMesh::Result PeerMesh::Receive(int peer, Message* out) {
  const size_t p = static_cast<size_t>(peer);
  struct Ready {
    PeerMesh* mesh;
    size_t peer;
    bool operator()() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      // A dead peer is deliberately absent: its receiver blocks until Abort.
      return mesh->aborted_ || mesh->usage_failed_ || !mesh->inbound_[peer].empty() ||
             mesh->state_[peer] == PeerState::kGoodbye;
    }
  } ready{this, p};
  absl::ReleasableMutexLock lock(&mu_);
  mu_.Await(absl::Condition(&ready));
  if (aborted_) return Result::kAborted;
  if (usage_failed_) return Result::kFailed;
  if (!inbound_[p].empty()) {
    *out = std::move(inbound_[p].front());
    inbound_[p].pop_front();
    return Result::kOk;
  }
  lock.Release();
  FailUsage(absl::StrCat("rank ", peer,
                         " destroyed its communicator while this rank still "
                         "expected data from it"));
  return Result::kFailed;
}

void PeerMesh::FailUsage(const std::string& what) {
  std::vector<int> live;
  {
    absl::MutexLock lock(&mu_);
    usage_failed_ = true;
    RecordError(ncclInvalidUsage, what);
    if (aborted_ || closing_) return;
    for (int p = 0; p < nranks_; ++p) {
      if (p != rank_ && state_[static_cast<size_t>(p)] == PeerState::kLive) live.push_back(p);
    }
  }
  // Tell the peers, so their side of the mismatch fails instead of waiting for ever.
  const std::string text = absl::StrCat("rank ", rank_, ": ", what);
  for (int p : live) {
    Peer& to = *peers_[static_cast<size_t>(p)];
    MessageHeader h;
    h.magic = kMessageMagic;
    h.kind = MessageKind::kError;
    h.bytes = text.size();
    absl::MutexLock lock(&to.send_mu);
    h.seq = to.sent++;
    (void)(WriteFull(to.fd, &h, sizeof(h)) && WriteFull(to.fd, text.data(), text.size()));
  }
}

void PeerMesh::Close() { ShutDown(/*goodbye=*/true); }
void PeerMesh::Abort() { ShutDown(/*goodbye=*/false); }

void PeerMesh::ShutDown(bool goodbye) {
  absl::MutexLock shutdown_lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  std::vector<bool> live(static_cast<size_t>(nranks_), false);
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    if (!goodbye) aborted_ = true;  // wakes every blocked Send and Receive
    for (int p = 0; p < nranks_; ++p) {
      live[static_cast<size_t>(p)] =
          p != rank_ && state_[static_cast<size_t>(p)] == PeerState::kLive;
    }
  }
  if (goodbye) {
    for (int p = 0; p < nranks_; ++p) {
      if (!live[static_cast<size_t>(p)]) continue;
      Peer& to = *peers_[static_cast<size_t>(p)];
      MessageHeader h;
      h.magic = kMessageMagic;
      h.kind = MessageKind::kGoodbye;
      absl::MutexLock lock(&to.send_mu);
      h.seq = to.sent++;
      (void)WriteFull(to.fd, &h, sizeof(h));
    }
  }
  // Unblocks the receivers' reads and any writer; the fds stay open (and unreusable)
  // until the destructor, so a straggling writer cannot hit someone else's socket.
  for (const auto& peer : peers_) {
    if (peer->fd >= 0) (void)shutdown(peer->fd, SHUT_RDWR);
  }
  for (std::thread& t : receivers_) {
    if (t.joinable()) t.join();
  }
  absl::MutexLock lock(&mu_);
  aborted_ = true;
}

}  // namespace orca::cuda_twin
