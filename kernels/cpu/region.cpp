#include "kernels/cpu/region.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/cpu/kernels.h"
#include "kernels/invariant.h"
#include "kernels/label_width.h"
#include "kernels/union_find.h"
#include "kernels/vector_memory.h"

namespace tessera::cpu {

Region::Region(const RegionArrays& a, const Window& own, const TileGrid& grid) : a_(a), own_(own), grid_(grid) {
    for (int64_t r = own.row0; r < own.row0 + own.rows; r += grid.tile)
        for (int64_t c = own.col0; c < own.col0 + own.cols; c += grid.tile) tiles_.push_back(grid.tile_of(r, c));
    node_off_.assign(tiles_.size() + 1, 0);
    for (size_t i = 0; i < tiles_.size(); ++i) node_off_[i + 1] = node_off_[i] + grid.window(tiles_[i]).size();
}

ResidueList Region::find_residues() {
    const int64_t T = static_cast<int64_t>(tiles_.size());
    std::vector<std::vector<Residue>> per_tile(tiles_.size());
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < T; ++i) cpu::find_residues(a_, grid_.window(tiles_[i]), per_tile[i]);
    // Each tile's list is in raster order (ascending ids), and tiles_ is in raster order of tiles
    // (the constructor): the tiles of one band of tile rows are consecutive and share its rows, so
    // the band's residues in id order are its rows in turn, each row the tiles' pieces of it from
    // left to right: bands on threads, no sort.
    std::vector<size_t> band_at;  // each band's first tile, and the end
    for (size_t k = 0; k < tiles_.size(); ++k)
        if (k == 0 || grid_.window(tiles_[k]).row0 != grid_.window(tiles_[k - 1]).row0) band_at.push_back(k);
    band_at.push_back(tiles_.size());
    const int64_t bands = static_cast<int64_t>(band_at.size()) - 1;
    std::vector<size_t> out_at(band_at.size(), 0);
    for (int64_t b = 0; b < bands; ++b) {
        size_t n = 0;
        for (size_t k = band_at[static_cast<size_t>(b)]; k < band_at[static_cast<size_t>(b) + 1]; ++k) n += per_tile[k].size();
        out_at[static_cast<size_t>(b) + 1] = out_at[static_cast<size_t>(b)] + n;
    }
    ResidueList res(out_at.back());  // written whole below
#pragma omp parallel for schedule(dynamic)
    for (int64_t b = 0; b < bands; ++b) {
        const size_t k0 = band_at[static_cast<size_t>(b)], k1 = band_at[static_cast<size_t>(b) + 1];
        const Window band = grid_.window(tiles_[k0]);
        std::vector<size_t> next(k1 - k0, 0);  // each tile's first residue not yet placed
        size_t at = out_at[static_cast<size_t>(b)];
        for (int64_t r = band.row0; r < band.row0 + band.rows; ++r)
            for (size_t k = k0; k < k1; ++k) {
                const std::vector<Residue>& list = per_tile[k];
                size_t& i = next[k - k0];
                while (i < list.size() && list[i].r == r) res[at++] = list[i++];
            }
        for (size_t k = k0; k < k1; ++k) {
            TESSERA_INVARIANT(next[k - k0] == per_tile[k].size(), "a tile's residue outside its rows");
            release(per_tile[k]);
        }
    }
    return res;
}

