// Host sides of the Region's record exchanges (region_records.h).
#include "kernels/cuda/region_records.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/cuda/device_buffer.h"

namespace tessera::cuda {

UntouchedVector<PlaquetteCharge> download_charges(const uint64_t* words, int64_t n, cudaStream_t s) {
    UntouchedVector<PlaquetteCharge> out(static_cast<size_t>(n));  // a fresh mapping: faulted in by the copy
    if (n > 0) {
        check(cudaMemcpyAsync(out.data(), words, static_cast<size_t>(n) * sizeof(PlaquetteCharge), cudaMemcpyDeviceToHost, s),
              "find_residues (download)");
        check(cudaStreamSynchronize(s), "find_residues (sync)");
    }
    return out;
}

ResidueList residues_of(std::span<const PlaquetteCharge> charges, const Window& own, int64_t W) {
    const int64_t pc = std::min(own.col0 + own.cols, W - 1) - own.col0;
    const int64_t m = static_cast<int64_t>(charges.size());
    // Blocks of plaquettes: each block's count of residues (|q|) on threads, their starts in
    // turn, then each block's residues from its start on threads.
    constexpr int64_t kBlock = int64_t{1} << 16;
    const int64_t blocks = (m + kBlock - 1) / kBlock;
    std::vector<int64_t> start(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t b = 0; b < blocks; ++b) {
        int64_t n = 0;
        for (int64_t i = b * kBlock; i < std::min(m, (b + 1) * kBlock); ++i) n += std::abs(charges[static_cast<size_t>(i)].q);
        start[static_cast<size_t>(b) + 1] = n;
    }
    for (int64_t b = 0; b < blocks; ++b) start[static_cast<size_t>(b) + 1] += start[static_cast<size_t>(b)];
    ResidueList res(static_cast<size_t>(start.back()));  // written whole below
    // Raster order of plaquettes, then the sub-index: ascending ids, as the CPU's sort gives.
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (int64_t b = 0; b < blocks; ++b) {
        size_t at = static_cast<size_t>(start[static_cast<size_t>(b)]);
        for (int64_t i = b * kBlock; i < std::min(m, (b + 1) * kBlock); ++i) {
            const PlaquetteCharge& q = charges[static_cast<size_t>(i)];
            const int64_t r = own.row0 + q.index / pc, c = own.col0 + q.index % pc;
            const int32_t n = std::abs(q.q), sign = q.q > 0 ? 1 : -1;
            for (int32_t sub = 0; sub < n; ++sub)
                res[at++] = {residue_id(r, c, W, sub), static_cast<int32_t>(r), static_cast<int32_t>(c), sign};
        }
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
