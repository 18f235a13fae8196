// Branch cuts as charge-balanced cut clusters across ranks (docs/ARCHITECTURE.md section 3).
// The rule (kernels/cut_clusters.h) acts on each set of residues that candidate edges connect,
// independently of every other; a rank decides alone the sets that lie inside its region, and
// every rank decides the (gathered) sets that reach a rank border. The result is the rule's
// over the whole image, whatever the ranks.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/ab_switch.h"
#include "kernels/cut_clusters.h"
#include "kernels/residue.h"
#include "partition/comm.h"
#include "partition/lake_exchange.h"
#include "partition/rank_grid.h"

namespace tessera {

struct MatchStats {
    int64_t residues = 0;
    int64_t pairs = 0, ground_cuts = 0, lake_joins = 0;
    int64_t lake_steps = 0;  // one-step cuts to the ground one dual step from a residue (section 3.1)
    int64_t shared = 0;  // residues decided on every rank (their set reaches a rank border)
    int64_t far_residues = 0;  // residues of the components that reached again (section 3.6)
};

// Section 3.6 allowed by the environment; TESSERA_FAR_REACH=0 leaves the rule's long ground cuts
// whatever the options (A/B studies).
inline bool far_reach_on() { return !switch_is("TESSERA_FAR_REACH", "0"); }

// Where a rank's plaquette corners meet lakes: the lake of buffer pixel (r, c) (kNoLake,
// kGroundedLake or its id), and whether that lake may reach past the own window.
struct LakeView {
    std::function<int64_t(int64_t r, int64_t c)> at;
    std::function<bool(int64_t r, int64_t c)> reaches_out;
    bool none = false;  // no unreliable pixel in the buffer: every corner is kNoLake, no lookups
    // Optional: at and reaches_out of a plaquette's four corners in one call (GlobalLakes::corners).
    std::function<void(int64_t r, int64_t c, int64_t lake[4], bool out[4])> corners;
    // Optional: at of the eight pixels one dual step away in one call (GlobalLakes::ring).
    std::function<void(int64_t r, int64_t c, int64_t lake[8])> ring;
    // Section 3.1's lakes one dual step away (TESSERA_LAKE_STEPS=0: the corners' only, for A/B studies).
    bool steps = true;
};

// The view of a rank's lakes (held by the caller while the view is used). TESSERA_LAKE_CORNERS=0
// (A/B studies): a lookup a pixel, as before corners().
inline LakeView lake_view(const GlobalLakes& lakes) {
    LakeView v{[&lakes](int64_t r, int64_t c) { return lakes.at(r, c); },
               [&lakes](int64_t r, int64_t c) { return lakes.reaches_out(r, c); }, lakes.none(), {}, {}, true};
    v.steps = !switch_is("TESSERA_LAKE_STEPS", "0");
    if (!switch_is("TESSERA_LAKE_CORNERS", "0")) {
        v.corners = [&lakes](int64_t r, int64_t c, int64_t lake[4], bool out[4]) { lakes.corners(r, c, lake, out); };
        v.ring = [&lakes](int64_t r, int64_t c, int64_t lake[8]) { lakes.ring(r, c, lake); };
    }
    return v;
}

// Section 3.3's rule over one closed set of residues, in a backend's form (kernels/cut_clusters.h's
// signature; every form gives the same cuts): the backend's Region says which (Region::cut_clusters).
using ClusterRule = void (*)(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                             std::vector<Cut>& out, ClusterStats& stats);

// Residue x with the lakes it touches (section 3.1: at most two, ascending; those at its
// plaquette's corners, then the ground one dual step away); reaches_out: one of them may reach
// past the own window. H x W: the image.
ClusterResidue with_touching_lakes(const Residue& x, const LakeView& lakes, int64_t H, int64_t W, bool& reaches_out);
// The one-step cuts that make the ground one step away touch x (section 3.1), appended to `out`.
int64_t add_lake_steps(std::span<const ClusterResidue> res, std::vector<Cut>& out);

// `owned`: this rank's residues (plaquettes whose top-left pixel it owns), sorted by id.
// Returns every cut that may cross this rank's edges, sorted by (id_a, id_b) (on one rank the
// rule's cuts so, then the lake steps so: rasterising needs no order); stats are global.
// `radius`: the largest L1 distance between two residues joined by one cut.
// `rule`: the form of the rule that decides each set (default: the host's).
// `far`: section 3.6's far reach after the rule (UnwrapParams::far_reach; TESSERA_FAR_REACH=0 too).
std::vector<Cut> match_residues(std::span<const Residue> owned, const LakeView& lakes, const RankGrid& grid,
                                int64_t radius, Comm& comm, MatchStats& stats, ClusterRule rule = &cut_clusters,
                                bool far = true);
// No unreliable pixels anywhere.
std::vector<Cut> match_residues(std::span<const Residue> owned, const RankGrid& grid, int64_t radius, Comm& comm,
                                MatchStats& stats);

}  // namespace tessera
