// --backend resolved once, in one place (backend/backend.h).
#include "backend/backend.h"

#include "io/input_error.h"

namespace tessera {

Backend resolve_backend(const std::string& name) {
    if (name == "cpu") return Backend::kCpu;
    if (name == "cuda") return Backend::kCuda;
    if (name == "auto") {
        const BackendOps* cuda = cuda_backend_ops();
        return cuda && cuda->available() ? Backend::kCuda : Backend::kCpu;
    }
    throw InputError::everywhere("--backend " + name + ": expected auto, cpu or cuda");
}

const BackendOps& backend_ops(Backend b) {
    if (b == Backend::kCpu) return cpu_backend_ops();
    const BackendOps* cuda = cuda_backend_ops();
    if (!cuda) throw InputError::everywhere("--backend cuda: this tessera was built without the CUDA backend (TESSERA_CUDA=OFF)");
    if (!cuda->available()) throw InputError::everywhere("--backend cuda: no CUDA device is visible");
    return *cuda;
}

const char* backend_name(Backend b) { return b == Backend::kCuda ? "cuda" : "cpu"; }

}  // namespace tessera
