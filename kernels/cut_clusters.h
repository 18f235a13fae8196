// Charge-balanced cut clusters (docs/ARCHITECTURE.md section 3): the rule's rounds over one set
// of residues that is closed under candidate edges. Backend-neutral host code, written once;
// partition/matching.cpp decides which residues form such a set on which rank.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/ground_lakes.h"
#include "kernels/residue.h"

namespace tessera {

// A residue and the (at most two) lakes it touches: a lake id (its smallest global pixel index),
// kGroundedLake, or kNoLake; lake[0] <= lake[1] when both set. A lake touches the residue at a
// corner of its plaquette (step kTouch) or, the ground only, one dual step away (section 3.1: the step's edge is
// blocked whatever the rule decides, so the lake touches it from then on).
enum LakeStep : uint8_t { kTouch = 0, kStepUp, kStepDown, kStepLeft, kStepRight };
struct ClusterResidue {
    Residue res;
    int64_t lake[2] = {kNoLake, kNoLake};
    LakeStep step[2] = {kTouch, kTouch};
};

// Lake ids as edge-key ends: above every residue id, below the outer ground's.
inline constexpr int64_t kLakeKeyBase = int64_t{1} << 61;
inline constexpr int64_t kGroundedLakeKey = kGroundId - 1;

struct ClusterStats {
    int64_t pairs = 0;        // cuts between two residues
    int64_t ground_cuts = 0;  // cuts to the image border
    int64_t lake_joins = 0;   // residues discharged into a lake (no cut)
    ClusterStats& operator+=(const ClusterStats& o) {
        pairs += o.pairs, ground_cuts += o.ground_cuts, lake_joins += o.lake_joins;
        return *this;
    }
};

// The distinct lake ids (>= 0) the residues of `res` touch, ascending: the lakes' nodes follow the
// residues' in this order, in every form of the rule.
std::vector<int64_t> lake_ids_of(std::span<const ClusterResidue> res);

// The cuts of `res` (sorted by id, closed under candidate edges) by section 3's rule with
// pair radius `radius`, appended to `out` in cut_order. H, W: the image.
void cut_clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius, std::vector<Cut>& out,
                  ClusterStats& stats);

}  // namespace tessera
