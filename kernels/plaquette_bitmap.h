// Which plaquettes of a bounding box hold residues: one bit each, ranked so that a set bit
// leads to its residues (docs/ARCHITECTURE.md section 8: cut clusters touch O(residues)
// memory plus a bit a plaquette of the box). Host code.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cut_clusters.h"

namespace tessera {

class PlaquetteBitmap {
public:
    PlaquetteBitmap() = default;
    // res: sorted by id (so by raster order of plaquettes).
    explicit PlaquetteBitmap(std::span<const ClusterResidue> res, int64_t H, int64_t W) {
        if (res.empty()) return;
        r0_ = H, c0_ = W;
        int64_t r1 = 0, c1 = 0;
        for (const ClusterResidue& x : res) {
            r0_ = std::min<int64_t>(r0_, x.res.r), r1 = std::max<int64_t>(r1, x.res.r);
            c0_ = std::min<int64_t>(c0_, x.res.c), c1 = std::max<int64_t>(c1, x.res.c);
        }
        rows_ = r1 - r0_ + 1, cols_ = c1 - c0_ + 1;
        bits_.assign(static_cast<size_t>((rows_ * cols_ + 63) / 64), 0);
        for (size_t i = 0; i < res.size(); ++i) {
            const int64_t b = bit(res[i].res.r, res[i].res.c);
            const uint64_t m = uint64_t{1} << (b & 63);
            if (!(bits_[static_cast<size_t>(b >> 6)] & m)) first_.push_back(static_cast<int32_t>(i));
            bits_[static_cast<size_t>(b >> 6)] |= m;
        }
        first_.push_back(static_cast<int32_t>(res.size()));
        word_rank_.resize(bits_.size());
        int32_t acc = 0;
        for (size_t w = 0; w < bits_.size(); ++w) word_rank_[w] = acc, acc += std::popcount(bits_[w]);
    }

    bool inside(int64_t r, int64_t c) const { return r >= r0_ && r < r0_ + rows_ && c >= c0_ && c < c0_ + cols_; }
    int64_t bit(int64_t r, int64_t c) const { return (r - r0_) * cols_ + (c - c0_); }
    bool test(int64_t b) const { return (bits_[static_cast<size_t>(b >> 6)] >> (b & 63)) & 1; }
    // The residues [first, end) of the plaquette at set bit b.
    std::pair<int32_t, int32_t> residues(int64_t b) const {
        const uint64_t word = bits_[static_cast<size_t>(b >> 6)];
        const int64_t k = word_rank_[static_cast<size_t>(b >> 6)] + std::popcount(word & ((uint64_t{1} << (b & 63)) - 1));
        return {first_[static_cast<size_t>(k)], first_[static_cast<size_t>(k) + 1]};
    }
    // Row y's columns [x0, x1] clipped to the box: the bit range, or false when empty.
    bool row_span(int64_t y, int64_t x0, int64_t x1, int64_t& b0, int64_t& b1) const {
        if (y < r0_ || y >= r0_ + rows_) return false;
        x0 = std::max(x0, c0_), x1 = std::min(x1, c0_ + cols_ - 1);
        if (x0 > x1) return false;
        b0 = bit(y, x0), b1 = bit(y, x1);
        return true;
    }
    // The first / last set bit in [b0, b1], or -1.
    int64_t first_set(int64_t b0, int64_t b1) const {
        for (int64_t b = b0; b <= b1;) {
            const uint64_t word = bits_[static_cast<size_t>(b >> 6)] >> (b & 63);
            if (word) {
                const int64_t at = b + std::countr_zero(word);
                return at <= b1 ? at : -1;
            }
            b = (b | 63) + 1;
        }
        return -1;
    }
    int64_t last_set(int64_t b0, int64_t b1) const {
        for (int64_t b = b1; b >= b0;) {
            const uint64_t word = bits_[static_cast<size_t>(b >> 6)] << (63 - (b & 63));
            if (word) {
                const int64_t at = b - std::countl_zero(word);
                return at >= b0 ? at : -1;
            }
            b = (b & ~int64_t{63}) - 1;
        }
        return -1;
    }

private:
    int64_t r0_ = 0, c0_ = 0, rows_ = 0, cols_ = 0;
    std::vector<uint64_t> bits_;
    std::vector<int32_t> word_rank_;  // occupied plaquettes before each word
    std::vector<int32_t> first_;      // occupied plaquette -> its first residue (and n at the end)
};

}  // namespace tessera
