#include "kernels/ground_lakes.h"

#include <algorithm>
#include <cstring>

namespace tessera {

namespace {

// True when any of the 8 flag bytes at p is unreliable (a quick skip over good rows).
inline bool any_unreliable8(const uint8_t* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return (w & (0x0101010101010101ull * kUnreliable)) != 0;
}

}  // namespace

void RowRuns::append_rows(const uint8_t* flags, int64_t stride, int64_t n, int64_t col0, int64_t width) {
    std::vector<std::vector<int32_t>> per_row(static_cast<size_t>(n));  // c0, c1 pairs
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t* f = flags + i * stride;
        auto& out = per_row[static_cast<size_t>(i)];
        int64_t j = 0;
        while (j < width) {
            if (j + 8 <= width && !any_unreliable8(f + j)) {
                j += 8;
                continue;
            }
            if (!(f[j] & kUnreliable)) {
                ++j;
                continue;
            }
            const int64_t s = j;
            while (j < width && (f[j] & kUnreliable)) ++j;
            out.push_back(static_cast<int32_t>(col0 + s));
            out.push_back(static_cast<int32_t>(col0 + j));
        }
    }
    for (const auto& v : per_row) {
        cols.insert(cols.end(), v.begin(), v.end());
        row_start.push_back(row_start.back() + static_cast<int64_t>(v.size() / 2));
    }
}

void RowRuns::append(const RowRuns& next) {
    const int64_t base = row_start.back();
    for (size_t k = 1; k < next.row_start.size(); ++k) row_start.push_back(base + next.row_start[k]);
    cols.insert(cols.end(), next.cols.begin(), next.cols.end());
}

LakeRuns::LakeRuns(const RegionArrays& a, const Window& win) : win_(win), W_(a.W) {
    RowRuns runs;
    runs.append_rows(a.flags + a.index(win.row0, win.col0), a.buf.cols, win.rows, win.col0, win.cols);
    row_start_ = std::move(runs.row_start);
    const size_t n = static_cast<size_t>(row_start_.back());
    c0_.resize(n), c1_.resize(n);
    for (size_t k = 0; k < n; ++k) c0_[k] = runs.cols[2 * k], c1_[k] = runs.cols[2 * k + 1];
    label(a.H);
}

LakeRuns::LakeRuns(RowRuns runs, const Window& win, int64_t H, int64_t W) : win_(win), W_(W) {
    row_start_ = std::move(runs.row_start);
    const size_t n = static_cast<size_t>(row_start_.back());
    c0_.resize(n), c1_.resize(n);
    for (size_t k = 0; k < n; ++k) c0_[k] = runs.cols[2 * k], c1_[k] = runs.cols[2 * k + 1];
    label(H);
}

// The pieces: runs of consecutive rows that share a column are one; the smaller run is the root.
void LakeRuns::label(int64_t H) {
    const Window& win = win_;
    const int64_t R = win.rows, W = W_;
    const size_t n = c0_.size();
    row_.resize(n), parent_.resize(n);
    for (int64_t i = 0; i < R; ++i)
        for (int64_t run = row_start_[static_cast<size_t>(i)]; run < row_start_[static_cast<size_t>(i) + 1]; ++run)
            row_[static_cast<size_t>(run)] = win.row0 + i;
    for (size_t i = 0; i < n; ++i) parent_[i] = static_cast<int64_t>(i);
    auto find = [&](int64_t x) {
        while (parent_[static_cast<size_t>(x)] != x) {
            parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
            x = parent_[static_cast<size_t>(x)];
        }
        return x;
    };
    for (int64_t i = 1; i < R; ++i) {
        int64_t p = row_start_[static_cast<size_t>(i) - 1], pe = row_start_[static_cast<size_t>(i)];
        int64_t q = pe, qe = row_start_[static_cast<size_t>(i) + 1];
        while (p < pe && q < qe) {
            if (c0_[static_cast<size_t>(p)] < c1_[static_cast<size_t>(q)] &&
                c0_[static_cast<size_t>(q)] < c1_[static_cast<size_t>(p)]) {
                const int64_t rp = find(p), rq = find(q);
                if (rp != rq) parent_[static_cast<size_t>(std::max(rp, rq))] = std::min(rp, rq);
            }
            if (c1_[static_cast<size_t>(p)] < c1_[static_cast<size_t>(q)])
                ++p;
            else
                ++q;
        }
    }
    piece_.assign(n, 0);
    on_image_.assign(n, 0);
    on_window_.assign(n, 0);
    const int64_t r1 = win.row0 + win.rows, col1 = win.col0 + win.cols;
    for (size_t i = 0; i < n; ++i) {
        const int64_t rt = find(static_cast<int64_t>(i));
        parent_[i] = rt;  // flat from here on: root() is one load
        if (rt == static_cast<int64_t>(i)) piece_[i] = row_[i] * W + c0_[i];
        const bool img = row_[i] == 0 || row_[i] == H - 1 || c0_[i] == 0 || c1_[i] == W;
        const bool wnd = (row_[i] == win.row0 && win.row0 > 0) || (row_[i] == r1 - 1 && r1 < H) ||
                         (c0_[i] == win.col0 && win.col0 > 0) || (c1_[i] == col1 && col1 < W);
        on_image_[static_cast<size_t>(rt)] |= static_cast<uint8_t>(img);
        on_window_[static_cast<size_t>(rt)] |= static_cast<uint8_t>(wnd);
    }
}

int64_t LakeRuns::root(int64_t run) const { return parent_[static_cast<size_t>(run)]; }

int64_t LakeRuns::run_at(int64_t r, int64_t c) const {
    if (!win_.contains(r, c)) return -1;
    const size_t i = static_cast<size_t>(r - win_.row0);
    const auto b = c1_.begin() + row_start_[i], e = c1_.begin() + row_start_[i + 1];
    const auto it = std::upper_bound(b, e, static_cast<int32_t>(c));  // first run ending after c
    if (it == e) return -1;
    const int64_t run = it - c1_.begin();
    return c0_[static_cast<size_t>(run)] <= c ? run : -1;
}

void LakeRuns::runs_at(int64_t r, int64_t c, int64_t& at_c, int64_t& at_next) const {
    const size_t i = static_cast<size_t>(r - win_.row0);
    const auto b = c1_.begin() + row_start_[i], e = c1_.begin() + row_start_[i + 1];
    const auto it = std::upper_bound(b, e, static_cast<int32_t>(c));  // first run ending after c
    at_c = at_next = -1;
    if (it == e) return;
    const int64_t run = it - c1_.begin();
    if (c0_[static_cast<size_t>(run)] <= c) at_c = run;
    // Runs are maximal (a gap of one pixel at least between two of a row): c + 1 is in this run or none.
    if (c0_[static_cast<size_t>(run)] <= c + 1 && c + 1 < c1_[static_cast<size_t>(run)]) at_next = run;
}

void LakeRuns::runs_in(int64_t r, int64_t c, int n, int64_t* run) const {
    const size_t i = static_cast<size_t>(r - win_.row0);
    const auto b = c1_.begin() + row_start_[i], e = c1_.begin() + row_start_[i + 1];
    auto it = std::upper_bound(b, e, static_cast<int32_t>(c));  // first run ending after c
    for (int j = 0; j < n; ++j) {
        const int64_t x = c + j;
        while (it != e && *it <= x) ++it;
        run[j] = it != e && c0_[static_cast<size_t>(it - c1_.begin())] <= x ? it - c1_.begin() : -1;
    }
}

}  // namespace tessera
