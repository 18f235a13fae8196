#include "partition/mpi_process.h"

#include <mpi.h>

#include <cstdlib>

namespace tessera {

void prefer_lone_process_transports() {
    if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK")) return;
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    setenv("OMPI_MCA_pml", "ob1", 0);
    setenv("OMPI_MCA_btl", "self", 0);
}

bool start_mpi_if_needed() {
    int started = 0, ended = 0;
    MPI_Initialized(&started);
    MPI_Finalized(&ended);
    if (started || ended) return false;
    prefer_lone_process_transports();
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    return true;
}

bool mpi_calls_from_any_thread() {
    int started = 0, level = MPI_THREAD_SINGLE;
    MPI_Initialized(&started);
    if (started) MPI_Query_thread(&level);
    return started && level >= MPI_THREAD_SERIALIZED;
}

void finalize_mpi() {
    int ended = 0;
    MPI_Finalized(&ended);
    if (!ended) MPI_Finalize();
}

}  // namespace tessera
