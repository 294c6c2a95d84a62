// Bootstrap of the NCCL twin (cuda_twin/README.md), shaped like NCCL's own:
//
//  - CreateRoot (ncclGetUniqueId) opens a root listener on the twin host (127.0.0.1
//    unless $ORCA_NCCL_TWIN_HOST) and starts a thread serving it; the unique id carries
//    its address, port and a random nonce.
//  - JoinGroup (ncclCommInitRank) opens the rank's own listener, registers (rank,
//    nranks, own address) with the root, and gets the table of every rank's address
//    once all nranks have joined. The root refuses a group whose ranks disagree on
//    nranks or repeat a rank (ncclInvalidUsage to every member) and exits once it has
//    answered its group. Ranks then connect full mesh (the higher rank connects, and
//    proves the nonce). Everything gives up after $ORCA_NCCL_TWIN_INIT_TIMEOUT_S
//    seconds (default 300) with ncclSystemError.
// Thread-safe; any number of groups may bootstrap at once.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

namespace orca::cuda_twin {

// Starts a root and writes its id. ncclSystemError when no listener can be opened;
// ncclInvalidArgument for a malformed $ORCA_NCCL_TWIN_HOST. `error` says why.
ncclResult_t CreateRoot(ncclUniqueId* id, std::string* error);

// Joins the group of `id` as `rank` of `nranks` and returns one connected socket per
// peer in `fds` (fds[rank] = -1; the caller owns the others). Blocks until the mesh is
// up. ncclInvalidArgument for an id CreateRoot did not make, ncclInvalidUsage when the
// root refuses the group, ncclSystemError on timeout or a socket failure.
ncclResult_t JoinGroup(const ncclUniqueId& id, int nranks, int rank, std::vector<int>* fds,
                       std::string* error);

}  // namespace orca::cuda_twin
