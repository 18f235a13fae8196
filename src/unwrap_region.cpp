#include "src/unwrap_region.h"

#include <algorithm>

#include "kernels/cpu/kernels.h"
#include "kernels/union_find.h"
#include "partition/matching.h"
#include "partition/offset_solve.h"
#include "partition/tile_grid.h"

namespace tessera {

RegionStats unwrap_region(const RegionArrays& a, const UnwrapParams& p, std::vector<Residue>* residues_out,
                          const std::function<void(const char*)>& stage) {
    RegionStats st;
    const int64_t H = a.H, W = a.W;
    const TileGrid grid(H, W, p.tile_size);
    const int64_t T = grid.count();
    st.tiles = T;

    // --- residues (section 2), per tile ---
    std::vector<std::vector<Residue>> tile_res(static_cast<size_t>(T));
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) cpu::find_residues(a, grid.window(t), tile_res[static_cast<size_t>(t)]);
    std::vector<Residue> res;
    for (auto& v : tile_res) res.insert(res.end(), v.begin(), v.end());
    tile_res = {};
    std::sort(res.begin(), res.end(), [](const Residue& x, const Residue& y) { return x.id < y.id; });
    st.residues = static_cast<int64_t>(res.size());
    stage("residues");

    // --- branch cuts: exact greedy matching (section 3) ---
    MatchStats ms;
    const std::vector<Cut> cuts = match_residues(res, grid, p.max_pair_distance, ms);
    st.rounds = ms.rounds;
    st.leftovers = ms.leftovers;
    st.pairs = ms.phase_a_pairs + ms.phase_b_pairs;
    st.ground_cuts = ms.phase_a_ground + ms.phase_b_ground;
    stage("matching");

