// MPI's start and end in a process (section 5: MPI lives in partition/): the program's, and
// that of a library loaded into another one (python/), which may find MPI started already.
#pragma once

namespace tessera {

// A process started without a launcher (no mpirun, no srun): a lone Open MPI process needs no
// daemon and no network transports; skipping them saves 0.2-0.3 s of start-up. Before
// MPI_Init; the user's settings win.
void prefer_lone_process_transports();

// For a library's caller (python/): starts MPI (MPI_THREAD_SERIALIZED: calls from any thread,
// one at a time) unless something has (mpi4py, the host program). Returns whether this call
// started it: only then is it the caller's to end (finalize_mpi).
bool start_mpi_if_needed();
// Ends MPI unless it has ended already.
void finalize_mpi();
// Whether MPI may be called from any thread, one at a time (MPI_THREAD_SERIALIZED or more).
bool mpi_calls_from_any_thread();

}  // namespace tessera
