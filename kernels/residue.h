// Residues and branch cuts as plain records (ARCHITECTURE.md sections 2 and 3).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/cut_numerics.h"  // ground_choice, GroundSide: shared with the device
#include "kernels/vector_memory.h"

namespace tessera {

// A unit charge at plaquette (r, c). A plaquette of charge q holds |q| residues,
// sub-index 0..|q|-1, so id = plaquette_index * kMaxCharge + sub orders them globally.
struct Residue {
    int64_t id = 0;
    int32_t r = 0, c = 0;
    int32_t sign = 0;  // +1 or -1
};

// A region's residues as its Region finds them: written whole on the host's threads, with no
// serial zeroing first (kernels/vector_memory.h: 300 MB at 12.5 M residues).
using ResidueList = UntouchedVector<Residue>;

inline constexpr int64_t kMaxCharge = 256;  // |q| <= 4 * 64 for |phase| <= 64 pi
inline constexpr int64_t kGroundId = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kNoWeight = std::numeric_limits<int64_t>::max();

inline int64_t residue_id(int64_t r, int64_t c, int64_t W, int64_t sub) {
    return (r * W + c) * kMaxCharge + sub;
}

// Strict order of candidate edges: (weight, lower id, higher id); the ground's id is the largest.
struct EdgeKey {
    int64_t w = kNoWeight, lo = kGroundId, hi = kGroundId;
    friend bool operator<(const EdgeKey& a, const EdgeKey& b) {
        if (a.w != b.w) return a.w < b.w;
        if (a.lo != b.lo) return a.lo < b.lo;
        return a.hi < b.hi;
    }
    friend bool operator==(const EdgeKey&, const EdgeKey&) = default;
};

inline EdgeKey pair_key(int64_t w, int64_t id_a, int64_t id_b) {
    return id_a < id_b ? EdgeKey{w, id_a, id_b} : EdgeKey{w, id_b, id_a};
}

// One accepted edge of the matching. For a pair, (ra, ca) is the lower-id residue's
// plaquette, where the canonical path starts; for a ground cut side says where it goes.
struct Cut {
    int64_t id_a = 0, id_b = kGroundId;
    int32_t ra = 0, ca = 0, rb = 0, cb = 0;
    GroundSide side = kNotGround;
    friend bool operator==(const Cut&, const Cut&) = default;
};

inline Cut make_pair_cut(const Residue& a, const Residue& b) {
    const Residue& lo = a.id < b.id ? a : b;
    const Residue& hi = a.id < b.id ? b : a;
    return {lo.id, hi.id, lo.r, lo.c, hi.r, hi.c, kNotGround};
}

inline Cut make_ground_cut(const Residue& a, int64_t H, int64_t W) {
    return {a.id, kGroundId, a.r, a.c, a.r, a.c, ground_choice(a.r, a.c, H, W).side};
}

// The pixel rows [r0, r1] and columns [c0, c1] whose edges a cut may block (section 3.5): a pair's
// path stays in its plaquettes' bounding box, a ground cut runs on to its side.
struct CutBox {
    int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};

inline CutBox cut_box(const Cut& c, int64_t H, int64_t W) {
    CutBox b{std::min(c.ra, c.rb), std::max(c.ra, c.rb) + int64_t{1}, std::min(c.ca, c.cb), std::max(c.ca, c.cb) + int64_t{1}};
    switch (c.side) {
        case kTop: b.r0 = 0; break;
        case kBottom: b.r1 = H - 1; break;
        case kLeft: b.c0 = 0; break;
        case kRight: b.c1 = W - 1; break;
        case kNotGround: break;
    }
    return b;
}

// Cuts in (id_a, id_b) order: how a rank's list is kept.
inline bool cut_order(const Cut& a, const Cut& b) { return a.id_a != b.id_a ? a.id_a < b.id_a : a.id_b < b.id_b; }

}  // namespace tessera
