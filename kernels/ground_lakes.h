// Inner ground (docs/ARCHITECTURE.md section 3.1): the 4-connected pieces of unreliable
// pixels (invalid, or below --min-coherence) inside one window, kept as row runs. Every edge
// touching such a pixel is blocked, so a piece is one barrier: a residue on a plaquette with a
// corner in it reaches it with a cut of length 0. Backend-neutral host code: it reads the
// host flags, which every backend fills before its region exists.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/types.h"

namespace tessera {

inline constexpr int64_t kNoLake = -1;
// Every lake that touches the image border is the outer ground: one node, always balanced.
inline constexpr int64_t kGroundedLake = -2;

// The unreliable runs of a window's rows: row i's runs are [c0, c1) pairs (global columns)
// cols[2 * k], cols[2 * k + 1] for k in [row_start[i], row_start[i + 1]).
struct RowRuns {
    std::vector<int64_t> row_start{0};
    std::vector<int32_t> cols;
    // Appends the runs of `n` rows of flags (row stride `stride`, first column col0, `cols` wide).
    void append_rows(const uint8_t* flags, int64_t stride, int64_t n, int64_t col0, int64_t cols);
    // Appends the rows of `next` (the rows after these).
    void append(const RowRuns& next);
    int64_t rows() const { return static_cast<int64_t>(row_start.size()) - 1; }
};

class LakeRuns {
public:
    // Labels the unreliable pixels of `win` (inside a's buffer). OpenMP over rows.
    LakeRuns(const RegionArrays& a, const Window& win);
    // The same from the window's runs, gathered row by row (a region read in chunks); H x W: the image.
    LakeRuns(RowRuns runs, const Window& win, int64_t H, int64_t W);

    const Window& window() const { return win_; }
    // Run holding pixel (r, c) of the window, or -1.
    int64_t run_at(int64_t r, int64_t c) const;
    // Runs holding pixels (r, c) and (r, c + 1), both in the window, or -1: one search of the row.
    void runs_at(int64_t r, int64_t c, int64_t& at_c, int64_t& at_next) const;
    // Runs holding pixels (r, c) ... (r, c + n - 1), all in the window, or -1: one search of the row.
    void runs_in(int64_t r, int64_t c, int n, int64_t* run) const;
    int64_t runs() const { return static_cast<int64_t>(c0_.size()); }
    int64_t run_row(int64_t run) const { return row_[static_cast<size_t>(run)]; }
    int32_t run_c0(int64_t run) const { return c0_[static_cast<size_t>(run)]; }
    int32_t run_c1(int64_t run) const { return c1_[static_cast<size_t>(run)]; }
    // The piece of a run: its smallest global pixel index (H*W scale), the same on every rank.
    int64_t piece(int64_t run) const { return piece_[static_cast<size_t>(root(run))]; }
    // The piece touches the image border (so the whole lake is outer ground).
    bool piece_on_image_border(int64_t run) const { return on_image_[static_cast<size_t>(root(run))] != 0; }
    // The piece touches a side of the window that is not an image side (it may go on next door).
    bool piece_on_window_border(int64_t run) const { return on_window_[static_cast<size_t>(root(run))] != 0; }

private:
    void label(int64_t H);
    int64_t root(int64_t run) const;
    Window win_;
    int64_t W_ = 0;
    std::vector<int64_t> row_start_;  // window row -> first run
    std::vector<int32_t> c0_, c1_;    // global columns [c0, c1)
    std::vector<int64_t> row_;        // global row of each run
    std::vector<int64_t> parent_;     // union-find over runs; roots are a piece's first run
    std::vector<int64_t> piece_;
    std::vector<uint8_t> on_image_, on_window_;
};

}  // namespace tessera
