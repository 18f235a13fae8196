// Weighted union-find over the own window on the device (ARCHITECTURE.md sections 4 and 8).
//
// One region-wide pass rather than one per tile: the flattened result is canonical (each
// pixel -> its component's smallest own-local index, k relative to it), so the driver's
// offset solve gives the same k and labels as the CPU's per-tile union-find plus
// cross-tile constraints.
//
//  1. init:    each warp takes a 32-pixel row segment; the runs joined by unblocked right
//              edges become stars around their first pixel (ballot + segmented scan of -n).
//  2. merge:   the remaining edges (segment boundaries, vertical edges) are united with a
//              64-bit atomicCAS that hooks the root with the larger index under the smaller.
//              A vertical edge whose left neighbours already close a square of unblocked
//              edges adds no connectivity and is skipped (checked in step 4 instead).
//  3. flatten: every pixel -> (root, accumulated potential).
//  4. verify:  every unblocked edge inside own is checked against the potentials; the
//              disagreements are the conflicts (section 3 says: must be 0, counted, never hidden).
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/kernels.h"

namespace tessera::cuda {

namespace {

constexpr unsigned kFull = 0xffffffffu;

// Root of x and k(x) - k(root), with path halving. Only words whose parent is not
// themselves are ever overwritten by a plain store (a non-root never becomes a root again,
// and every value stored points at an ancestor with the right potential), so concurrent
// finds and hooks stay consistent; roots change only through the CAS in unite.
__device__ uint32_t find(uint64_t* nodes, uint32_t x, int32_t& k) {
    int32_t acc = 0;
    uint64_t w = dev::load(nodes + x);
    while (dev::parent(w) != x) {
        const uint32_t p = dev::parent(w);
        const uint64_t wp = dev::load(nodes + p);
        const uint32_t pp = dev::parent(wp);
        if (pp == p) {  // p is a root
            acc += dev::potential(w);
            x = p;
            w = wp;
        } else {
            const int32_t pot = dev::potential(w) + dev::potential(wp);
            dev::store(nodes + x, dev::pack(pp, pot));
            acc += pot;
            x = pp;
            w = dev::load(nodes + pp);
        }
    }
    k = acc;
    return x;
}

// Adds k(b) - k(a) = d. A cycle is not checked here (verify_kernel does it).
__device__ void unite(uint64_t* nodes, uint32_t a, uint32_t b, int32_t d) {
    for (;;) {
        int32_t ka, kb;
        const uint32_t ra = find(nodes, a, ka);
        const uint32_t rb = find(nodes, b, kb);
        if (ra == rb) return;
        const int32_t diff = d + ka - kb;  // k(rb) - k(ra)
        // Always hook the larger index under the smaller (section 4): the CAS succeeds only
        // while that root is still a root (its word is pack(self, 0)).
        if (ra < rb) {
            if (dev::cas(nodes + rb, dev::pack(rb, 0), dev::pack(ra, diff)) == dev::pack(rb, 0)) return;
        } else {
            if (dev::cas(nodes + ra, dev::pack(ra, 0), dev::pack(rb, -diff)) == dev::pack(ra, 0)) return;
        }
    }
}

__device__ __forceinline__ int64_t row_stride(const Window& own) { return static_cast<int64_t>(gridDim.y) * kBlockY; }

__global__ void init_kernel(DeviceArrays a, Window own, uint64_t* nodes) {
    const unsigned lane = threadIdx.x;
    const int64_t x = static_cast<int64_t>(blockIdx.x) * kBlockX + lane;
    const bool in = x < own.cols;
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < own.rows; y += row_stride(own)) {
        const int64_t i = in ? a.index(own.row0 + y, own.col0 + x) : 0;
        const bool join = in && lane > 0 && !(a.flags[i - 1] & kBlockRight);
        // k(c) - k(c-1) = -n(c-1 -> c) (section 2).
        int32_t s = join ? -dev::wrap_count(a.phase[i - 1], a.phase[i]) : 0;
        for (unsigned o = 1; o < 32; o <<= 1) {
            const int32_t t = __shfl_up_sync(kFull, s, o);
            if (lane >= o) s += t;
        }
        const unsigned starts = __ballot_sync(kFull, !join);
        const unsigned upto = lane == 31 ? kFull : ((2u << lane) - 1u);
        const unsigned st = 31u - static_cast<unsigned>(__clz(static_cast<int>(starts & upto)));
        const int32_t s_st = __shfl_sync(kFull, s, static_cast<int>(st));
        if (in) {
            const int64_t l = y * own.cols + x;
            nodes[l] = dev::pack(static_cast<uint32_t>(l - lane + st), s - s_st);
        }
    }
}

__global__ void merge_kernel(DeviceArrays a, Window own, uint64_t* nodes) {
    const unsigned lane = threadIdx.x;
    const int64_t x = static_cast<int64_t>(blockIdx.x) * kBlockX + lane;
    if (x >= own.cols) return;
    const int64_t bc = a.buf.cols;
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < own.rows; y += row_stride(own)) {
        const int64_t i = a.index(own.row0 + y, own.col0 + x);
        const uint32_t l = static_cast<uint32_t>(y * own.cols + x);
        const bool left_open = x > 0 && !(a.flags[i - 1] & kBlockRight);
        if (lane == 0 && left_open) unite(nodes, l - 1, l, -dev::wrap_count(a.phase[i - 1], a.phase[i]));
        if (y > 0 && !(a.flags[i - bc] & kBlockDown)) {
            // Up-left -> up, up-left -> left and left -> here all open: already connected.
            const bool square = left_open && !(a.flags[i - bc - 1] & (kBlockRight | kBlockDown));
            if (!square)
                unite(nodes, l - static_cast<uint32_t>(own.cols), l, -dev::wrap_count(a.phase[i - bc], a.phase[i]));
        }
    }
}

