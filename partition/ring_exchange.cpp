#include "partition/ring_exchange.h"

#include <algorithm>
#include <limits>

namespace tessera {

namespace {

struct RingValue {
    int64_t index;  // global pixel
    RingPixel p;
};

}  // namespace

CorrectionHalo RingHalo::band(const Window& own, const Window& rows, std::span<const float> above_row,
                              std::span<const uint32_t> above_row_label, std::span<const float> below_row,
                              std::span<const uint32_t> below_row_label) const {
    const size_t first = static_cast<size_t>(rows.row0 - own.row0), n = static_cast<size_t>(rows.rows);
    return {above_row,
            below_row,
            std::span<const float>(left).subspan(first, n),
            std::span<const float>(right).subspan(first, n),
            above_row_label,
            below_row_label,
            std::span<const uint32_t>(left_label).subspan(first, n),
            std::span<const uint32_t>(right_label).subspan(first, n)};
}

RingHalo exchange_ring(const RankGrid& grid, Comm& comm, const std::function<RingPixel(int64_t, int64_t)>& at) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const int me = comm.rank();
    const Window own = grid.own(me);
    const int64_t W = grid.tiles.W;
    RingHalo ring;
    const size_t wide = static_cast<size_t>(own.cols + 2), tall = static_cast<size_t>(own.rows);
    ring.above.assign(wide, nan), ring.below.assign(wide, nan), ring.left.assign(tall, nan), ring.right.assign(tall, nan);
    ring.above_label.assign(wide, 0), ring.below_label.assign(wide, 0);
    ring.left_label.assign(tall, 0), ring.right_label.assign(tall, 0);
    if (comm.size() == 1) return ring;
    // To each rank: my pixels within one pixel of its window (a strip along my border).
    std::vector<std::vector<RingValue>> send(static_cast<size_t>(comm.size()));
    for (int d = 0; d < comm.size(); ++d) {
        if (d == me) continue;
        const Window o = grid.own(d);
        const int64_t r0 = std::max(own.row0, o.row0 - 1), r1 = std::min(own.row0 + own.rows, o.row0 + o.rows + 1);
        const int64_t c0 = std::max(own.col0, o.col0 - 1), c1 = std::min(own.col0 + own.cols, o.col0 + o.cols + 1);
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c) send[static_cast<size_t>(d)].push_back({r * W + c, at(r, c)});
    }
    const int64_t top = own.row0 - 1, bottom = own.row0 + own.rows, lcol = own.col0 - 1, rcol = own.col0 + own.cols;
    for (const RingValue& v : comm.alltoallv(send)) {
        const int64_t r = v.index / W, c = v.index % W;
        if (r == top) {
            ring.above[static_cast<size_t>(c - lcol)] = v.p.u, ring.above_label[static_cast<size_t>(c - lcol)] = v.p.label;
        } else if (r == bottom) {
            ring.below[static_cast<size_t>(c - lcol)] = v.p.u, ring.below_label[static_cast<size_t>(c - lcol)] = v.p.label;
        } else if (c == lcol) {
            ring.left[static_cast<size_t>(r - own.row0)] = v.p.u, ring.left_label[static_cast<size_t>(r - own.row0)] = v.p.label;
        } else if (c == rcol) {
            ring.right[static_cast<size_t>(r - own.row0)] = v.p.u, ring.right_label[static_cast<size_t>(r - own.row0)] = v.p.label;
        }
    }
    return ring;
}

}  // namespace tessera
