// Device choice for the CUDA backend (region.h): one GPU per rank on a multi-GPU host.
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/region.h"

namespace tessera::cuda {

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();  // no driver / no device: not an error here
        return 0;
    }
    return n;
}

int select_device(int local_rank) {
    const int n = device_count();
    if (n == 0) return -1;
    const int d = (local_rank % n + n) % n;
    check(cudaSetDevice(d), "cudaSetDevice");
    return d;
}

}  // namespace tessera::cuda

namespace tessera::cuda {

int64_t device_free_bytes() {
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return static_cast<int64_t>(free);
}

}  // namespace tessera::cuda
