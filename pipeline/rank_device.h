// One GPU per rank (ARCHITECTURE.md section 5): the rank's index among the ranks of its node
// (Comm::node_local_rank) picks its device. Shared by every command that has a CUDA backend.
#pragma once
#include "partition/comm.h"

namespace tessera {

// select_cuda_device (pipeline/unwrap_region.h) for this rank's node-local index; a failure on any
// rank is thrown as InputError("GPU", ...) on every rank. Returns the device. Collective.
int select_rank_device(Comm& comm, int requested, bool share);

}  // namespace tessera