    // --- rasterise: each tile blocks the edges it owns ---
    std::vector<std::vector<int32_t>> tile_cuts(static_cast<size_t>(T));
    for (int32_t i = 0; i < static_cast<int32_t>(cuts.size()); ++i) {
        const Cut& c = cuts[static_cast<size_t>(i)];
        int64_t r0 = std::min(c.ra, c.rb), r1 = std::max(c.ra, c.rb) + 1;
        int64_t c0 = std::min(c.ca, c.cb), c1 = std::max(c.ca, c.cb) + 1;
        switch (c.side) {
            case kTop: r0 = 0; break;
            case kBottom: r1 = H - 1; break;
            case kLeft: c0 = 0; break;
            case kRight: c1 = W - 1; break;
            case kNotGround: break;
        }
        r1 = std::min(r1, H - 1);
        c1 = std::min(c1, W - 1);
        for (int64_t ti = r0 / grid.tile; ti <= r1 / grid.tile; ++ti)
            for (int64_t tj = c0 / grid.tile; tj <= c1 / grid.tile; ++tj)
                tile_cuts[static_cast<size_t>(ti * grid.tcols + tj)].push_back(i);
    }
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) cpu::block_invalid_edges(a, grid.window(t));
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) cpu::rasterise_cuts(a, grid.window(t), cuts, tile_cuts[static_cast<size_t>(t)]);
    tile_cuts = {};
    stage("rasterise");

    // --- weighted union-find per tile (section 4) ---
    std::vector<int64_t> node_off(static_cast<size_t>(T + 1), 0);
    for (int64_t t = 0; t < T; ++t) node_off[static_cast<size_t>(t + 1)] = node_off[static_cast<size_t>(t)] + grid.window(t).size();
    std::vector<uint64_t> nodes(static_cast<size_t>(node_off.back()));
    std::vector<std::vector<ComponentRecord>> tile_recs(static_cast<size_t>(T));
    int64_t conflicts = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : conflicts)
    for (int64_t t = 0; t < T; ++t) {
        const Window w = grid.window(t);
        uint64_t* nd = nodes.data() + node_off[static_cast<size_t>(t)];
        conflicts += cpu::tile_union_find(a, w, nd);
        // The tile's components: roots in ascending order, with their valid-pixel counts.
        auto& recs = tile_recs[static_cast<size_t>(t)];
        std::vector<uint32_t> count(static_cast<size_t>(w.size()), 0);
        for (int64_t i = 0; i < w.rows; ++i)
            for (int64_t j = 0; j < w.cols; ++j)
                if (!(a.flags[(a.index(w.row0 + i, w.col0 + j))] & kInvalid))
                    ++count[uf::parent(nd[i * w.cols + j])];
        for (int64_t l = 0; l < w.size(); ++l)
            if (count[static_cast<size_t>(l)] > 0)
                recs.push_back({(w.row0 + l / w.cols) * W + w.col0 + l % w.cols, count[static_cast<size_t>(l)]});
    }
    stage("union_find");

    // --- cross-tile constraints and the offset solve (section 4) ---
    auto node_of = [&](int64_t r, int64_t c) {
        const int64_t t = grid.tile_of(r, c);
        const Window w = grid.window(t);
        const uint64_t nd = nodes[static_cast<size_t>(node_off[static_cast<size_t>(t)] + (r - w.row0) * w.cols + (c - w.col0))];
        const int64_t l = uf::parent(nd);
        return std::pair<int64_t, int32_t>{(w.row0 + l / w.cols) * W + w.col0 + l % w.cols, uf::potential(nd)};
    };
    std::vector<std::vector<Constraint>> tile_cons(static_cast<size_t>(T));
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) {
        const Window w = grid.window(t);
        auto& cons = tile_cons[static_cast<size_t>(t)];
        auto add = [&](int64_t ra, int64_t ca, int64_t rb, int64_t cb) {
            const auto [ga, ka] = node_of(ra, ca);
            const auto [gb, kb] = node_of(rb, cb);
            // k(b) - k(a) = -n(a->b)  =>  K(gb) - K(ga) = -n - kb + ka.
            const int32_t n = wrap_count(a.phase[(a.index(ra, ca))], a.phase[(a.index(rb, cb))]);
            const Constraint c{ga, gb, -n - kb + ka};
            if (cons.empty() || !(cons.back() == c)) cons.push_back(c);
        };
        const int64_t cr = w.col0 + w.cols - 1, br = w.row0 + w.rows - 1;
        if (cr + 1 < W)
            for (int64_t r = w.row0; r <= br; ++r)
                if (!(a.flags[(a.index(r, cr))] & kBlockRight)) add(r, cr, r, cr + 1);
        if (br + 1 < H)
            for (int64_t c = w.col0; c <= cr; ++c)
                if (!(a.flags[(a.index(br, c))] & kBlockDown)) add(br, c, br + 1, c);
    }
    std::vector<ComponentRecord> recs;
    std::vector<Constraint> cons;
    for (auto& v : tile_recs) recs.insert(recs.end(), v.begin(), v.end());
    for (auto& v : tile_cons) cons.insert(cons.end(), v.begin(), v.end());
    tile_cons = {};
    std::sort(recs.begin(), recs.end(), [](const ComponentRecord& x, const ComponentRecord& y) { return x.root < y.root; });
    OffsetSolution sol = solve_offsets(recs, cons, p.min_component_size);
    conflicts += sol.conflicts;
    st.components = sol.components;
    st.labelled = sol.labelled;
    st.largest = sol.largest;
    st.conflicts = conflicts;
    auto rec_index = [&](int64_t root) {
        return std::lower_bound(recs.begin(), recs.end(), root,
                                [](const ComponentRecord& x, int64_t v) { return x.root < v; }) - recs.begin();
    };
    if (p.reference) {
        // --reference: shift that pixel's component so k = 0 there (section 4).
        const auto [g, k] = node_of(p.reference->first, p.reference->second);
        const size_t ri = static_cast<size_t>(rec_index(g));
        const int64_t groot = sol.global_root[ri];
        const int32_t kref = k + sol.offset[ri];
        for (size_t i = 0; i < recs.size(); ++i)
            if (sol.global_root[i] == groot) sol.offset[i] -= kref;
    }
    stage("offset_solve");

    // --- apply offsets and labels, u = phi + 2 pi k ---
#pragma omp parallel
    {
        std::vector<cpu::RootRecord> root_rec;
#pragma omp for schedule(dynamic)
        for (int64_t t = 0; t < T; ++t) {
            const Window w = grid.window(t);
            root_rec.resize(static_cast<size_t>(w.size()));
            size_t ri = static_cast<size_t>(rec_index(tile_recs[static_cast<size_t>(t)].empty() ? 0 : tile_recs[static_cast<size_t>(t)][0].root));
            for (const ComponentRecord& cr : tile_recs[static_cast<size_t>(t)]) {
                while (recs[ri].root != cr.root) ++ri;
                const int64_t r = cr.root / W, c = cr.root % W;
                root_rec[static_cast<size_t>((r - w.row0) * w.cols + (c - w.col0))] = {sol.offset[ri], sol.label[ri]};
            }
            cpu::apply_offsets(a, w, nodes.data() + node_off[static_cast<size_t>(t)], root_rec.data());
        }
    }
    nodes = {};
    tile_recs = {};
    stage("apply");

    if (residues_out) *residues_out = std::move(res);
    return st;
}

}  // namespace tessera
