// Quicklook PNG of an unwrap result (issue item 3, `unwrap --quicklook PNG`): the
// unwrapped phase through a perceptual colour map (viridis-like; NaN black) and the
// connected components through a categorical palette (0 black), side by side, reduced
// so that the picture's longer side is at most max_side pixels.
//
// Reduction: the image is cut into cells of f x f pixels (f the smallest integer that
// fits both panels and a 4-pixel gap into max_side; the last row/column of cells may be
// partial). A cell's phase is the mean of its finite pixels (box average; NaN when it
// has none); its component is the label of its centre pixel (decimation: labels cannot
// be averaged). The colour map spans the min..max of the cell means.
//
// Distributed use: every rank calls quicklook_cells on its own window (any windows:
// a cell split between ranks gives one partial record per rank), the records are
// gathered on one rank (Comm::gatherv), and that rank calls write_quicklook_cells.
// A record is 32 bytes; at most (max_side^2 / 2) cells in all.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/types.h"

namespace tessera {

struct QuicklookGrid {
    int64_t rows = 0, cols = 0;  // the image
    int64_t factor = 1;          // f: cells of f x f pixels
    int64_t panel_rows = 0, panel_cols = 0;
    int64_t gap = 4;             // grey columns between the two panels
    int64_t width(bool with_labels = true) const { return with_labels ? 2 * panel_cols + gap : panel_cols; }
    int64_t cells() const { return panel_rows * panel_cols; }
};

// Throws std::invalid_argument when max_side < 16 or the image is empty.
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

// RGB bytes (pixel-interleaved, g.panel_rows x g.width(with_labels)) of the merged records.
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
