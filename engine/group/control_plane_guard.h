// ControlPlaneGuard: the admission check of every orca.v1.ControlPlane call the scheduler
// serves (Join, StoreSet, StoreGet). With a control-plane token
// (parallelism.control_token_file) a call must carry the metadata
// `authorization: Bearer <token>`, checked by the public APIs' own Authenticator
// (engine/server/authenticator.h: constant time, never logged); otherwise it fails
// UNAUTHENTICATED with a message that names neither the token nor what was sent, before
// the call does anything (a refused Join never counts as a rank, a refused StoreSet never
// touches the rendezvous store). Refusals are logged with the peer's address, rate
// limited: the first at once, then at most one line per interval, counting those left
// out. Without a token every call is admitted (the scheduler warns once at start).
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/server/authenticator.h"

namespace grpc {
class ServerContext;
class Status;
}  // namespace grpc

namespace orca {

class ControlPlaneGuard {
 public:
  // `token` empty: every call is admitted.
  explicit ControlPlaneGuard(std::string token, absl::Duration log_interval = absl::Seconds(10));

  bool enabled() const { return auth_.enabled(); }
  // Returns OK for a call that may proceed; UNAUTHENTICATED otherwise (and logs the peer
  // and `method`, rate limited).
  grpc::Status Admit(const grpc::ServerContext& ctx, absl::string_view method);
  // Returns how many calls were refused so far.
  int64_t refused() const;

 private:
  const Authenticator auth_;
  const absl::Duration log_interval_;
  mutable absl::Mutex mu_;
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t unlogged_ ABSL_GUARDED_BY(mu_) = 0;  // refusals since the last line
  absl::Time last_logged_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace orca
