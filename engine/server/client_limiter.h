// ClientLimiter: the per-client concurrency limit of the public APIs
// (server.max_concurrent_per_client). A client, keyed by its network address, may have
// at most `max_per_client` requests open at once across every transport that shares the
// limiter (orca serve gives the HTTP and the gRPC server the same one); one more is
// refused with ResourceExhausted (HTTP 429 + Retry-After with an OpenAI
// `rate_limit_error`, gRPC RESOURCE_EXHAUSTED) before it is parsed or queued. A request
// holds its Slot until its answer has been written to the end (a stream until its last
// event), then the slot is free again.
//
// The key is the TCP peer address, never a header: X-Forwarded-For and the like are
// whatever the client writes unless a trusted proxy rewrites them, so honouring them would
// let any client pick a fresh key per request. Behind a proxy or load balancer every
// client shares the proxy's address: leave the limit off there (the default) or size it
// for the proxy (docs/security.md).
//
// Thread-safe. The limiter must outlive its slots. Memory is one map entry per client
// with a request open now (entries are dropped when their count returns to zero).
#pragma once

#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace orca {

class ClientLimiter {
 public:
  // One open request of one client; gives its place back when destroyed. Move-only.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }

   private:
    friend class ClientLimiter;
    Slot(ClientLimiter* limiter, std::string client)
        : limiter_(limiter), client_(std::move(client)) {}
    void Release();
    ClientLimiter* limiter_ = nullptr;  // null: holds nothing
    std::string client_;
  };

  // `max_per_client` <= 0: no limit (every Acquire succeeds and nothing is counted).
  explicit ClientLimiter(int max_per_client) : max_(max_per_client) {}
  ClientLimiter(const ClientLimiter&) = delete;
  ClientLimiter& operator=(const ClientLimiter&) = delete;

  bool enabled() const { return max_ > 0; }
  int max_per_client() const { return max_; }

  // Takes one of `client`'s places. Returns the Slot holding it, or ResourceExhausted
  // (a message for the client, naming the limit and the setting) when `client` has
  // max_per_client requests open already.
  absl::StatusOr<Slot> Acquire(absl::string_view client);
  // Returns how many requests `client` has open now.
  int open(absl::string_view client) const;
  // Returns how many clients have a request open now.
  int clients() const;

 private:
  void Release(const std::string& client);

  const int max_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> open_ ABSL_GUARDED_BY(mu_);
};

// Returns the client key of a gRPC peer string ("ipv4:10.0.0.7:5123" -> "10.0.0.7",
// "ipv6:[::1]:5123" -> "::1", "unix:/path" -> "unix:/path"), with an IPv4-mapped IPv6
// address ("::ffff:10.0.0.7") reduced to its IPv4 form, so that a client has one key
// whichever way it reached the server.
std::string ClientKeyFromGrpcPeer(absl::string_view peer);
// Returns the client key of an address as the HTTP server sees it ("10.0.0.7", "::1",
// "::ffff:10.0.0.7" -> "10.0.0.7").
std::string ClientKeyFromAddress(absl::string_view address);

}  // namespace orca
