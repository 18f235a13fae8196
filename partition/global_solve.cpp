#include "partition/global_solve.h"
#include "kernels/invariant.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "kernels/types.h"
#include "partition/offset_solve.h"

namespace tessera {

namespace {

size_t record_of(const std::vector<ComponentRecord>& recs, int64_t root) {
    return static_cast<size_t>(std::lower_bound(recs.begin(), recs.end(), root,
                                                [](const ComponentRecord& x, int64_t v) { return x.root < v; }) -
                               recs.begin());
}

// A border pixel in region terms: region root and k relative to it.
struct BorderNode {
    int64_t root;
    int32_t k;
    float phase;
};

}  // namespace

GlobalSolution solve_global(const RegionComponents& comps, const RankGrid& grid, Comm& comm, int64_t min_size,
                            const std::optional<std::pair<int64_t, int64_t>>& reference,
                            const std::function<std::vector<PixelState>(const Window&)>& strip) {
    const int self = comm.rank(), P = comm.size(), pi = self / grid.Q, qj = self % grid.Q;
    const Window own = grid.own(self);
    const auto& recs = comps.records;
    GlobalSolution g;

    // 1. This region's tiles: region roots and offsets (no labels yet).
    const OffsetSolution local = solve_offsets(recs, comps.constraints, INT64_MAX);
    g.conflicts += local.conflicts;
    auto in_region = [&](const PixelState& p) {
        const size_t ri = record_of(recs, p.root);
        return BorderNode{local.global_root[ri], p.k + local.offset[ri], p.phase};
    };

    // 2. Swap border pixels: my top row goes up, my left column goes left.
    const int up = pi > 0 ? self - grid.Q : -1, left = qj > 0 ? self - 1 : -1;
    const int down = pi + 1 < grid.P ? self + grid.Q : -1, right = qj + 1 < grid.Q ? self + 1 : -1;
    std::vector<std::vector<BorderNode>> send(static_cast<size_t>(P));
    std::vector<int64_t> border_roots;
    auto collect = [&](const Window& w, int dst, std::vector<PixelState>* keep) {
        std::vector<PixelState> s = strip(w);
        for (const PixelState& p : s) {
            if (p.flags & kUnreliable) continue;
            border_roots.push_back(in_region(p).root);
        }
        if (dst >= 0)
            for (const PixelState& p : s)
                send[static_cast<size_t>(dst)].push_back((p.flags & kUnreliable) ? BorderNode{-1, 0, 0.0f} : in_region(p));
        if (keep) *keep = std::move(s);
    };
    std::vector<PixelState> bottom, rightcol;
    if (up >= 0) collect({own.row0, own.col0, 1, own.cols}, up, nullptr);
    if (left >= 0) collect({own.row0, own.col0, own.rows, 1}, left, nullptr);
    if (down >= 0) collect({own.row0 + own.rows - 1, own.col0, 1, own.cols}, -1, &bottom);
    if (right >= 0) collect({own.row0, own.col0 + own.cols - 1, own.rows, 1}, -1, &rightcol);
    // The strips travel while this rank sorts out which of its components go to the root.
    std::vector<int> from(static_cast<size_t>(P), 0);
    if (right >= 0) from[static_cast<size_t>(right)] = static_cast<int>(own.rows);
    if (down >= 0) from[static_cast<size_t>(down)] = static_cast<int>(own.cols);
    auto pending = comm.ialltoallv(send, from);

    // 3. Region components: those on a shared border or big enough for a label go to the root.
    std::unordered_map<int64_t, int64_t> size_of;  // region root -> size
    for (size_t i = 0; i < recs.size(); ++i) size_of[local.global_root[i]] += recs[i].size;
    std::sort(border_roots.begin(), border_roots.end());
    border_roots.erase(std::unique(border_roots.begin(), border_roots.end()), border_roots.end());
    std::vector<ComponentRecord> sent;
    int64_t kept_components = 0, kept_largest = 0;
    for (const auto& [root, size] : size_of) {
        if (size >= min_size || std::binary_search(border_roots.begin(), border_roots.end(), root)) {
            sent.push_back({root, size});
        } else if (size > 0) {
            ++kept_components;
            kept_largest = std::max(kept_largest, size);
        }
    }
    std::sort(sent.begin(), sent.end(), [](const ComponentRecord& a, const ComponentRecord& b) { return a.root < b.root; });

    const std::vector<BorderNode>& got = pending->wait();
    // Received in rank order: the right neighbour (self + 1) before the one below (self + Q).
    const BorderNode* from_right = got.data();
    const BorderNode* from_down = got.data() + (right >= 0 ? own.rows : 0);

    // 4. Cross-rank constraints over the unblocked edges I own: k(b) - k(a) = -n(a -> b).
    std::vector<Constraint> cons;
    auto add = [&](const PixelState& pa, const BorderNode& b, uint8_t bit) {
        if (pa.flags & bit) return;
        const BorderNode a = in_region(pa);
        const Constraint c{a.root, b.root, -wrap_count(a.phase, b.phase) - b.k + a.k};
        if (cons.empty() || !(cons.back() == c)) cons.push_back(c);
    };
    for (size_t j = 0; j < bottom.size(); ++j) add(bottom[j], from_down[j], kBlockDown);
    for (size_t i = 0; i < rightcol.size(); ++i) add(rightcol[i], from_right[i], kBlockRight);

    auto all_recs = comm.gatherv(sent, 0);
    auto all_cons = comm.gatherv(cons, 0);

    // 5. The root solves the small graph and answers each rank for its records.
    struct Answer {
        int64_t root;
        int32_t offset;
        uint32_t label;
    };
    std::vector<std::vector<Answer>> answers;
    int64_t stats[4] = {0, 0, 0, 0};
    if (self == 0) {
        std::vector<ComponentRecord> flat;
        std::vector<Constraint> flat_cons;
        for (auto& v : all_recs) flat.insert(flat.end(), v.begin(), v.end());
        for (auto& v : all_cons) flat_cons.insert(flat_cons.end(), v.begin(), v.end());
        std::sort(flat.begin(), flat.end(), [](const ComponentRecord& a, const ComponentRecord& b) { return a.root < b.root; });
        const OffsetSolution sol = solve_offsets(flat, flat_cons, min_size);
        answers.resize(static_cast<size_t>(P));
        for (int s = 0; s < P; ++s)
            for (const ComponentRecord& r : all_recs[static_cast<size_t>(s)]) {
                const size_t i = record_of(flat, r.root);
                answers[static_cast<size_t>(s)].push_back({sol.global_root[i], sol.offset[i], sol.label[i]});
            }
        stats[0] = sol.conflicts, stats[1] = sol.components, stats[2] = sol.labelled, stats[3] = sol.largest;
    }
    const std::vector<Answer> mine = comm.scatterv(answers, 0);
    comm.bcast(stats, 0);
    g.conflicts += stats[0];
    g.components = stats[1] + comm.sum(kept_components);
    g.labelled = stats[2];
    g.largest = std::max(stats[3], comm.max(kept_largest));

    // 6. Every tile record: region offset plus its region's global offset and label.
    std::unordered_map<int64_t, Answer> by_region;
    for (size_t i = 0; i < sent.size(); ++i) by_region[sent[i].root] = mine[i];
    g.offset.resize(recs.size());
    g.label.assign(recs.size(), 0);
    std::vector<int64_t> groot(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) {
        const auto it = by_region.find(local.global_root[i]);
        g.offset[i] = local.offset[i] + (it != by_region.end() ? it->second.offset : 0);
        g.label[i] = it != by_region.end() ? it->second.label : 0;
        groot[i] = it != by_region.end() ? it->second.root : local.global_root[i];
    }

    // 7. --reference: its owner finds the pixel's component and k; everyone shifts that component.
    if (reference) {
        struct Ref {
            int64_t root;
            int32_t k;
        } ref{-1, 0};
        const int owner = grid.rank_of(reference->first, reference->second);
        if (owner == self) {
            const PixelState p = strip({reference->first, reference->second, 1, 1}).at(0);
            const size_t ri = record_of(recs, p.root);
            // The driver rejects unreliable reference pixels; a pixel without a record is a bug.
            TESSERA_INVARIANT(ri < recs.size() && recs[ri].root == p.root, "reference pixel belongs to no component");
            ref = {groot[ri], p.k + g.offset[ri]};
        }
        comm.bcast(ref, owner);
        for (size_t i = 0; i < recs.size(); ++i)
            if (groot[i] == ref.root) g.offset[i] -= ref.k;
    }
    return g;
}

}  // namespace tessera
