// The CUDA backend's view of a rank's region: the same interface as tessera::cpu::Region
// (kernels/cpu/region.h), with the pixel arrays resident on the current CUDA device from the
// constructor to finish(). Plain C++: no CUDA types here, so pipeline/unwrap_region.cpp (g++)
// includes it; the device state lives behind a pointer to an implementation.
//
// Device memory (ARCHITECTURE.md section 8, at most 24 B per pixel): phase 4 B and flags
// 1 B over buf, union-find words 8 B over own, labels 1-4 B (ComponentAssignment::label_bytes;
// kernels/label_width.h) and cycles 4 B (only when a.cycles is set) over own from apply() to
// finish(); transiently 8 B per component while union_find() gathers the component records,
// the tile-root list (8 B per listed tile component, at most own/128 + 4096 of them) from
// union_find() to apply(), 8 B per row from apply() to finish(), and a fixed 16 MiB staging
// buffer in apply().
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/cycle_correction.h"
#include "kernels/region.h"
#include "kernels/residue.h"
#include "kernels/types.h"
#include "partition/tile_grid.h"

namespace tessera::cuda {

// Number of visible CUDA devices; 0 (not an error) without a GPU or a driver.
int device_count();

// Makes device `local_rank % device_count()` current for the calling process, for one GPU
// per rank on a multi-GPU host (the Region uses the current device). Returns the device
// chosen, or -1 when there is none. Throws std::runtime_error if cudaSetDevice fails.
int select_device(int local_rank);
// Bytes free on the current device (the default --gpu-memory-limit).
int64_t device_free_bytes();

class Region {
public:
    // `own` is a union of whole tiles of `grid`; `a` covers it plus the halo. Uploads the
    // phase and flags of a.buf. Throws std::runtime_error on any CUDA failure.
    // The host arrays of `a` (large ones: 4 MiB or more) are page-locked with cudaHostRegister
    // for the Region's lifetime, so that the upload and finish()'s download run at full DMA
    // speed; they must outlive the Region (they must anyway: finish() writes into them). The
    // labels are registered on a thread of their own while the phase goes up.
    // Where registering fails (or TESSERA_CUDA_PIN=0 is set) they are copied as pageable memory.
    Region(const RegionArrays& a, const Window& own, const TileGrid& grid);
    // The same, with the host arrays filled by `fill` (kernels/region.h) after the device
    // arrays exist: rows it reports go up while the rest is read (a GDAL read, say), the
    // page-locking runs beside it on another thread, and whatever it did not report goes up
    // when it returns. An exception from fill leaves nothing behind and propagates.
    Region(const RegionArrays& a, const Window& own, const TileGrid& grid, const RegionFill& fill);

    // The phase (and flags) already on the device, e.g. a frame's demodulated phase: device
    // arrays laid out like a's over a.buf, copied on the device in the order of `stream`
    // (cudaStream_t; the Region then works on it and does not own it; null: its own stream).
    // a.phase, a.flags, a.label (and a.cycles) still receive finish()'s results.
    struct DeviceInput {
        const float* phase = nullptr;
        const uint8_t* flags = nullptr;  // null: every pixel reliable (flags 0)
        void* stream = nullptr;
        // The phase is the caller's scratch: the Region works in it (no copy; u lands there, and
        // it must outlive the Region). The flags are copied all the same (cut bits need padding).
        bool in_place = false;
    };
    Region(const RegionArrays& a, const Window& own, const TileGrid& grid, const DeviceInput& in);
    ~Region();
    // The stages run on the device, the host's cores free meanwhile (backend.h host_free_in_stages).
    static constexpr bool kHostFreeInStages = true;
    Region(Region&&) noexcept;
    Region& operator=(Region&&) noexcept;
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;

    ResidueList find_residues();            // the own window's plaquettes, sorted by id
    const RegionArrays& host_arrays() const;        // the host arrays as filled (lakes read the flags)
    void place_cuts(std::span<const Cut> cuts);      // blocks unreliable edges, rasterises the cuts
    RegionComponents union_find();                   // one union-find over own; no constraints
    NodeValue node(int64_t r, int64_t c) const;      // after union_find, for a pixel of `own`
    std::vector<PixelState> strip(const Window& w) const;  // after union_find, w inside own, row-major
    // After union_find (and the strips it serves): the state apply needs, downloaded (nodes: own-local
    // row-major words; roots: the tile-root list's entries, empty where it was not listed), with the cut
    // bits in the host flags as the CPU leaves them; the region can apply only once restored.
    UnionFindState take_union_find();
    // Instead of place_cuts and union_find: a state take_union_find gave, uploaded (the host flags
    // uploaded by the constructor hold the cut bits).
    void restore_union_find(UnionFindState state);
    void apply(const ComponentAssignment& assign);   // u, labels, cycles on the device
    // Between apply() and finish(): section 4.1's correction of u and cycles on the device from
    // the halo around own; finish() flags the corrected pixels in the host flags. Returns their count.
    int64_t correct_cycles(const CorrectionHalo& halo, int64_t keep);
    // Between apply() and finish(): u over own (row stride u_stride = a.buf.cols; NaN at unreliable
    // pixels) and labels (row stride own.cols, as wide as the assignment said) in device memory, and the Region's stream (cudaStream_t), for a later
    // device stage (a frame's background fit) before the download.
    struct DeviceResult {
        float* u = nullptr;
        void* label = nullptr;
        int label_bytes = 4;
        int64_t u_stride = 0, label_stride = 0;
        void* stream = nullptr;
    };
    DeviceResult device_result() const;
    // Copies the own window's flags (cut bits, as cpu::Region leaves them in a.flags) and, after
    // apply(), u, labels and cycles into the host arrays. May also be called after any earlier
    // stage (then it copies the flags alone); the region stays usable.
    void finish();
    // After finish(): the host arrays' page-locking, handed to the caller (kernels/region.h
    // HostLocks) instead of undone when the Region goes; the Region must not copy again.
    HostLocks take_host_locks();

    // Host memory that several Regions in turn upload from and download to, page-locked once for
    // all of them (host_staging.h lock_host_range) on the calling thread's device, from any thread.
    static HostLocker host_locker();

    // Section 3.3's rule over one closed set of residues (partition/matching.h: ClusterRule): on
    // the current device (kernels/cuda/cut_rule.h) from kDeviceRuleFrom residues where its memory
    // is free and its keys fit, else the host's form; the cuts are the same either way.
    static constexpr size_t kDeviceRuleFrom = 32768;
    static void cut_clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                             std::vector<Cut>& out, ClusterStats& stats);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::cuda