void Region::place_cuts(std::span<const Cut> cuts) {
    const int64_t T = static_cast<int64_t>(tiles_.size());
    // Each cut goes to the own tiles its blocked edges' bounding box touches.
    const int64_t ti0 = own_.row0 / grid_.tile, tj0 = own_.col0 / grid_.tile;
    const int64_t ntr = (own_.rows + grid_.tile - 1) / grid_.tile, ntc = (own_.cols + grid_.tile - 1) / grid_.tile;
    std::vector<std::vector<int32_t>> tile_cuts(tiles_.size());
    for (int32_t i = 0; i < static_cast<int32_t>(cuts.size()); ++i) {
        const auto [r0, r1, c0, c1] = cut_box(cuts[static_cast<size_t>(i)], a_.H, a_.W);
        const int64_t a0 = std::max(r0 / grid_.tile, ti0), a1 = std::min(std::min(r1, a_.H - 1) / grid_.tile, ti0 + ntr - 1);
        const int64_t b0 = std::max(c0 / grid_.tile, tj0), b1 = std::min(std::min(c1, a_.W - 1) / grid_.tile, tj0 + ntc - 1);
        for (int64_t ti = a0; ti <= a1; ++ti)
            for (int64_t tj = b0; tj <= b1; ++tj) tile_cuts[static_cast<size_t>((ti - ti0) * ntc + (tj - tj0))].push_back(i);
    }
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < T; ++i) block_invalid_edges(a_, grid_.window(tiles_[i]));
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < T; ++i) rasterise_cuts(a_, grid_.window(tiles_[i]), cuts, tile_cuts[i]);
}

NodeValue Region::node(int64_t r, int64_t c) const {
    const int64_t ntc = (own_.cols + grid_.tile - 1) / grid_.tile;
    const int64_t i = (r - own_.row0) / grid_.tile * ntc + (c - own_.col0) / grid_.tile;
    const Window w = grid_.window(tiles_[static_cast<size_t>(i)]);
    const uint64_t nd = nodes_[static_cast<size_t>(node_off_[i] + (r - w.row0) * w.cols + (c - w.col0))];
    const int64_t l = uf::parent(nd);
    return {(w.row0 + l / w.cols) * a_.W + w.col0 + l % w.cols, uf::potential(nd)};
}

std::vector<PixelState> Region::strip(const Window& w) const {
    std::vector<PixelState> out;
    out.reserve(static_cast<size_t>(w.size()));
    for (int64_t r = w.row0; r < w.row0 + w.rows; ++r)
        for (int64_t c = w.col0; c < w.col0 + w.cols; ++c) {
            const NodeValue nv = node(r, c);
            out.push_back({nv.root, nv.k, a_.phase[a_.index(r, c)], a_.flags[a_.index(r, c)]});
        }
    return out;
}

RegionComponents Region::union_find() {
    const int64_t T = static_cast<int64_t>(tiles_.size());
    // Every tile's union-find writes all its words: its thread faults its pages in, nothing zeroes them first.
    nodes_.clear();
    nodes_.resize(static_cast<size_t>(node_off_.back()));
    tile_recs_.assign(tiles_.size(), {});
    RegionComponents out;
    int64_t conflicts = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : conflicts)
    for (int64_t i = 0; i < T; ++i) {
        const Window w = grid_.window(tiles_[i]);
        uint64_t* nd = nodes_.data() + node_off_[i];
        // The tile's components: roots ascending, with their reliable-pixel counts.
        std::vector<uint32_t> count(static_cast<size_t>(w.size()));
        conflicts += tile_union_find(a_, w, nd, count.data());
        for (int64_t l = 0; l < w.size(); ++l)
            if (count[static_cast<size_t>(l)] > 0)
                tile_recs_[i].push_back({(w.row0 + l / w.cols) * a_.W + w.col0 + l % w.cols, count[static_cast<size_t>(l)]});
    }
    out.conflicts = conflicts;
    // Constraints across the right and bottom sides of each tile, inside the region.
    std::vector<std::vector<Constraint>> tile_cons(tiles_.size());
    const int64_t own_r1 = own_.row0 + own_.rows, own_c1 = own_.col0 + own_.cols;
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < T; ++i) {
        const Window w = grid_.window(tiles_[i]);
        auto& cons = tile_cons[i];
        auto add = [&](int64_t ra, int64_t ca, int64_t rb, int64_t cb) {
            const NodeValue na = node(ra, ca), nb = node(rb, cb);
            // k(b) - k(a) = -n(a->b)  =>  K(root b) - K(root a) = -n - k_b + k_a.
            const int32_t n = wrap_count(a_.phase[a_.index(ra, ca)], a_.phase[a_.index(rb, cb)]);
            const Constraint c{na.root, nb.root, -n - nb.k + na.k};
            if (cons.empty() || !(cons.back() == c)) cons.push_back(c);
        };
        const int64_t cr = w.col0 + w.cols - 1, br = w.row0 + w.rows - 1;
        if (cr + 1 < own_c1)
            for (int64_t r = w.row0; r <= br; ++r)
                if (!(a_.flags[a_.index(r, cr)] & kBlockRight)) add(r, cr, r, cr + 1);
        if (br + 1 < own_r1)
            for (int64_t c = w.col0; c <= cr; ++c)
                if (!(a_.flags[a_.index(br, c)] & kBlockDown)) add(br, c, br + 1, c);
    }
    for (auto& v : tile_recs_) out.records.insert(out.records.end(), v.begin(), v.end());
    for (auto& v : tile_cons) out.constraints.insert(out.constraints.end(), v.begin(), v.end());
    std::sort(out.records.begin(), out.records.end(),
              [](const ComponentRecord& x, const ComponentRecord& y) { return x.root < y.root; });
    return out;
}

