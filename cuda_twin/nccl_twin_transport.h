// The wire of the NCCL twin (cuda_twin/README.md): loopback TCP sockets, and PeerMesh,
// one rank's connections to every other rank of a communicator.
//
// Each connection has a receiver thread that reads whole messages into that peer's
// inbound queue as they arrive, so a send never waits for the peer to post its receive
// (unbounded buffering, where NCCL's would be bounded). Messages carry the sender's
// per-peer sequence number and the op they belong to, so the ops layer can tell a
// matching message from a mismatched one.
//
// Failure model, as a GPU running NCCL kernels sees it:
//  - a peer whose connection breaks without a goodbye (process killed, network error)
//    is dead: the mesh's async error becomes ncclRemoteError, and Send/Receive on that
//    peer block — as a kernel would spin — until Abort;
//  - a usage error (found by the ops layer here or reported by a peer) fails every
//    blocked and later Send/Receive at once;
//  - Abort wakes everything blocked, shuts the sockets down and joins the receivers.
// Thread-safe.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace orca::cuda_twin {

// ---- Sockets (IPv4, blocking; every call retries EINTR and never raises SIGPIPE). ----

// An IPv4 endpoint; `ip` and `port` in host byte order.
struct Endpoint {
  uint32_t ip = 0;
  uint16_t port = 0;
};

// The address the twin listens on: $ORCA_NCCL_TWIN_HOST (dotted IPv4) or 127.0.0.1.
// False (with `error` set) for a malformed override.
bool TwinHost(uint32_t* ip, std::string* error);

// The init timeout: $ORCA_NCCL_TWIN_INIT_TIMEOUT_S seconds (default 300).
absl::Duration InitTimeout();

// Opens a listening socket on `ip`, port chosen by the kernel; returns the fd (or -1)
// and sets `*port`.
int ListenOn(uint32_t ip, uint16_t* port, std::string* error);
// Accepts one connection, waiting until `deadline`; -1 on timeout or error.
int AcceptUntil(int listen_fd, absl::Time deadline);
// Connects to `to`, retrying refused connections until `deadline`; -1 on failure.
int ConnectUntil(const Endpoint& to, absl::Time deadline, std::string* error);
// Writes all of `bytes`; false when the connection is broken.
bool WriteFull(int fd, const void* data, size_t bytes);
// Reads exactly `bytes`; false on EOF, error, or (with a finite deadline) timeout.
bool ReadFull(int fd, void* data, size_t bytes, absl::Time deadline = absl::InfiniteFuture());
void CloseFd(int fd);

// ---- Messages. ----

enum class MessageKind : uint32_t {
  kAllReduce = 1,
  kBroadcast = 2,
  kP2p = 3,      // ncclSend -> ncclRecv
  kError = 4,    // the sender found a usage error; payload: what
  kGoodbye = 5,  // the sender destroyed its communicator cleanly
};

// Returns "AllReduce", "Broadcast", "Send/Recv", ...
const char* KindName(MessageKind kind);

struct MessageHeader {
  uint32_t magic = 0;  // kMessageMagic
  MessageKind kind = MessageKind::kP2p;
  uint64_t seq = 0;  // the sender's count of earlier messages to this peer
  uint64_t count = 0;
  int32_t datatype = 0;
  int32_t op = 0;
  int32_t root = 0;
  uint32_t reserved = 0;
  uint64_t bytes = 0;  // payload size
};

struct Message {
  MessageHeader header;
  std::vector<char> payload;
};

inline constexpr uint32_t kMessageMagic = 0x4f544e4d;  // "OTNM"

// ---- The mesh. ----

class PeerMesh {
 public:
  enum class Result { kOk, kAborted, kFailed };

  // Takes over `fds` (fds[rank] is unused, -1) — one connected socket per peer — and
  // starts their receiver threads.
  PeerMesh(int rank, int nranks, std::vector<int> fds);
  // Aborts if still open; closes the sockets.
  ~PeerMesh();
  PeerMesh(const PeerMesh&) = delete;
  PeerMesh& operator=(const PeerMesh&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Sends one message to `peer` (`rank()` itself: straight into its own inbound queue);
  // the header's magic, seq and bytes are filled in here. kOk once the bytes are handed
  // to the kernel. A dead peer blocks the call until Abort (then kAborted); kFailed
  // after a usage error or to a peer that said goodbye.
  Result Send(int peer, MessageHeader header, const void* payload, size_t bytes);

  // Takes the next message from `peer`, waiting for it. A dead peer with nothing queued
  // blocks until Abort (kAborted); kFailed after a usage error, or when the peer said
  // goodbye and nothing is left.
  Result Receive(int peer, Message* out);

  // Records a usage error found here (first error wins as the async error), tells the
  // peers (best effort) and fails whatever is blocked.
  void FailUsage(const std::string& what);

  // The first asynchronous error (ncclSuccess when none) and what it was.
  ncclResult_t async_error() const;
  std::string async_error_text() const;

  // Says goodbye to every live peer, then closes as Abort does. For a healthy mesh.
  void Close();
  // Wakes everything blocked (kAborted), shuts the sockets down and joins the receiver
  // threads. Idempotent; must not be called from a receiver thread.
  void Abort();

 private:
  enum class PeerState { kLive, kGoodbye, kDead };
  struct Peer {
    int fd = -1;
    absl::Mutex send_mu;  // one writer at a time on the socket
    uint64_t sent ABSL_GUARDED_BY(send_mu) = 0;
  };

  void ReceiveLoop(int peer);
  // Fails the mesh after sending to a peer that said goodbye.
  Result SentToGone(int peer);
  void RecordError(ncclResult_t error, const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShutDown(bool goodbye);

  const int rank_;
  const int nranks_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<std::thread> receivers_;

  mutable absl::Mutex mu_;
  std::vector<std::deque<Message>> inbound_ ABSL_GUARDED_BY(mu_);  // per peer, FIFO
  std::vector<PeerState> state_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> received_ ABSL_GUARDED_BY(mu_);
  bool aborted_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool usage_failed_ ABSL_GUARDED_BY(mu_) = false;
  ncclResult_t async_error_ ABSL_GUARDED_BY(mu_) = ncclSuccess;
  std::string async_error_text_ ABSL_GUARDED_BY(mu_);
  absl::Mutex shutdown_mu_;  // serialises Close/Abort
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace orca::cuda_twin
