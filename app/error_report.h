// The one error path of every command (docs/ARCHITECTURE.md section 7): commands throw, this
// reports once and exits. An error every rank met alike (InputError::everywhere, agreed on) is
// printed by rank 0 and every rank exits 2; bad input met on one rank only prints with the
// rank and ends the job (MPI_Abort), exit 2; a broken invariant (kernels/invariant.h) or a
// library failure the same way with exit 3 (rank 0 alone where every rank found it alike).
#pragma once
#include <functional>

namespace tessera {

// Runs `command` (after MPI_Init); returns the process's exit code, MPI finalized.
int run_reporting_errors(const std::function<int()>& command);

}  // namespace tessera
