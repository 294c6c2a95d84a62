// Bootstrap of the NCCL twin (see nccl_twin_bootstrap.h).
#include "cuda_twin/nccl_twin_bootstrap.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cuda_twin/nccl_twin_transport.h"

namespace orca::cuda_twin {
namespace {

constexpr char kIdMagic[8] = {'O', 'R', 'C', 'A', 'T', 'W', 'I', 'N'};
constexpr uint32_t kHelloMagic = 0x4f544248;      // "OTBH": rank -> root
constexpr uint32_t kReplyMagic = 0x4f544252;      // "OTBR": root -> rank
constexpr uint32_t kHandshakeMagic = 0x4f54424d;  // "OTBM": rank -> rank, first on a link
constexpr uint32_t kProtocolVersion = 1;
// How long a refused connection is retried. The root listens before its id exists, and
// every rank before it registers, so a refusal means the listener is gone (its process
// died, or the root already served its group).
constexpr absl::Duration kRefusedGrace = absl::Seconds(3);
// How long the root waits for one joiner's hello once connected.
constexpr absl::Duration kHelloTimeout = absl::Seconds(10);

// The ncclUniqueId layout: magic, then the root endpoint and nonce.
struct IdFields {
  char magic[8];
  uint32_t ip;
  uint16_t port;
  uint16_t reserved;
  uint64_t nonce;
};
static_assert(sizeof(IdFields) <= sizeof(ncclUniqueId::internal));

struct Hello {
  uint32_t magic = kHelloMagic;
  uint32_t version = kProtocolVersion;
  uint64_t nonce = 0;
  int32_t nranks = 0;
  int32_t rank = 0;
  uint32_t ip = 0;  // the joiner's own listener
  uint16_t port = 0;
  uint16_t reserved = 0;
};

struct Reply {
  uint32_t magic = kReplyMagic;
  int32_t result = ncclSuccess;
  int32_t nranks = 0;  // entries that follow (on success)
  char why[244] = {};
};

struct TableEntry {
  uint32_t ip = 0;
  uint16_t port = 0;
  uint16_t reserved = 0;
};

struct Handshake {
  uint32_t magic = kHandshakeMagic;
  int32_t rank = 0;
  uint64_t nonce = 0;
};

void SendReply(int fd, ncclResult_t result, const std::string& why) {
  Reply r;
  r.result = result;
  std::strncpy(r.why, why.c_str(), sizeof(r.why) - 1);
  (void)WriteFull(fd, &r, sizeof(r));
}

// The root of one group: collects hellos until nranks ranks joined (then sends each
// the table) or the group is refused (then answers every joiner with the error); exits
// once every joiner it expects has its answer, or at the deadline.
void ServeRoot(int listen_fd, uint64_t nonce, absl::Time deadline) {
  struct Joined {
    int fd;
    Hello hello;
  };
  std::vector<Joined> joined;
  int nranks = -1;  // as the first joiner said
  int most_ranks = 0;
  size_t answered = 0;
  ncclResult_t refusal = ncclSuccess;
  std::string why;
  for (;;) {
    if (refusal == ncclSuccess && nranks > 0 && joined.size() == static_cast<size_t>(nranks)) break;
    if (refusal != ncclSuccess && answered >= static_cast<size_t>(most_ranks)) break;
    const int fd = AcceptUntil(listen_fd, deadline);
    if (fd < 0) break;  // deadline: the joiners time out on their own
    Hello h;
    if (!ReadFull(fd, &h, sizeof(h), std::min(deadline, absl::Now() + kHelloTimeout)) ||
        h.magic != kHelloMagic || h.version != kProtocolVersion || h.nonce != nonce) {
      SendReply(fd, ncclInvalidArgument, "not a member of this group (wrong unique id)");
      CloseFd(fd);
      continue;
    }
    most_ranks = std::max(most_ranks, h.nranks);
    if (refusal != ncclSuccess) {
      SendReply(fd, refusal, why);
      CloseFd(fd);
      ++answered;
      continue;
    }
    if (nranks < 0) nranks = h.nranks;
    if (h.nranks != nranks) {
      refusal = ncclInvalidUsage;
      why = absl::StrCat("rank ", h.rank, " joined with nranks ", h.nranks, " but rank ",
                         joined.front().hello.rank, " with nranks ", nranks);
    } else if (h.rank < 0 || h.rank >= nranks) {
      refusal = ncclInvalidUsage;
      why = absl::StrCat("rank ", h.rank, " out of range for nranks ", nranks);
    } else {
      for (const Joined& j : joined) {
        if (j.hello.rank == h.rank) {
          refusal = ncclInvalidUsage;
          why = absl::StrCat("rank ", h.rank, " joined twice");
        }
      }
    }
    joined.push_back(Joined{fd, h});
    if (refusal != ncclSuccess) {
      for (const Joined& j : joined) {
        SendReply(j.fd, refusal, why);
        CloseFd(j.fd);
      }
      answered = joined.size();
      joined.clear();
    }
  }
  if (refusal == ncclSuccess && nranks > 0 && joined.size() == static_cast<size_t>(nranks)) {
    std::vector<TableEntry> table(static_cast<size_t>(nranks));
    for (const Joined& j : joined) {
      table[static_cast<size_t>(j.hello.rank)] = TableEntry{j.hello.ip, j.hello.port, 0};
    }
    for (const Joined& j : joined) {
      Reply r;
      r.nranks = nranks;
      (void)(WriteFull(j.fd, &r, sizeof(r)) &&
             WriteFull(j.fd, table.data(), table.size() * sizeof(TableEntry)));
    }
  }
  for (const Joined& j : joined) CloseFd(j.fd);
  CloseFd(listen_fd);
}

uint64_t RandomNonce() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ uint64_t { rd() } ^
         static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
}

// Connects to every lower rank and accepts every higher one; fills `fds`.
ncclResult_t ConnectMesh(int listen_fd, int rank, uint64_t nonce,
                         const std::vector<TableEntry>& table, absl::Time deadline,
                         std::vector<int>* fds, std::string* error) {
  const int nranks = static_cast<int>(table.size());
  for (int peer = 0; peer < rank; ++peer) {
    const TableEntry& e = table[static_cast<size_t>(peer)];
    const int fd = ConnectUntil(Endpoint{e.ip, e.port},
                                std::min(deadline, absl::Now() + kRefusedGrace), error);
    if (fd < 0) return ncclSystemError;
    (*fds)[static_cast<size_t>(peer)] = fd;
    Handshake hs;
    hs.rank = rank;
    hs.nonce = nonce;
    if (!WriteFull(fd, &hs, sizeof(hs))) {
      *error = absl::StrCat("handshake with rank ", peer, " failed");
      return ncclSystemError;
    }
  }
  for (int pending = nranks - 1 - rank; pending > 0;) {
    const int fd = AcceptUntil(listen_fd, deadline);
    if (fd < 0) {
      *error = absl::StrCat("timed out waiting for ", pending, " higher rank(s) to connect");
      return ncclSystemError;
    }
    Handshake hs;
    const bool valid = ReadFull(fd, &hs, sizeof(hs), deadline) && hs.magic == kHandshakeMagic &&
                       hs.nonce == nonce && hs.rank > rank && hs.rank < nranks &&
                       (*fds)[static_cast<size_t>(hs.rank)] < 0;
    if (!valid) {  // a stranger, or a broken connection: not one of ours
      CloseFd(fd);
      continue;
    }
    (*fds)[static_cast<size_t>(hs.rank)] = fd;
    --pending;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t CreateRoot(ncclUniqueId* id, std::string* error) {
  uint32_t ip = 0;
  if (!TwinHost(&ip, error)) return ncclInvalidArgument;
  uint16_t port = 0;
  const int fd = ListenOn(ip, &port, error);
  if (fd < 0) return ncclSystemError;
  IdFields f{};
  std::memcpy(f.magic, kIdMagic, sizeof(kIdMagic));
  f.ip = ip;
  f.port = port;
  f.nonce = RandomNonce();
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, &f, sizeof(f));
  std::thread(ServeRoot, fd, f.nonce, absl::Now() + InitTimeout()).detach();
  return ncclSuccess;
}

ncclResult_t JoinGroup(const ncclUniqueId& id, int nranks, int rank, std::vector<int>* fds,
                       std::string* error) {
  IdFields f;
  std::memcpy(&f, id.internal, sizeof(f));
  if (std::memcmp(f.magic, kIdMagic, sizeof(kIdMagic)) != 0) {
    *error = "the unique id was not made by ncclGetUniqueId of the NCCL twin";
    return ncclInvalidArgument;
  }
  const absl::Time deadline = absl::Now() + InitTimeout();
  uint32_t ip = 0;
  if (!TwinHost(&ip, error)) return ncclInvalidArgument;
  uint16_t port = 0;
  const int listen_fd = ListenOn(ip, &port, error);
  if (listen_fd < 0) return ncclSystemError;
  fds->assign(static_cast<size_t>(nranks), -1);
  const auto fail = [&](ncclResult_t result) {
    CloseFd(listen_fd);
    for (int& fd : *fds) {
      CloseFd(fd);
      fd = -1;
    }
    return result;
  };

  const int root =
      ConnectUntil(Endpoint{f.ip, f.port}, std::min(deadline, absl::Now() + kRefusedGrace), error);
  if (root < 0) {
    *error = absl::StrCat("cannot reach the bootstrap root (", *error, ")");
    return fail(ncclSystemError);
  }
  Hello h;
  h.nonce = f.nonce;
  h.nranks = nranks;
  h.rank = rank;
  h.ip = ip;
  h.port = port;
  Reply r;
  const bool answered = WriteFull(root, &h, sizeof(h)) && ReadFull(root, &r, sizeof(r), deadline) &&
                        r.magic == kReplyMagic;
  if (!answered) {
    CloseFd(root);
    *error =
        absl::StrCat("timed out after ", absl::FormatDuration(InitTimeout()), " waiting for all ",
                     nranks, " ranks to join (ORCA_NCCL_TWIN_INIT_TIMEOUT_S)");
    return fail(ncclSystemError);
  }
  if (r.result != ncclSuccess) {
    CloseFd(root);
    r.why[sizeof(r.why) - 1] = '\0';
    *error = absl::StrCat("the bootstrap root refused rank ", rank, ": ", r.why);
    return fail(static_cast<ncclResult_t>(r.result));
  }
  std::vector<TableEntry> table(static_cast<size_t>(nranks));
  const bool got_table = r.nranks == nranks &&
                         ReadFull(root, table.data(), table.size() * sizeof(TableEntry), deadline);
  CloseFd(root);
  if (!got_table) {
    *error = "the bootstrap root sent a broken table";
    return fail(ncclSystemError);
  }
  const ncclResult_t mesh = ConnectMesh(listen_fd, rank, f.nonce, table, deadline, fds, error);
  if (mesh != ncclSuccess) return fail(mesh);
  CloseFd(listen_fd);
  return ncclSuccess;
}

}  // namespace orca::cuda_twin
