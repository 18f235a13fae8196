// Host sides of the Region's record exchanges (region_records.h).
#include "kernels/cuda/region_records.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/cuda/device_buffer.h"

namespace tessera::cuda {

std::vector<Residue> residues_of(const std::vector<PlaquetteCharge>& charges, const Window& own, int64_t W) {
    const int64_t pc = std::min(own.col0 + own.cols, W - 1) - own.col0;
    const int64_t m = static_cast<int64_t>(charges.size());
    // Each plaquette's first residue (a prefix sum of |q|), then the residues on threads.
    std::vector<int64_t> at(charges.size() + 1, 0);
    for (int64_t i = 0; i < m; ++i) at[static_cast<size_t>(i) + 1] = at[static_cast<size_t>(i)] + std::abs(charges[static_cast<size_t>(i)].q);
    std::vector<Residue> res(static_cast<size_t>(at.back()));
    // Raster order of plaquettes, then the sub-index: ascending ids, as the CPU's sort gives.
#pragma omp parallel for schedule(static) if (m >= 65536)
    for (int64_t i = 0; i < m; ++i) {
        const PlaquetteCharge& q = charges[static_cast<size_t>(i)];
        const int64_t r = own.row0 + q.index / pc, c = own.col0 + q.index % pc;
        const int32_t n = std::abs(q.q), sign = q.q > 0 ? 1 : -1;
        for (int32_t sub = 0; sub < n; ++sub)
            res[static_cast<size_t>(at[static_cast<size_t>(i)] + sub)] = {residue_id(r, c, W, sub), static_cast<int32_t>(r),
                                                                          static_cast<int32_t>(c), sign};
    }
    return res;
}

void rasterise_host_cuts(const DeviceArrays& d, const Window& own, std::span<const Cut> cuts, cudaStream_t s) {
    if (!cuts.empty()) {
        std::vector<DeviceCut> dc(cuts.size());
        const int64_t m = static_cast<int64_t>(cuts.size());
#pragma omp parallel for schedule(static) if (m >= 65536)
        for (int64_t i = 0; i < m; ++i) {
            const Cut& c = cuts[static_cast<size_t>(i)];
            dc[static_cast<size_t>(i)] = {c.ra, c.ca, c.rb, c.cb, static_cast<int32_t>(c.side)};
        }
        const StreamBuffer<DeviceCut> d_cuts(dc.size(), s, "place_cuts (cudaMallocAsync)");
        check(cudaMemcpyAsync(d_cuts.get(), dc.data(), dc.size() * sizeof(DeviceCut), cudaMemcpyHostToDevice, s),
              "place_cuts (upload cuts)");
        rasterise_cuts(d, own, d_cuts.get(), static_cast<int64_t>(dc.size()), s);
    }  // the cuts are freed in s's order, behind the kernel
    check(cudaStreamSynchronize(s), "place_cuts (sync)");
}

void mark_assigned_roots(const DeviceArrays& d, const Window& own, int64_t W, uint64_t* nodes,
                         const ComponentAssignment& as, cudaStream_t s) {
    const size_t n = as.records.size();
    if (n == 0) return;
    constexpr size_t kChunk = size_t{1} << 20;  // 16 MiB of records per upload
    const size_t chunk = std::min(n, kChunk);
    std::vector<DeviceRootRecord> host(chunk);
    const StreamBuffer<DeviceRootRecord> d_recs(chunk, s, "cudaMallocAsync apply records");
    for (size_t b = 0; b < n; b += chunk) {
        const size_t e = std::min(n, b + chunk);
        for (size_t i = b; i < e; ++i)
            host[i - b] = {static_cast<uint32_t>(local_of_root(as.records[i].root, own, W)), as.offset[i], as.label[i], 0};
        check(cudaMemcpyAsync(d_recs.get(), host.data(), (e - b) * sizeof(DeviceRootRecord), cudaMemcpyHostToDevice, s),
              "apply (upload records)");
        mark_roots(d, own, nodes, d_recs.get(), static_cast<int64_t>(e - b), s);
        check(cudaStreamSynchronize(s), "apply (mark roots)");  // before host[] is refilled
    }
}

}  // namespace tessera::cuda