__global__ void flatten_kernel(Window own, uint64_t* nodes) {
    const int64_t x = static_cast<int64_t>(blockIdx.x) * kBlockX + threadIdx.x;
    if (x >= own.cols) return;
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < own.rows; y += row_stride(own)) {
        const uint32_t l = static_cast<uint32_t>(y * own.cols + x);
        const uint64_t w = dev::load(nodes + l);
        uint32_t p = dev::parent(w);
        if (p == l) continue;
        int32_t acc = dev::potential(w);
        for (;;) {
            const uint64_t wp = dev::load(nodes + p);
            const uint32_t q = dev::parent(wp);
            if (q == p) break;
            acc += dev::potential(wp);
            p = q;
        }
        if (p != dev::parent(w)) dev::store(nodes + l, dev::pack(p, acc));
    }
}

__global__ void verify_kernel(DeviceArrays a, Window own, const uint64_t* nodes, unsigned long long* conflicts) {
    const int64_t x = static_cast<int64_t>(blockIdx.x) * kBlockX + threadIdx.x;
    if (x >= own.cols) return;
    const int64_t bc = a.buf.cols;
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < own.rows; y += row_stride(own)) {
        const int64_t i = a.index(own.row0 + y, own.col0 + x);
        const int64_t l = y * own.cols + x;
        const uint8_t f = a.flags[i];
        const uint64_t w = nodes[l];
        unsigned bad = 0;
        // k(b) - k(a) = -n(a -> b) on every unblocked edge, and both ends share the root.
        if (x + 1 < own.cols && !(f & kBlockRight)) {
            const uint64_t w2 = nodes[l + 1];
            bad += dev::parent(w2) != dev::parent(w) ||
                   dev::potential(w2) - dev::potential(w) != -dev::wrap_count(a.phase[i], a.phase[i + 1]);
        }
        if (y + 1 < own.rows && !(f & kBlockDown)) {
            const uint64_t w2 = nodes[l + own.cols];
            bad += dev::parent(w2) != dev::parent(w) ||
                   dev::potential(w2) - dev::potential(w) != -dev::wrap_count(a.phase[i], a.phase[i + bc]);
        }
        if (bad) atomicAdd(conflicts, static_cast<unsigned long long>(bad));
    }
}

// Reliable-pixel counts into the roots' potential fields (a root's k is 0 by definition, so the
// field is free); warp-aggregated so that a large component costs one atomic per warp.
__global__ void count_kernel(DeviceArrays a, Window own, uint64_t* nodes, unsigned long long* num_roots) {
    const unsigned lane = threadIdx.x;
    const int64_t x = static_cast<int64_t>(blockIdx.x) * kBlockX + lane;
    const bool in = x < own.cols;
    for (int64_t y = static_cast<int64_t>(blockIdx.y) * kBlockY + threadIdx.y; y < own.rows; y += row_stride(own)) {
        const int64_t l = y * own.cols + x;
        const bool valid = in && !(a.flags[a.index(own.row0 + y, own.col0 + x)] & kUnreliable);
        // The parent half of a word never changes here, only roots' potential halves do.
        const uint32_t root = valid ? dev::parent(dev::load(nodes + l)) : 0u;
        const unsigned active = __ballot_sync(kFull, valid);
        if (valid) {
            const unsigned peers = __match_any_sync(active, root);
            if (lane == static_cast<unsigned>(__ffs(static_cast<int>(peers)) - 1)) {
                const unsigned long long old = atomicAdd(reinterpret_cast<unsigned long long*>(nodes + root),
                                                         static_cast<unsigned long long>(__popc(peers)) << 32);
                if ((old >> 32) == 0) atomicAdd(num_roots, 1ull);
            }
        }
    }
}

