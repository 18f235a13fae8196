// Which plaquettes of a bounding box hold residues: one bit each, ranked so that a set bit
// leads to its residues (docs/ARCHITECTURE.md section 8: cut clusters touch O(residues)
// memory plus a bit a plaquette of the box). Built on the host; queried through PlaquetteBits.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/cut_numerics.h"

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
            const int64_t b = (res[i].res.r - r0_) * cols_ + (res[i].res.c - c0_);
            const uint64_t m = uint64_t{1} << (b & 63);
            if (!(bits_[static_cast<size_t>(b >> 6)] & m)) first_.push_back(static_cast<int32_t>(i));
            bits_[static_cast<size_t>(b >> 6)] |= m;
        }
        first_.push_back(static_cast<int32_t>(res.size()));
        word_rank_.resize(bits_.size());
        int32_t acc = 0;
        for (size_t w = 0; w < bits_.size(); ++w) word_rank_[w] = acc, acc += std::popcount(bits_[w]);
    }

    // The queries (kernels/cut_numerics.h), over these arrays.
    PlaquetteBits view() const {
        return PlaquetteBits{bits_.data(), word_rank_.data(), first_.data(), r0_, c0_, rows_, cols_};
    }
    const std::vector<uint64_t>& bits() const { return bits_; }
    const std::vector<int32_t>& word_rank() const { return word_rank_; }
    const std::vector<int32_t>& first() const { return first_; }

private:
    int64_t r0_ = 0, c0_ = 0, rows_ = 0, cols_ = 0;
    std::vector<uint64_t> bits_;
    std::vector<int32_t> word_rank_;  // occupied plaquettes before each word
    std::vector<int32_t> first_;      // occupied plaquette -> its first residue (and n at the end)
};

}  // namespace tessera
