// A window's rows in items for the host's threads (section 7): `row_items` row bands, each cut into
// column pieces on `align`-column borders of the raster where there are fewer bands than twice the
// threads (a chunk's few block rows), so that every thread has work. Plain arithmetic for the
// parallel reads of io/raster_reader.cpp.
#pragma once
#include <algorithm>
#include <cstdint>

#include "kernels/types.h"

namespace tessera {

class ColumnPieces {
public:
    ColumnPieces(const Window& w, int64_t row_items, int64_t threads, int64_t align, bool parallel)
        : col0_(w.col0), cols_(w.cols), align_(std::max<int64_t>(1, align)) {
        if (parallel && row_items < 2 * threads && align_ < cols_)
            parts_ = std::min((2 * threads + row_items - 1) / row_items, (cols_ + align_ - 1) / align_);
        width_ = (cols_ + parts_ - 1) / parts_;
    }
    int64_t parts() const { return parts_; }
    // Piece j's first column, window-relative (begin(parts()) == the window's width).
    int64_t begin(int64_t j) const {
        if (j <= 0) return 0;
        if (j >= parts_) return cols_;
        return std::min(cols_, (col0_ + j * width_ + align_ - 1) / align_ * align_ - col0_);
    }

private:
    int64_t col0_, cols_, align_, parts_ = 1, width_ = 0;
};

}  // namespace tessera
