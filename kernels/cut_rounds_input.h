// The flat input of the rule's data-parallel rounds (kernels/cut_rounds.h), made on the host
// from one closed set of residues, and the cuts made back from the rounds' sorted cut codes.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/cut_rounds.h"
#include "kernels/plaquette_bitmap.h"
#include "kernels/vector_memory.h"

namespace tessera {

struct RoundInput {
    int32_t n = 0, L = 0;
    int64_t H = 0, W = 0, radius = 0;
    // Written whole on the host's threads (no serial zeroing first: 12.5 M residues are 250 MB).
    UntouchedVector<int32_t> rr, rc, sign;
    UntouchedVector<int32_t> lake_node;  // 2 per residue: n + lake index, n + L (grounded), -1
    std::vector<int32_t> adj_start;      // each lake's first entry in adj (L + 1)
    UntouchedVector<int32_t> adj;        // each lake's residues, ascending
    int64_t r0 = 0, c0 = 0, rows = 0, cols = 0;  // the residues' bounding box (the bitmap's)
    PlaquetteBitmap occupied;  // empty when made without it (the device builds its own)
    RankKeys keys;
    int32_t nodes() const { return n + L + 1; }
};

// `res` as cut_clusters takes it. False (and nothing made) when the dense-rank keys would not
// fit in 64 bits or the nodes in int32: the caller keeps the host rule. Without `bitmap` the
// occupancy bitmap is left to the caller (the device builds it from rr, rc and the box).
bool make_round_input(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius, RoundInput& in,
                      bool bitmap = true);

// The cuts of sorted cut codes (cut_code), appended to `out` in cut_order.
void cuts_from_codes(std::span<const ClusterResidue> res, std::span<const uint64_t> codes, int64_t H, int64_t W,
                     std::vector<Cut>& out);

// The rounds as a serial loop over each step's index range (tests: the device's steps on the
// host; `tune` small runs the parked cluster's paths on small sets). Cut codes sorted.
// shuffle != 0: each step's indices in a pseudo-random order drawn from it (the device runs
// them in any order: the cuts must not change).
void run_rounds_serial(const RoundInput& in, std::vector<uint64_t>& codes, RoundCounts& counts,
                       const RoundTuning& tune = RoundTuning{}, uint64_t shuffle = 0);

}  // namespace tessera
