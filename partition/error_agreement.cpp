#include "partition/error_agreement.h"

#include <limits>

namespace tessera {

void agree_on_first_error(Comm& comm, int64_t bad_index, const std::string& message) {
    const int64_t mine = bad_index < 0 ? std::numeric_limits<int64_t>::max() : bad_index;
    const int64_t lowest = comm.min(mine);
    if (lowest == std::numeric_limits<int64_t>::max()) return;
    const int root = static_cast<int>(comm.min(int64_t{mine == lowest ? comm.rank() : comm.size()}));
    std::string msg = comm.rank() == root ? message : std::string();
    comm.bcast(msg, root);
    throw InputError::everywhere(msg);
}

void agree_on_errors(Comm& comm, const std::function<void()>& step) {
    std::string msg;
    try {
        step();
    } catch (const InputError& e) {
        msg = e.what();
    }
    agree_on_first_error(comm, msg.empty() ? -1 : 0, msg);
}

}  // namespace tessera
