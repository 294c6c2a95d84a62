// GlooCommunicator: the Communicator of a CPU serving group (DESIGN.md section 4):
// tensor-parallel all-reduce and pipeline send/recv of float32 activations over Gloo's
// TCP transport, in a full mesh of connections between the ranks.
//
// Bootstrap: every rank calls CreateGlooCommunicator with the same store (backed by the
// scheduler's control plane) and prefix; ranks publish their listening addresses there and
// creation blocks until all `world_size` ranks have joined and connected.
//
// Every call is synchronous: AllReduceSum returns once the sum is in `data` on this rank;
// Send returns once the peer has posted the matching Recv and the bytes are written out
// (so two ranks that both Send to each other before they Recv deadlock until the
// timeout); Recv returns once the bytes have arrived. The n-th Send from rank a to rank b
// matches the n-th Recv on b from a; if their counts differ, both time out. No call waits
// longer than GlooOptions::timeout: a peer that stalls gives DeadlineExceeded, one whose
// process died gives Unavailable at once. After any error but InvalidArgument the
// communicator is broken (Gloo closes every connection of the group) and each later call
// returns FailedPrecondition; rebuild the group under a fresh prefix. One communicator is
// used by one thread.
#pragma once

#include <gloo/rendezvous/store.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/comm/communicator.h"

namespace orca {

struct GlooOptions {
  // Address this rank listens on for its peers; "" = the machine's hostname (gloo's default).
  std::string hostname;
  // Limit on the rendezvous and on every operation; must be positive and finite.
  absl::Duration timeout = absl::Seconds(60);
};

// Joins the group of `world_size` ranks as `rank`, exchanging addresses through `store`
// under the key prefix `prefix` (a re-initialised group must use a fresh prefix, or it
// finds the stale addresses of the previous one). Blocks until every rank has joined or
// `options.timeout` passes. `store` is only used during the call. A group of one rank needs
// no store traffic and opens no socket. Fails with InvalidArgument on a bad rank, size or
// timeout, DeadlineExceeded when a peer does not join in time, and Unavailable or Internal
// on other network errors.
absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(gloo::rendezvous::Store& store,
                                                                     const std::string& prefix,
                                                                     int rank, int world_size,
                                                                     const GlooOptions& options);

}  // namespace orca
