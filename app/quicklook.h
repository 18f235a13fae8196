// Quicklook PNG of an unwrap result (issue item 3, `unwrap --quicklook PNG`; issue 17 item 6),
// three panels side by side, reduced so that the picture's longer side is at most max_side:
//   the unwrapped phase u through a perceptual colour map (viridis; NaN black),
//   the re-wrapped phase (u mod 2 pi, into [-pi, pi)) through a cyclic map (hue wheel; NaN
//   black): fringes that stop or jump where unwrapping erred,
//   the connected components through a categorical palette (0 black);
// and under the panels (bar_rows rows) the two colour bars with their ranges in radians as
// text (u: the min and max of the cell means, the colour map's span; re-wrapped: -pi, pi).
//
// Reduction: the image is cut into cells of f x f pixels (f the smallest integer that
// fits the panels, their 4-pixel gaps and the bars into max_side; the last row/column of cells
// may be partial). A cell's phase is the mean of its finite pixels (box average; NaN when it
// has none); its component is the label of its centre pixel (decimation: labels cannot
// be averaged).
//
// Distributed use: every rank calls quicklook_cells on its own window (any windows:
// a cell split between ranks gives one partial record per rank), the records are
// gathered on one rank (Comm::gatherv), and that rank calls write_quicklook_cells.
// A record is 32 bytes; at most (max_side^2 / 2) cells in all.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/types.h"

namespace tessera {

struct QuicklookGrid {
    int64_t rows = 0, cols = 0;  // the image
    int64_t factor = 1;          // f: cells of f x f pixels
    int64_t panel_rows = 0, panel_cols = 0;
    int64_t gap = 4;             // grey columns between the panels
    int64_t bar_rows = 24;       // under the panels: 3 rows, the bars (8), 3, their ranges (7), 3
    int64_t panels(bool with_labels = true) const { return with_labels ? 3 : 2; }
    int64_t width(bool with_labels = true) const { return panels(with_labels) * (panel_cols + gap) - gap; }
    int64_t height() const { return panel_rows + bar_rows; }
    int64_t panel_col0(int panel) const { return panel * (panel_cols + gap); }  // 0 u, 1 re-wrapped, 2 labels
    int64_t bar_row0() const { return panel_rows + 3; }
    int64_t text_row0() const { return panel_rows + 14; }
    int64_t cells() const { return panel_rows * panel_cols; }
};

// Throws std::invalid_argument when max_side < 64 or the image is empty.
QuicklookGrid quicklook_grid(int64_t rows, int64_t cols, int max_side = 1024);

// Partial sums of one cell from one window (trivially copyable, for MPI gathers).
struct QuicklookCell {
    int64_t cell = 0;       // panel_row * panel_cols + panel_col
    double sum = 0;         // sum of the finite phase values of the cell seen by the window
    int64_t count = 0;      // how many
    uint32_t label = 0;     // label of the cell's centre pixel, when has_label
    uint32_t has_label = 0; // the window holds the centre pixel (and labels were given)
};

// Records of the cells that `own` (global pixels) meets; u and labels point at the
// window's first pixel, row stride `stride`; labels (label_bytes wide: kernels/label_width.h)
// may be null (no components panel).
std::vector<QuicklookCell> quicklook_cells(const float* u, const void* labels, const Window& own,
                                           int64_t stride, const QuicklookGrid& g, int label_bytes = 4);

// The colour maps: viridis over t in [0, 1] (u), the hue wheel over t in [0, 1) (-pi..pi).
std::array<uint8_t, 3> phase_colour(double t);
std::array<uint8_t, 3> rewrapped_colour(double t);

// RGB bytes (pixel-interleaved, g.height() x g.width(with_labels)) of the merged records.
std::vector<uint8_t> render_quicklook(const QuicklookGrid& g, const std::vector<QuicklookCell>& cells,
                                      bool with_labels);

// Merges the records (in any order, from any split), renders and writes the PNG
// (to a unique temporary, io/output_set.h, renamed when complete or left to the active
// OutputSet). with_labels: draw the components panel.
// Throws InputError(png, problem) when it cannot be written.
void write_quicklook_cells(const std::string& png, const QuicklookGrid& g, const std::vector<QuicklookCell>& cells,
                           bool with_labels = true);
void write_quicklook_cells(const std::string& png, const QuicklookGrid& g,
                           const std::vector<std::vector<QuicklookCell>>& per_rank, bool with_labels = true);

// The whole image in memory (one rank): grid + cells + write. labels may be null.
void write_quicklook(const std::string& png, const float* u, const uint32_t* labels, int64_t rows, int64_t cols,
                     int64_t stride, int max_side = 1024);


}  // namespace tessera
