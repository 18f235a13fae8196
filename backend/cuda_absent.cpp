// A build without the CUDA backend (CMake compiles this instead of backend/cuda/): no table.
#include "backend/backend.h"

namespace tessera {

const BackendOps* cuda_backend_ops() { return nullptr; }

}  // namespace tessera
