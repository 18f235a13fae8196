// cuda::Region's form of section 3.3's rule: the device rule (kernels/cuda/cut_rule.h) for sets
// large enough to pay for its launches, the host rule otherwise or where the device lacks the
// memory or the keys do not fit. Which form runs never changes the cuts (tests/gpu).
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "kernels/cuda/cut_rule.h"
#include "kernels/cuda/region.h"
#include "kernels/lap.h"

namespace tessera::cuda {

namespace {

// What the device rule holds at most for a set: its node arrays, inputs and the cut sort
// (under 256 B a residue), the occupancy bitmap of the set's box (bits and ranks: 1.5 bits a
// plaquette) and room for the allocator's rounding.
int64_t device_rule_bytes(std::span<const ClusterResidue> res) {
    int64_t r0 = INT64_MAX, r1 = 0, c0 = INT64_MAX, c1 = 0;
    const auto n = static_cast<int64_t>(res.size());
    // On the host's threads: 12.5 M records (600 MB) on one were some 0.05 s of 32768² holes' matching.
#pragma omp parallel for schedule(static) reduction(min : r0, c0) reduction(max : r1, c1) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) {
        const Residue& x = res[static_cast<size_t>(i)].res;
        r0 = std::min<int64_t>(r0, x.r), r1 = std::max<int64_t>(r1, x.r), c0 = std::min<int64_t>(c0, x.c),
        c1 = std::max<int64_t>(c1, x.c);
    }
    const int64_t box = (r1 - r0 + 1) * (c1 - c0 + 1);
    return 256 * static_cast<int64_t>(res.size()) + box / 8 + box / 16 + (int64_t{64} << 20);
}

}  // namespace

void Region::cut_clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                          std::vector<Cut>& out, ClusterStats& stats) {
    DeviceRuleTimes t;
    Lap clock;
    if (res.size() >= kDeviceRuleFrom && device_rule_bytes(res) <= device_free_bytes() &&
        cut_clusters_on_device(res, H, W, radius, out, stats, &t)) {
        if (trace_on())  // TESSERA_TRACE=1 (profiling)
            std::fprintf(stderr,
                         "tessera: device rule: %zu residues, %d rounds (grid %d, block %d) in %.1f ms: setup %.1f, "
                         "upload %.1f, wide %.1f, grid %.1f, block %.1f, sort %.1f, download %.1f, cuts %.1f\n",
                         res.size(), t.rounds.rounds, t.rounds.grid_rounds, t.rounds.block_rounds, clock.next_ms(),
                         t.setup, t.rounds.upload, t.rounds.wide, t.rounds.grid, t.rounds.block, t.rounds.sort,
                         t.rounds.download, t.cuts);
        return;
    }
    tessera::cut_clusters(res, H, W, radius, out, stats);
    if (trace_on() && res.size() >= kDeviceRuleFrom)
        std::fprintf(stderr, "tessera: host rule: %zu residues in %.1f ms\n", res.size(), clock.next_ms());
}

}  // namespace tessera::cuda
