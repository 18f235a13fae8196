// What a backend's region hands back to the driver between stages (ARCHITECTURE.md
// section 4): tile components, constraints between tiles, and the pixel potentials.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kernels/vector_memory.h"

namespace tessera {

// A tile's component: its root (smallest global pixel index) and valid-pixel count.
struct ComponentRecord {
    int64_t root = 0;
    int64_t size = 0;
};

// K(b) - K(a) = delta between the components rooted at global indices a and b.
struct Constraint {
    int64_t a = 0, b = 0;
    int32_t delta = 0;
    friend bool operator==(const Constraint&, const Constraint&) = default;
};

struct RegionComponents {
    std::vector<ComponentRecord> records;  // every tile component of the region, sorted by root
    std::vector<Constraint> constraints;   // from unblocked edges between the region's tiles
    int64_t conflicts = 0;                 // inside tiles; must be 0
};

// A pixel's tile component root (global index) and k relative to it.
struct NodeValue {
    int64_t root = 0;
    int32_t k = 0;
};

// A pixel as the cross-rank stages see it after union_find: its component and k,
// its phase and its flag bits (blocked edges, validity).
struct PixelState {
    int64_t root = 0;
    int32_t k = 0;
    float phase = 0;
    uint8_t flags = 0;
};

// A region's union-find between union_find() and apply(), as its backend hands it out
// (Region::take_union_find) and takes it back (Region::restore_union_find) unchanged: a streamed
// run's scratch (section 5.1, --scratch) keeps it instead of running the union-find again.
// Words in the backend's own layout, only ever given back to a Region of the same backend,
// own window and tile grid, whose host arrays hold the same phase and flags (cut bits included).
struct UnionFindState {
    UntouchedVector<uint64_t> nodes;  // one (parent, potential) word per pixel of own (written whole by its maker)
    std::vector<uint64_t> roots;  // what apply finds the components by (the backend's list)
};

// Fills a region's host arrays while its backend listens: the filler calls rows_ready(r0, n)
// (buffer-relative rows, any order, from any thread) once rows [r0, r0 + n) of a.phase are
// final, and returns when all of a.phase and a.flags are. Rows it never reports are taken as
// final on return. The CUDA backend uploads reported rows while the rest is read.
using RowsReady = std::function<void(int64_t r0, int64_t n)>;
using RegionFill = std::function<void(const RowsReady&)>;

// Host arrays a backend still keeps page-locked after its Region is gone (cuda::Region::
// take_host_locks): unlocked when the last copy goes, which must be before the arrays are freed,
// so that the caller can unlock them beside other work (docs/ARCHITECTURE.md 7). Null: none.
using HostLocks = std::shared_ptr<void>;

// A backend's page-locking of host memory that several Regions upload from and download to
// (Region::host_locker): callable on any thread, for the device of the thread that made it;
// null where the range stays pageable.
using HostLocker = std::function<HostLocks(void* p, size_t bytes)>;

// The offset solve's answer for the region's records (parallel arrays).
struct ComponentAssignment {
    std::span<const ComponentRecord> records;
    std::span<const int32_t> offset;
    std::span<const uint32_t> label;
    int label_bytes = 4;  // width of the labels in RegionArrays::label: 1, 2 or 4 (kernels/label_width.h)
};

}  // namespace tessera
