// Stage kernels of the CUDA backend (ARCHITECTURE.md sections 2-4), host launchers over
// device-resident arrays. kernels/cpu/kernels.h declares the same stages for the host;
// kernels/cuda/region.h strings them together behind the same interface as cpu::Region.
//
// This header is compiled both by g++ (C++20, region.cpp) and by nvcc (C++17, the .cu
// files: the project's CMake sets no CUDA standard), so it only includes C++17 headers:
// kernels/residue.h and kernels/region.h (C++20) stay out of the .cu files.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/types.h"

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__
#else
#define TESSERA_HD
#endif

namespace tessera::cuda {

// Throws std::runtime_error("CUDA error in <what>: <cudaGetErrorString>") unless e == cudaSuccess.
inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // clear a sticky-free error so later calls are not blamed
        throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
    }
}

// Device flag bit used only between mark_roots and apply_offsets (never seen on the host).
inline constexpr uint8_t kRootMark = 1u << 7;

// The region's pixel arrays on the device, laid out exactly like RegionArrays (row-major
// over buf = own + halo). flags is padded to a multiple of 4 bytes so that cut bits can be
// set with a 32-bit atomicOr on the word holding the byte.
struct DeviceArrays {
    int64_t H = 0, W = 0;
    Window buf;
    float* phase = nullptr;
    uint8_t* flags = nullptr;
    TESSERA_HD int64_t index(int64_t r, int64_t c) const { return (r - buf.row0) * buf.cols + (c - buf.col0); }
};

// A plaquette of non-zero charge: index (row-major over the plaquettes of the own window,
// see find_residues) and q.
struct PlaquetteCharge {
    uint32_t index = 0;
    int32_t q = 0;
};

// A cut as the device walks it (the C++17 image of tessera::Cut): for a pair (ra, ca) is the
// lower-id residue's plaquette, where the canonical path starts; side is a GroundSide.
struct DeviceCut {
    int32_t ra = 0, ca = 0, rb = 0, cb = 0;
    int32_t side = -1;
};

// apply's per-record input: the own-local index of the record's root, its offset and label.
struct DeviceRootRecord {
    uint32_t local = 0;
    int32_t offset = 0;
    uint32_t label = 0;
    uint32_t pad = 0;
};

// Charges of the plaquettes whose top-left pixel lies in `own` (rows < H-1, cols < W-1),
// appended in raster order (so ids ascend). The plaquette index is
// (r - own.row0) * pc + (c - own.col0) with pc = min(own.col0 + own.cols, W - 1) - own.col0.
// `scratch` holds at least own.size() 64-bit words (the union-find nodes are reused).
// compact_charges: those charges as PlaquetteCharge words in `scratch`, in s's order; returns
// their number (region_records.h download_charges brings them to the host).
int64_t compact_charges(const DeviceArrays& a, const Window& own, uint64_t* scratch, cudaStream_t s);

// Blocks the edges owned by `own` that touch an unreliable pixel (kInvalid or kLowCoherence:
// not integrated through) and the non-existent edges past
// the image's last row and column; clears the other cut bits first (as the CPU).
// flags_clear: the caller knows every flag of own is 0 (then only the border edges are touched).
void block_invalid_edges(const DeviceArrays& a, const Window& own, bool flags_clear, cudaStream_t s);

// Sets the cut bits of the edges owned by `own` that the cuts' dual paths cross
// (d_cuts: n cuts in device memory).
void rasterise_cuts(const DeviceArrays& a, const Window& own, const DeviceCut* d_cuts, int64_t n, cudaStream_t s);

// The union-find's tile roots (each tile's components' smallest pixels) that have reliable
// pixels: entries uf::pack(own-local tile root, its tile's reliable pixels under it), in device
// memory from the stream-ordered pool (`mem`, the caller's to free on the stream: TileRootList,
// device_buffer.h). n == 0: not listed.
struct TileRoots {
    void* mem = nullptr;
    const uint64_t* entries = nullptr;
    int64_t n = 0;
};

// Weighted union-find over all unblocked edges inside `own` (ARCHITECTURE.md section 4; one
// region-wide pass, not per tile). A pixel's root is its component's smallest own-local index.
// nodes (own.size() words, row-major over own) end in two levels where the tile roots were
// listed (tile_roots.n > 0): every reliable pixel -> a listed tile root (or its root), k
// relative to it; every listed tile root -> its root, k relative to it (the tile roots that are
// roots themselves are listed too). Else they end flat (every pixel -> its root). Either way a
// root's (otherwise always 0) potential half holds its component's reliable-pixel count
// (neither kInvalid nor kLowCoherence): a root is recognised by parent == self and has k = 0.
// `records`: the components with at least one reliable pixel, as uf::pack(own-local root,
// count), ascending by root. Returns the number of unblocked edges whose wrap count disagrees
// with the potentials (conflicts, must be 0).
int64_t union_find_components(const DeviceArrays& a, const Window& own, uint64_t* nodes,
                              std::vector<uint64_t>& records, TileRoots& tile_roots, cudaStream_t s);

// out (w.size() words, row-major over w, a window of own-local coordinates) = uf::pack(root,
// k relative to it) of w's pixels after union_find_components (k = 0 at a root).
void resolve_words(const uint64_t* nodes, const Window& own, const Window& w, uint64_t* out, cudaStream_t s);

// resolve_words, and beside each word the pixel's flags and phase from the arrays at `flags` and
// `phase` (w's first pixel, rows buf_cols apart): a strip's whole state in one kernel, so that a
// column strip comes down in three plain copies rather than row by row.
void resolve_strip(const uint64_t* nodes, const Window& own, const Window& w, const uint8_t* flags, const float* phase,
                   int64_t buf_cols, uint64_t* out_words, uint8_t* out_flags, float* out_phase, cudaStream_t s);

// Writes (label, offset) into the root words of d_recs' roots and marks them (kRootMark).
void mark_roots(const DeviceArrays& a, const Window& own, uint64_t* nodes, const DeviceRootRecord* d_recs, int64_t n,
                cudaStream_t s);

// After mark_roots for every record: writes (label, offset + k(tile root)) into each listed
// tile root's word and marks it, so that apply finds every pixel's values one hop away.
void mark_tile_roots(const DeviceArrays& a, const Window& own, uint64_t* nodes, const TileRoots& tile_roots,
                     cudaStream_t s);

// Final pixel pass over `own` (after mark_roots and mark_tile_roots): u = phi + 2 pi k into
// phase (NaN, label 0, k 0 at unreliable pixels), label and cycles (own-sized, row-major over own; cycles may
// be null); clears the root marks. Labels are label_bytes (1, 2 or 4) wide: the caller picks a width that
// holds the largest label (kernels/label_width.h).
// Rows [y0, y1) of own only (own-relative); the bands may run in any order or separately.
void apply_offsets(const DeviceArrays& a, const Window& own, int64_t y0, int64_t y1, const uint64_t* nodes,
                   void* label, int label_bytes, int32_t* cycles, cudaStream_t s);

// out[y - y0] for own rows [y0, y1) of `label` (own-sized, row-major, label_bytes wide):
// (1 << 32) | the row's label where all of its labels are the same, else 0. A row of one label
// crosses the bus as that word (most rows of a coherent scene: one component, no holes).
void uniform_label_rows(const void* label, int label_bytes, const Window& own, int64_t y0, int64_t y1, uint64_t* out,
                        cudaStream_t s);

}  // namespace tessera::cuda
