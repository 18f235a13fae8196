// The decisions of section 3's rule that both backends take (docs/ARCHITECTURE.md 3.2-3.3),
// written once for the host compiler and nvcc (kernels/hostdev.h): border distance and side
// ties, the ring walk of a residue's pair candidates, the plaquette bitmap it walks over, and
// the dense-rank edge keys. C++17.
#pragma once
#include <cstdint>

#include "kernels/hostdev.h"

namespace tessera {

// Ground sides in the contract's tie order.
enum GroundSide : int8_t { kNotGround = -1, kTop = 0, kBottom = 1, kLeft = 2, kRight = 3 };

struct GroundChoice {
    int64_t weight;
    GroundSide side;
};

// Dual steps from plaquette (r, c) to the nearest image side; ties: top, bottom, left, right.
TESSERA_HOSTDEV inline GroundChoice ground_choice(int64_t r, int64_t c, int64_t H, int64_t W) {
    GroundChoice g{r + 1, kTop};
    if (H - 1 - r < g.weight) g = {H - 1 - r, kBottom};
    if (c + 1 < g.weight) g = {c + 1, kLeft};
    if (W - 1 - c < g.weight) g = {W - 1 - c, kRight};
    return g;
}

// Position k of ring w (L1 distance w >= 1; 4w positions) as an offset: raster order (rows
// top to bottom, left before right), so at one w a residue's pair keys come in walk order.
TESSERA_HOSTDEV inline void ring_offset(int64_t w, int64_t k, int64_t& dr, int64_t& dc) {
    dr = 0, dc = 0;
    if (w == 0) return;
    if (k == 0) {
        dr = -w;
    } else if (k == 4 * w - 1) {
        dr = w;
    } else {
        const int64_t t = k - 1;
        dr = -w + 1 + t / 2;
        const int64_t rem = w - hd::abs(dr);
        dc = t % 2 == 0 ? -rem : rem;
    }
}

// Which plaquettes of a bounding box hold residues, one bit each, ranked so that a set bit
// leads to its residues (arrays owned by kernels/plaquette_bitmap.h or their device copies).
struct PlaquetteBits {
    const uint64_t* bits = nullptr;
    const int32_t* word_rank = nullptr;  // occupied plaquettes before each word
    const int32_t* first = nullptr;      // occupied plaquette -> its first residue (n at the end)
    int64_t r0 = 0, c0 = 0, rows = 0, cols = 0;

