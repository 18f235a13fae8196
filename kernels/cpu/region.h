// The CPU backend's view of a rank's region: host arrays, stages run tile by tile on
// OpenMP threads. kernels/cuda/region.h mirrors it with device-resident arrays.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/cycle_correction.h"
#include "kernels/region.h"
#include "kernels/residue.h"
#include "kernels/types.h"
#include "partition/tile_grid.h"

namespace tessera::cpu {

class Region {
public:
    // `own` is a union of whole tiles of `grid`; `a` covers it plus the halo.
    Region(const RegionArrays& a, const Window& own, const TileGrid& grid);
    // The stages run on the host's cores (backend.h host_free_in_stages).
    static constexpr bool kHostFreeInStages = false;

    ResidueList find_residues();            // the own window's plaquettes, sorted by id
    const RegionArrays& host_arrays() const { return a_; }  // phase and flags as filled (lakes read them)
    void place_cuts(std::span<const Cut> cuts);      // blocks invalid edges, rasterises the cuts
    RegionComponents union_find();                   // per-tile union-find + cross-tile constraints
    NodeValue node(int64_t r, int64_t c) const;      // after union_find, for a pixel of `own`
    std::vector<PixelState> strip(const Window& w) const;  // after union_find, w inside own, row-major
    // After union_find (and the strips it serves): the state apply needs, moved out (nodes: tile-major
    // words; roots: each tile's record roots, tile by tile); the region can apply only once restored.
    UnionFindState take_union_find();
    // Instead of place_cuts and union_find: a state take_union_find gave (the host flags hold the cuts).
    void restore_union_find(UnionFindState state);
    void apply(const ComponentAssignment& assign);   // u, labels, cycles into the host arrays
    // After apply: section 4.1's correction of u and cycles from the halo around own. Returns the count.
    int64_t correct_cycles(const CorrectionHalo& halo, int64_t keep) {
        return tessera::correct_cycles(a_, own_, halo, keep, label_bytes_);
    }
    void finish() {}                                 // host arrays already hold the results
    // cuda::Region's page-locking of host memory several Regions use: the CPU's needs none.
    static HostLocker host_locker() {
        return [](void*, size_t) { return HostLocks{}; };
    }
    // Section 3.3's rule over one closed set of residues (partition/matching.h: ClusterRule).
    static void cut_clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                             std::vector<Cut>& out, ClusterStats& stats) {
        tessera::cut_clusters(res, H, W, radius, out, stats);
    }

private:
    RegionArrays a_;
    Window own_;
    int label_bytes_ = 4;  // apply's, for correct_cycles
    TileGrid grid_;
    std::vector<int64_t> tiles_;      // tile indices inside own
    std::vector<int64_t> node_off_;   // per own tile, its first node
    UntouchedVector<uint64_t> nodes_;  // tile-major (parent, potential) words, written whole by each tile's union-find
    std::vector<std::vector<ComponentRecord>> tile_recs_;
};

}  // namespace tessera::cpu
