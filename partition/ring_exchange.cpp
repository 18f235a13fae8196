#include "partition/ring_exchange.h"

#include <algorithm>
#include <limits>

namespace tessera {

namespace {

constexpr int64_t K = kCorrectionReach;

struct RingValue {
    int64_t index;  // global pixel
    RingPixel p;
};

}  // namespace

CorrectionHalo RingHalo::band(const Window& own, const Window& rows, std::span<const float> above_rows,
                              std::span<const uint32_t> above_rows_label, std::span<const float> below_rows,
                              std::span<const uint32_t> below_rows_label) const {
    const size_t first = static_cast<size_t>((rows.row0 - own.row0) * K), n = static_cast<size_t>(rows.rows * K);
    return {above_rows,
            below_rows,
            std::span<const float>(left).subspan(first, n),
            std::span<const float>(right).subspan(first, n),
            above_rows_label,
            below_rows_label,
            std::span<const uint32_t>(left_label).subspan(first, n),
            std::span<const uint32_t>(right_label).subspan(first, n)};
}

RingHalo exchange_ring(const RankGrid& grid, Comm& comm, const std::function<RingPixel(int64_t, int64_t)>& at) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const int me = comm.rank();
    const Window own = grid.own(me);
    const int64_t W = grid.tiles.W;
    RingHalo ring;
    const int64_t wide = own.cols + 2 * K;
    const size_t across = static_cast<size_t>(K * wide), tall = static_cast<size_t>(own.rows * K);
    ring.above.assign(across, nan), ring.below.assign(across, nan), ring.left.assign(tall, nan), ring.right.assign(tall, nan);
    ring.above_label.assign(across, 0), ring.below_label.assign(across, 0);
    ring.left_label.assign(tall, 0), ring.right_label.assign(tall, 0);
    if (comm.size() == 1) return ring;
    // To each rank: my pixels within K of its window (strips along my border).
    std::vector<std::vector<RingValue>> send(static_cast<size_t>(comm.size()));
    for (int d = 0; d < comm.size(); ++d) {
        if (d == me) continue;
        const Window o = grid.own(d);
        const int64_t r0 = std::max(own.row0, o.row0 - K), r1 = std::min(own.row0 + own.rows, o.row0 + o.rows + K);
        const int64_t c0 = std::max(own.col0, o.col0 - K), c1 = std::min(own.col0 + own.cols, o.col0 + o.cols + K);
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c) send[static_cast<size_t>(d)].push_back({r * W + c, at(r, c)});
    }
    const int64_t top = own.row0 - K, bottom = own.row0 + own.rows, lcol = own.col0 - K, rcol = own.col0 + own.cols;
    auto put = [](std::vector<float>& u, std::vector<uint32_t>& l, int64_t i, const RingPixel& p) {
        u[static_cast<size_t>(i)] = p.u, l[static_cast<size_t>(i)] = p.label;
    };
    for (const RingValue& v : comm.alltoallv(send)) {
        const int64_t r = v.index / W, c = v.index % W;
        if (r < own.row0)
            put(ring.above, ring.above_label, (r - top) * wide + (c - lcol), v.p);
        else if (r >= bottom)
            put(ring.below, ring.below_label, (r - bottom) * wide + (c - lcol), v.p);
        else if (c < own.col0)
            put(ring.left, ring.left_label, (r - own.row0) * K + (c - lcol), v.p);
        else
            put(ring.right, ring.right_label, (r - own.row0) * K + (c - rcol), v.p);
    }
    return ring;
}

}  // namespace tessera
