#include "pipeline/rank_device.h"

#include <stdexcept>

#include "backend/backend.h"
#include "partition/error_agreement.h"

namespace tessera {

int select_rank_device(Comm& comm, Backend backend, int requested, bool share) {
    const auto [local_rank, local_size] = comm.node_local_rank();
    int device = -1;
    agree_on_errors(comm, [&] {
        const BackendOps& ops = backend_ops(backend);
        try {
            device = ops.select_device(local_rank, local_size, requested, share);
        } catch (const std::runtime_error& e) {
            throw InputError("GPU", e.what());
        }
    });
    return device;
}

std::future<void> warm_rank_device(Comm& comm, Backend backend, int requested, bool share) {
    if (backend == Backend::kCpu) return {};
    const auto [local_rank, local_size] = comm.node_local_rank();
    return std::async(std::launch::async, [=] {
        try {
            (void)backend_ops(backend).select_device(local_rank, local_size, requested, share);
        } catch (...) {  // select_rank_device says what is wrong, on every rank
        }
    });
}

}  // namespace tessera
