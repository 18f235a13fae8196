// The far reach (docs/ARCHITECTURE.md section 3.6): a component of cuts whose only way to the
// ground is a ground cut longer than R reaches the other such components, up to 4R, before it
// is cut to the image side. Host code, written once; partition/matching.cpp runs it on every
// rank over the whole image's far components.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/residue.h"

namespace tessera {

// A residue of a far component; comp: the smallest residue id of its component.
struct FarMember {
    Residue res;
    int64_t comp = 0;
};

struct FarTake {
    std::vector<FarMember> members;  // of the components that reach again, by (comp, id)
    std::vector<uint8_t> grounded;   // per residue of the set: its component holds the ground
    int64_t dropped = 0;             // long ground cuts removed from the cuts
};

// The most residues a far component may have: a larger one (a mosaic's seam, a noisy patch's
// cluster) keeps its long ground cuts, as the rule left them.
inline constexpr int64_t kFarMembers = 64;

// The far pair radius for the rule's radius R.
inline int64_t far_radius(int64_t R) { return 4 * R; }

// Whether the rule's cuts hold a ground cut longer than R.
bool has_long_ground_cut(std::span<const Cut> cuts, int64_t H, int64_t W, int64_t R);

// Splits the rule's cuts of one closed set (`set` sorted by id, `cuts` the rule's for it):
// components are the residues that pair cuts or a shared inner lake join. Every ground cut
// longer than R leaves `cuts`, except a component's of more than kFarMembers residues; a
// component that held one, has no other way to the ground (a ground cut of at most R, a
// grounded lake), a net charge and at most kFarMembers residues goes to the far reach; a
// component with such a way is grounded.
FarTake take_far_components(std::span<const ClusterResidue> set, std::vector<Cut>& cuts, int64_t H, int64_t W,
                            int64_t R);

// The residues of `set` in grounded components within L1 distance far_R of a far member.
std::vector<Residue> grounded_near(std::span<const ClusterResidue> set, std::span<const uint8_t> grounded,
                                   std::span<const FarMember> far, int64_t W, int64_t far_R);

// Section 3.3's rounds over far components as nodes (members from every rank, any order):
// candidate edges are member pairs of two components within L1 distance `far_R`, and to the
// ground: a residue of a grounded component within far_R (`grounded`, any order, no repeats;
// the cut is a pair cut to it) or the component's nearest image side. Appends the accepted
// cuts to `out`.
void reach_far(std::vector<FarMember> members, std::vector<Residue> grounded, int64_t H, int64_t W, int64_t far_R,
               std::vector<Cut>& out, ClusterStats& stats);

}  // namespace tessera
