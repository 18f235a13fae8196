#include "io/error_agreement.h"

#include <limits>

namespace tessera {

void agree_on_first_error(MPI_Comm comm, int64_t bad_index, const std::string& message) {
    int rank = 0, P = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    const int64_t mine = bad_index < 0 ? std::numeric_limits<int64_t>::max() : bad_index;
    int64_t lowest = 0;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT64_T, MPI_MIN, comm);
    if (lowest == std::numeric_limits<int64_t>::max()) return;
    const int candidate = mine == lowest ? rank : P;
    int root = 0;
    MPI_Allreduce(&candidate, &root, 1, MPI_INT, MPI_MIN, comm);
    std::string msg = rank == root ? message : std::string();
    int64_t len = static_cast<int64_t>(msg.size());
    MPI_Bcast(&len, 1, MPI_INT64_T, root, comm);
    msg.resize(static_cast<size_t>(len));
    MPI_Bcast(msg.data(), static_cast<int>(len), MPI_CHAR, root, comm);
    throw InputError::everywhere(msg);
}

void agree_on_errors(MPI_Comm comm, const std::function<void()>& step) {
    std::string msg;
    try {
        step();
    } catch (const InputError& e) {
        msg = e.what();
    }
    agree_on_first_error(comm, msg.empty() ? -1 : 0, msg);
}

}  // namespace tessera
