#include "src/rank_device.h"

#include <stdexcept>

#include "io/error_agreement.h"
#include "src/unwrap_region.h"

namespace tessera {

std::pair<int, int> node_local_rank(MPI_Comm comm) {
    int rank = 0, local_rank = 0, local_size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    return {local_rank, local_size};
}

int select_rank_device(MPI_Comm comm, int requested, bool share) {
    const auto [local_rank, local_size] = node_local_rank(comm);
    int device = -1;
    agree_on_errors(comm, [&] {
        try {
            device = select_cuda_device(local_rank, local_size, requested, share);
        } catch (const std::runtime_error& e) {
            throw InputError("GPU", e.what());
        }
    });
    return device;
}

}  // namespace tessera
