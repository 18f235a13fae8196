// One GPU per rank (ARCHITECTURE.md section 5): the rank's index among the ranks of its node
// (Comm::node_local_rank) picks its device. Shared by every command.
#pragma once
#include <future>

#include "backend/backend_kind.h"
#include "partition/comm.h"

namespace tessera {

// The backend's select_device (backend/backend.h) for this rank's node-local index; a failure
// on any rank is thrown as InputError("GPU", ...) on every rank. Returns the device (-1 on the
// CPU backend). Collective.
int select_rank_device(Comm& comm, Backend backend, int requested, bool share);

// The device select_rank_device will choose, made current on a thread of its own so that its
// context is made while the run checks its inputs and touches its host arrays (0.13-0.16 s on the
// H200 host). Any failure is left for select_rank_device to report. No MPI on that thread.
std::future<void> warm_rank_device(Comm& comm, Backend backend, int requested, bool share);

}  // namespace tessera