UnionFindState Region::take_union_find() {
    UnionFindState st;
    for (const auto& recs : tile_recs_)
        for (const ComponentRecord& r : recs) st.roots.push_back(static_cast<uint64_t>(r.root));
    st.nodes = std::move(nodes_);  // leaves nodes_ empty
    release(tile_recs_);
    return st;
}

void Region::restore_union_find(UnionFindState st) {
    if (st.nodes.size() != static_cast<size_t>(node_off_.back()))
        throw std::invalid_argument("cpu::Region::restore_union_find: a state of another window");
    nodes_ = std::move(st.nodes);
    tile_recs_.assign(tiles_.size(), {});
    // apply reads a record's root only: the sizes stay 0.
    const int64_t ntc = (own_.cols + grid_.tile - 1) / grid_.tile;
    for (const uint64_t root : st.roots) {
        const int64_t r = static_cast<int64_t>(root) / a_.W, c = static_cast<int64_t>(root) % a_.W;
        if (!own_.contains(r, c)) throw std::invalid_argument("cpu::Region::restore_union_find: a root outside the window");
        tile_recs_[static_cast<size_t>((r - own_.row0) / grid_.tile * ntc + (c - own_.col0) / grid_.tile)].push_back(
            {static_cast<int64_t>(root), 0});
    }
}

void Region::apply(const ComponentAssignment& as) {
    with_label_type(as.label_bytes, [](auto) {});  // another width throws here, not in the threads
    label_bytes_ = as.label_bytes;
    const int64_t T = static_cast<int64_t>(tiles_.size());
    auto rec_index = [&](int64_t root) {
        return static_cast<size_t>(std::lower_bound(as.records.begin(), as.records.end(), root,
                                                    [](const ComponentRecord& x, int64_t v) { return x.root < v; }) -
                                   as.records.begin());
    };
#pragma omp parallel
    {
        std::vector<RootRecord> root_rec;
#pragma omp for schedule(dynamic)
        for (int64_t i = 0; i < T; ++i) {
            const Window w = grid_.window(tiles_[i]);
            root_rec.resize(static_cast<size_t>(w.size()));
            const auto& recs = tile_recs_[i];
            size_t ri = recs.empty() ? 0 : rec_index(recs.front().root);
            for (const ComponentRecord& cr : recs) {
                while (as.records[ri].root != cr.root) ++ri;
                const int64_t r = cr.root / a_.W, c = cr.root % a_.W;
                root_rec[static_cast<size_t>((r - w.row0) * w.cols + (c - w.col0))] = {as.offset[ri], as.label[ri]};
            }
            apply_offsets(a_, w, nodes_.data() + node_off_[i], root_rec.data(), as.label_bytes);
        }
    }
    release(nodes_);
    release(tile_recs_);
}

}  // namespace tessera::cpu