// Index -> pack(index, count) for a counted root, 0 otherwise.
struct RootCountOf {
    const uint64_t* nodes;
    __device__ uint64_t operator()(int64_t i) const {
        const uint64_t w = nodes[i];
        return (dev::parent(w) == static_cast<uint32_t>(i) && (w >> 32) != 0) ? w : 0;
    }
};

struct NonZero {
    __device__ bool operator()(uint64_t w) const { return w != 0; }
};

// A device scalar for counters, freed on scope exit (errors in the destructor are ignored).
struct DeviceCounter {
    unsigned long long* p = nullptr;
    cudaStream_t s;
    explicit DeviceCounter(cudaStream_t st) : s(st) {
        check(cudaMallocAsync(reinterpret_cast<void**>(&p), sizeof(*p), s), "union_find (cudaMallocAsync)");
        check(cudaMemsetAsync(p, 0, sizeof(*p), s), "union_find (cudaMemsetAsync)");
    }
    unsigned long long get() {
        unsigned long long v = 0;
        check(cudaMemcpyAsync(&v, p, sizeof(v), cudaMemcpyDeviceToHost, s), "union_find (download counter)");
        check(cudaStreamSynchronize(s), "union_find (sync)");
        return v;
    }
    ~DeviceCounter() { (void)cudaFreeAsync(p, s); }
    DeviceCounter(const DeviceCounter&) = delete;
    DeviceCounter& operator=(const DeviceCounter&) = delete;
};

}  // namespace

int64_t tile_union_find(const DeviceArrays& a, const Window& own, uint64_t* nodes, cudaStream_t s) {
    if (own.size() == 0) return 0;
    const dim3 grid = pixel_grid(own), block(kBlockX, kBlockY);
    init_kernel<<<grid, block, 0, s>>>(a, own, nodes);
    check(cudaGetLastError(), "union_find init (launch)");
    merge_kernel<<<grid, block, 0, s>>>(a, own, nodes);
    check(cudaGetLastError(), "union_find merge (launch)");
    flatten_kernel<<<grid, block, 0, s>>>(own, nodes);
    check(cudaGetLastError(), "union_find flatten (launch)");
    DeviceCounter conflicts(s);
    verify_kernel<<<grid, block, 0, s>>>(a, own, nodes, conflicts.p);
    check(cudaGetLastError(), "union_find verify (launch)");
    return static_cast<int64_t>(conflicts.get());
}

void component_records(const DeviceArrays& a, const Window& own, uint64_t* nodes, std::vector<uint64_t>& out,
                       cudaStream_t s) {
    out.clear();
    if (own.size() == 0) return;
    DeviceCounter num_roots(s);
    count_kernel<<<pixel_grid(own), dim3(kBlockX, kBlockY), 0, s>>>(a, own, nodes, num_roots.p);
    check(cudaGetLastError(), "component_records count (launch)");
    const int64_t n = static_cast<int64_t>(num_roots.get());
    if (n == 0) return;

    auto in = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RootCountOf{nodes});
    size_t temp_bytes = 0;
    check(cub::DeviceSelect::If(nullptr, temp_bytes, in, static_cast<uint64_t*>(nullptr),
                                static_cast<int64_t*>(nullptr), own.size(), NonZero{}, s),
          "component_records (temp size)");
    // One allocation: n output words, the selected count, then CUB's temporary storage.
    const size_t out_bytes = ((static_cast<size_t>(n) * sizeof(uint64_t) + sizeof(int64_t) + 255) / 256) * 256;
    char* buf = nullptr;
    check(cudaMallocAsync(reinterpret_cast<void**>(&buf), out_bytes + temp_bytes, s),
          "component_records (cudaMallocAsync)");
    uint64_t* d_out = reinterpret_cast<uint64_t*>(buf);
    int64_t* d_num = reinterpret_cast<int64_t*>(buf + static_cast<size_t>(n) * sizeof(uint64_t));
    cudaError_t e = cub::DeviceSelect::If(buf + out_bytes, temp_bytes, in, d_out, d_num, own.size(), NonZero{}, s);
    int64_t num = 0;
    if (e == cudaSuccess) e = cudaMemcpyAsync(&num, d_num, sizeof(num), cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e == cudaSuccess && num == n) {
        out.resize(static_cast<size_t>(n));
        e = cudaMemcpyAsync(out.data(), d_out, static_cast<size_t>(n) * sizeof(uint64_t), cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    }
    const cudaError_t ef = cudaFreeAsync(buf, s);
    check(e, "component_records (select)");
    check(ef, "component_records (cudaFreeAsync)");
    if (num != n) throw std::logic_error("component_records: root count and selection disagree");
}

}  // namespace tessera::cuda