    TESSERA_HOSTDEV bool inside(int64_t r, int64_t c) const { return r >= r0 && r < r0 + rows && c >= c0 && c < c0 + cols; }
    TESSERA_HOSTDEV int64_t bit(int64_t r, int64_t c) const { return (r - r0) * cols + (c - c0); }
    TESSERA_HOSTDEV bool test(int64_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
    // The residues [first, end) of the plaquette at set bit b.
    TESSERA_HOSTDEV void residues(int64_t b, int32_t& begin, int32_t& end) const {
        const uint64_t word = bits[b >> 6];
        const int64_t k = word_rank[b >> 6] + hd::popcount(word & ((uint64_t{1} << (b & 63)) - 1));
        begin = first[k], end = first[k + 1];
    }
    // Row y's columns [x0, x1] clipped to the box: the bit range, or false when empty.
    TESSERA_HOSTDEV bool row_span(int64_t y, int64_t x0, int64_t x1, int64_t& b0, int64_t& b1) const {
        if (y < r0 || y >= r0 + rows) return false;
        x0 = hd::max(x0, c0), x1 = hd::min(x1, c0 + cols - 1);
        if (x0 > x1) return false;
        b0 = bit(y, x0), b1 = bit(y, x1);
        return true;
    }
    // The first / last set bit in [b0, b1], or -1.
    TESSERA_HOSTDEV int64_t first_set(int64_t b0, int64_t b1) const {
        for (int64_t b = b0; b <= b1;) {
            const uint64_t word = bits[b >> 6] >> (b & 63);
            if (word) {
                const int64_t at = b + hd::countr_zero(word);
                return at <= b1 ? at : -1;
            }
            b = (b | 63) + 1;
        }
        return -1;
    }
    TESSERA_HOSTDEV int64_t last_set(int64_t b0, int64_t b1) const {
        for (int64_t b = b1; b >= b0;) {
            const uint64_t word = bits[b >> 6] << (63 - (b & 63));
            if (word) {
                const int64_t at = b - hd::countl_zero(word);
                return at >= b0 ? at : -1;
            }
            b = (b & ~int64_t{63}) - 1;
        }
        return -1;
    }
    // The smallest L1 distance d, from <= d <= limit, of an occupied plaquette from (r, c)
    // (from >= 1), or limit + 1: two bit scans a row instead of a walk over every position.
    TESSERA_HOSTDEV int64_t nearest_occupied(int64_t r, int64_t c, int64_t from, int64_t limit) const {
        int64_t best = limit + 1;
        for (int64_t dr = -limit; dr <= limit; ++dr) {
            const int64_t adr = hd::abs(dr);
            if (adr >= best) continue;
            const int64_t m = hd::max(from - adr, 0), span = best - 1 - adr;
            if (m > span) continue;
            int64_t b0, b1;
            if (row_span(r + dr, c + m, c + span, b0, b1)) {  // right of c
                const int64_t at = first_set(b0, b1);
                if (at >= 0) best = hd::min(best, adr + (at - bit(r + dr, c)));  // bits are linear in x
            }
            if (row_span(r + dr, c - span, c - m, b0, b1)) {  // left of c
                const int64_t at = last_set(b0, b1);
                if (at >= 0) best = hd::min(best, adr + (bit(r + dr, c) - at));
            }
        }
        return best;
    }
};

// A residue's place in the ring walk of its pair candidates: ring w (L1 distance), position k
// on it, residue s at that plaquette. The walk's order is the pair keys' order (3.2), so a
// cursor only advances: a candidate passed lies inside the residue's cluster for good.
struct RingCursor {
    int32_t w = 0, k = 0, s = 0;
};

// Walks residue v's cursor (plaquette (ar, ac)) past candidates for which outside(j) is false;
// returns the first other one no farther than `limit`, its distance in w_out, or -1. The
// cursor stays on it.
template <class Outside>
TESSERA_HOSTDEV int32_t next_pair(const PlaquetteBits& occ, int64_t ar, int64_t ac, int32_t v, RingCursor& cu,
                                  int64_t limit, const Outside& outside, int64_t& w_out) {
    if (cu.w >= 1 && cu.k == 0 && cu.s == 0) {  // at a ring's start: jump over empty rings
        const int64_t d = occ.nearest_occupied(ar, ac, cu.w, limit);
        if (d > cu.w) cu.w = static_cast<int32_t>(hd::min(d, limit + 1));
    }
    for (; cu.w <= limit; ++cu.w, cu.k = 0, cu.s = 0) {
        const int32_t positions = cu.w == 0 ? 1 : 4 * cu.w;
        for (; cu.k < positions; ++cu.k, cu.s = 0) {
            int64_t dr, dc;
            ring_offset(cu.w, cu.k, dr, dc);
            const int64_t r = ar + dr, c = ac + dc;
            if (!occ.inside(r, c)) continue;
            const int64_t b = occ.bit(r, c);
            if (!occ.test(b)) continue;
            int32_t first, end;
            occ.residues(b, first, end);
            for (int32_t j = first + cu.s; j < end; ++j, ++cu.s)
                if (j != v && outside(j)) {
                    w_out = cu.w;
                    return j;
                }
        }
    }
    return -1;
}

// Edge keys over dense ranks for 64-bit minima: residues by id (their index), lakes by id,
// the grounded lake, the border. Rank order is id order (section 3.2's ids: residue ids
// below lake keys below the grounded lake's below the border's), so (w, lower, higher) over
// ranks orders edges exactly as over ids. The lower end of an edge is always a residue.
struct RankKeys {
    uint32_t lo_bits = 0, hi_bits = 0;  // the fields' widths; w takes the bits above
    static constexpr uint64_t kNone = ~uint64_t{0};

    // Widths for n residues, L lakes and weights up to w_max; false when they pass 63 bits.
    TESSERA_HOSTDEV static bool fit(int64_t n, int64_t L, int64_t w_max, RankKeys& out) {
        auto width = [](int64_t v) {  // bits to hold 0..v
            uint32_t b = 1;
            while (b < 63 && (v >> b) != 0) ++b;
            return b;
        };
        out.lo_bits = width(n > 0 ? n - 1 : 0), out.hi_bits = width(n + L + 1);
        return out.lo_bits + out.hi_bits + width(w_max) <= 63;
    }
    TESSERA_HOSTDEV uint64_t pack(int64_t w, int64_t lo, int64_t hi) const {
        return (static_cast<uint64_t>(w) << (lo_bits + hi_bits)) | (static_cast<uint64_t>(lo) << hi_bits) |
               static_cast<uint64_t>(hi);
    }
    TESSERA_HOSTDEV int64_t w(uint64_t k) const { return static_cast<int64_t>(k >> (lo_bits + hi_bits)); }
    TESSERA_HOSTDEV int32_t lo(uint64_t k) const {
        return static_cast<int32_t>((k >> hi_bits) & ((uint64_t{1} << lo_bits) - 1));
    }
    TESSERA_HOSTDEV int32_t hi(uint64_t k) const { return static_cast<int32_t>(k & ((uint64_t{1} << hi_bits) - 1)); }
};

}  // namespace tessera
