// Weighted union-find with (parent, potential) in one 64-bit word (ARCHITECTURE.md
// sections 4 and 8). Root = smallest index, potential(x) = k(x) - k(parent(x)).
// The same structure serves a tile's pixels and the cross-tile / cross-rank graphs.
#pragma once
#include <cstdint>

namespace tessera::uf {

inline uint64_t pack(uint32_t parent, int32_t pot) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(pot)) << 32) | parent;
}
inline uint32_t parent(uint64_t w) { return static_cast<uint32_t>(w); }
inline int32_t potential(uint64_t w) { return static_cast<int32_t>(static_cast<uint32_t>(w >> 32)); }

// Root of x; k receives k(x) - k(root). Full path compression.
inline uint32_t find(uint64_t* nodes, uint32_t x, int32_t& k) {
    uint32_t r = x;
    int32_t acc = 0;
    for (uint64_t w = nodes[r]; parent(w) != r; w = nodes[r]) {
        acc += potential(w);
        r = parent(w);
    }
    uint32_t y = x;
    int32_t rem = acc;
    while (y != r) {
        uint64_t w = nodes[y];
        if (parent(w) == r) break;
        nodes[y] = pack(r, rem);
        rem -= potential(w);
        y = parent(w);
    }
    k = acc;
    return r;
}

// Adds the constraint k(b) - k(a) = d. Returns false on a conflict (a cycle whose
// potentials disagree), which section 3 says must never happen and must be counted.
inline bool unite(uint64_t* nodes, uint32_t a, uint32_t b, int32_t d) {
    int32_t ka, kb;
    uint32_t ra = find(nodes, a, ka), rb = find(nodes, b, kb);
    if (ra == rb) return kb - ka == d;
    int32_t diff = d + ka - kb;  // k(rb) - k(ra)
    if (ra < rb)
        nodes[rb] = pack(ra, diff);
    else
        nodes[ra] = pack(rb, -diff);
    return true;
}

// After all unions: every node points at its root with its full potential, in one
// pass, because every parent index is smaller than its child's.
inline void flatten(uint64_t* nodes, uint32_t n) {
    for (uint32_t x = 0; x < n; ++x) {
        uint64_t w = nodes[x];
        uint32_t p = parent(w);
        if (p == x) continue;
        uint64_t pw = nodes[p];
        nodes[x] = pack(parent(pw), potential(w) + potential(pw));
    }
}

}  // namespace tessera::uf
