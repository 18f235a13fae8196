// Residue charges (ARCHITECTURE.md section 2) on the device: one thread per plaquette of the
// own window, stream-compacted in raster order with cub::DeviceSelect::If.
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstring>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

static_assert(sizeof(PlaquetteCharge) == sizeof(uint64_t), "PlaquetteCharge must be one packed word");

// Plaquette index -> uf-style word (index in the low half, q in the high half): the byte
// image of PlaquetteCharge{index, q} on a little-endian machine.
struct ChargeOf {
    const float* phase;
    int64_t buf_row0, buf_col0, buf_cols;
    int64_t row0, col0;
    uint32_t pc;  // plaquettes per row

    __device__ uint64_t operator()(int64_t i) const {
        const uint32_t li = static_cast<uint32_t>(i);
        const int64_t r = row0 + li / pc, c = col0 + li % pc;
        const float* p0 = phase + (r - buf_row0) * buf_cols + (c - buf_col0);
        const float* p1 = p0 + buf_cols;
        const float a = p0[0], b = p0[1], d = p1[0], e = p1[1];
        // q = nv(r,c) + nh(r+1,c) - nh(r,c) - nv(r,c+1), the CPU's order of terms.
        const int32_t q = dev::wrap_count(a, d) + dev::wrap_count(d, e) - dev::wrap_count(a, b) - dev::wrap_count(b, e);
        return dev::pack(li, q);
    }
};

struct NonZeroCharge {
    __device__ bool operator()(uint64_t w) const { return (w >> 32) != 0; }
};

}  // namespace

int64_t compact_charges(const DeviceArrays& a, const Window& own, uint64_t* scratch, cudaStream_t s) {
    const int64_t pr = std::min(own.row0 + own.rows, a.H - 1) - own.row0;
    const int64_t pc = std::min(own.col0 + own.cols, a.W - 1) - own.col0;
    if (pr <= 0 || pc <= 0) return 0;
    const int64_t np = pr * pc;  // <= own.size() < 2^32, checked by the Region
    ChargeOf op{a.phase, a.buf.row0, a.buf.col0, a.buf.cols, own.row0, own.col0, static_cast<uint32_t>(pc)};
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), op);

    size_t temp_bytes = 0;
    check(cub::DeviceSelect::If(nullptr, temp_bytes, in, scratch, static_cast<int64_t*>(nullptr), np, NonZeroCharge{}, s),
          "find_residues (temp size)");
    // CUB's temporary storage, then the selected count (freed in s's order, after the sync).
    const StreamBuffer<char> temp(temp_bytes + sizeof(int64_t) + 256, s, "find_residues (cudaMallocAsync)");
    int64_t* d_num = reinterpret_cast<int64_t*>(temp.get() + ((temp_bytes + 255) / 256) * 256);
    cudaError_t e = cub::DeviceSelect::If(temp.get(), temp_bytes, in, scratch, d_num, np, NonZeroCharge{}, s);
    int64_t num = 0;
    if (e == cudaSuccess) e = cudaMemcpyAsync(&num, d_num, sizeof(num), cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    check(e, "find_residues (select)");
    return num;
}



}  // namespace tessera::cuda
