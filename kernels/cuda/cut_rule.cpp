#include "kernels/cuda/cut_rule.h"

#include "kernels/cuda/device_buffer.h"
#include "kernels/cut_rounds_input.h"
#include "kernels/lap.h"

namespace tessera::cuda {

bool cut_clusters_on_device(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                            std::vector<Cut>& out, ClusterStats& stats, DeviceRuleTimes* times) {
    return cut_clusters_on_device(res, H, W, radius, out, stats, times, RoundTuning{});
}

bool cut_clusters_on_device(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                            std::vector<Cut>& out, ClusterStats& stats, DeviceRuleTimes* times, const RoundTuning& tune) {
    Lap clock;
    DeviceRuleTimes local;
    DeviceRuleTimes& t = times ? *times : local;
    RoundInput in;
    if (!make_round_input(res, H, W, radius, in, /*bitmap=*/false)) return false;  // built on the device
    RoundArrays a;
    a.tune = tune;
    a.n = in.n, a.L = in.L, a.H = H, a.W = W, a.radius = radius, a.keys = in.keys;
    a.rr = in.rr.data(), a.rc = in.rc.data(), a.sign = in.sign.data(), a.lake_node = in.lake_node.data();
    a.adj_start = in.adj_start.data(), a.adj = in.adj.data(), a.n_adj = static_cast<int64_t>(in.adj.size());
    a.r0 = in.r0, a.c0 = in.c0, a.rows = in.rows, a.cols = in.cols;
    t.setup = clock.next_ms();
    std::vector<uint64_t> codes;
    RoundCounts counts;
    {
        const Stream s("cut rounds: stream");
        run_rounds(a, codes, counts, t.rounds, s.get());
    }
    clock.next_ms();
    cuts_from_codes(res, codes, H, W, out);
    stats.pairs += counts.cuts - counts.ground_cuts;
    stats.ground_cuts += counts.ground_cuts;
    stats.lake_joins += counts.lake_joins;
    t.cuts = clock.next_ms();
    return true;
}

}  // namespace tessera::cuda
