// One GPU per rank (ARCHITECTURE.md section 5): the rank's index among the ranks of its node
// (Comm::node_local_rank) picks its device. Shared by every command.
#pragma once
#include "backend/backend_kind.h"
#include "partition/comm.h"

namespace tessera {

// The backend's select_device (backend/backend.h) for this rank's node-local index; a failure
// on any rank is thrown as InputError("GPU", ...) on every rank. Returns the device (-1 on the
// CPU backend). Collective.
int select_rank_device(Comm& comm, Backend backend, int requested, bool share);

}  // namespace tessera
