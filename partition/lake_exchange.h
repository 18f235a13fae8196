// Lakes across ranks (docs/ARCHITECTURE.md section 3.1): each rank labels the unreliable
// pixels of its own window (kernels/ground_lakes.h); pieces that meet across a rank border are
// joined here, so that a lake's id (its smallest global pixel index) and whether it touches the
// image border are the same on every rank whatever the rank grid.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/ground_lakes.h"
#include "kernels/types.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"

namespace tessera {

// Which pixels of a rank's one-pixel halo are unreliable: the row below the own window (its
// columns and the corner after them) and the column to its right; empty where the image ends.
struct LakeHalo {
    std::vector<uint8_t> below, right;
    static LakeHalo of(const RegionArrays& a, const Window& own);
};

class GlobalLakes {
public:
    // Collective over comm. a: the rank's buffer (own window and halo) with its kUnreliable bits.
    GlobalLakes(const RegionArrays& a, const RankGrid& grid, Comm& comm);
    // The same from the own window's runs and the halo (a region read in chunks).
    GlobalLakes(LakeRuns runs, LakeHalo halo, const RankGrid& grid, Comm& comm);

    // Lake of pixel (r, c): kNoLake, kGroundedLake, or its global id; (r, c) in the own window or
    // within one row above or left of it or two rows below or right of it (section 3.1's ring).
    int64_t at(int64_t r, int64_t c) const;
    // The lake there may reach past the own window (its residues are shared between ranks).
    bool reaches_out(int64_t r, int64_t c) const;
    // at() and reaches_out() of the plaquette (r, c)'s corners (r, c), (r, c + 1), (r + 1, c),
    // (r + 1, c + 1), in that order: one run search a row where both pixels are own.
    void corners(int64_t r, int64_t c, int64_t lake[4], bool out[4]) const;
    // at() of the eight pixels one dual step from the plaquette (r, c) (section 3.1), in the order
    // (r-1, c), (r-1, c+1), (r+2, c), (r+2, c+1), (r, c-1), (r+1, c-1), (r, c+2), (r+1, c+2):
    // one run search a row where the row's pixels are own.
    void ring(int64_t r, int64_t c, int64_t lake[8]) const;
    // No unreliable pixel in the own window or its halo: at() is kNoLake everywhere.
    bool none() const;

private:
    struct Published {  // a run of a rank's first row or column, for the neighbours' halos
        int64_t row;
        int32_t c0, c1;
        int64_t piece;
        int32_t grounded, pad = 0;
    };
    bool unreliable(int64_t r, int64_t c) const;
    int64_t resolve(int64_t piece, bool grounded) const;
    const Published* published_at(int64_t r, int64_t c) const;

    Window own_;
    int64_t W_;
    LakeRuns local_;
    LakeHalo halo_;
    std::vector<Published> pub_;           // every rank's, sorted by (row, c0)
    std::vector<int64_t> piece_ids_;       // pieces met across ranks, sorted
    std::vector<int64_t> piece_lake_;      // their lake: id or kGroundedLake
    bool ring_published_ = false;          // a neighbour published a run within two pixels of the own window
};

}  // namespace tessera
