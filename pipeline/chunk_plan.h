// How a run is laid out before it starts (docs/ARCHITECTURE.md section 5.1, issue 16): the
// rank grid, and each rank's chunk height from what its memory allows, with the memory and I/O
// that follow. `tessera plan` prints it; `tessera unwrap` runs it.
#pragma once
#include <cstdint>
#include <string>

#include "partition/rank_grid.h"

namespace tessera {

// Bytes a rank holds per pixel of a chunk's buffer (section 8): host arrays of two chunks
// (phase 4, flags 1, labels 4, k 4 when kept; the next chunk is read ahead) plus, on the CPU
// backend, the Region's own (union-find words, tile scratch: 18 measured); on the CUDA
// backend the device holds at most 24.
struct ChunkBytes {
    int64_t host = 0, device = 0;
};
// With --scratch the host also holds the union-find words (8) of the chunk read ahead in the third
// pass, and on the CUDA backend those of the chunk going up (the CPU Region's own counts those).
// With write_behind a third chunk's arrays: the one being written while the next is worked on.
ChunkBytes chunk_bytes_per_pixel(bool cuda, bool cycles, bool scratch = false, bool write_behind = false);
// Bytes a rank holds per pixel of its buffer window in one piece (section 8): the arrays
// (phase 4, flags 1, labels 4, valid 1, k 4 when kept) and the stages' own, at most 16.
ChunkBytes in_core_bytes_per_pixel(bool cuda, bool cycles);

struct PlanRequest {
    int64_t H = 0, W = 0, tile = 512;
    int ranks = 1;
    std::string rank_grid;       // "PxQ" or empty
    bool cuda = false, cycles = false;
    int64_t host_limit = -1;     // bytes a rank may hold on the host; -1: no limit
    int64_t host_reserved = 0;   // of which already taken (the process as it stands, GDAL's cache)
    int64_t device_limit = -1;   // bytes a rank may hold on its GPU; -1: no limit
    int64_t input_bytes_per_pixel = 4;  // read per pass: phase (8 for complex), + coherence, + mask
    int64_t output_bytes_per_pixel = 8; // written once: u, labels (+ k)
    int64_t chunk_rows = 0;      // > 0: chunks of this many pixel rows (whole tiles, at least one), whatever the limits
    bool scratch = false;        // --scratch: a streamed run's third pass reads a scratch file, not the inputs
    bool keep_inputs = true;     // a streamed run may keep its inputs as read in host memory (section 5.1)
    bool write_behind = false;   // a streamed run writes chunk i while it works on chunk i + 1 (section 5.1)
    int64_t writeback_from = -1; // dirty page-cache bytes past which the kernel writes back (app/memory_budget.h); -1: unknown
};

struct Plan {
    RankGrid grid;
    int64_t tile_rows = 0;       // tile rows per chunk (the same on every rank)
    int64_t chunks = 1;          // chunks of the largest rank window
    int passes = 1;              // passes over the window: 1 in core, 3 in chunks
    int reads = 1;               // reads of the input: 1 in core or with the inputs kept, else 3 (2 with a scratch)
    int64_t host_bytes = 0, device_bytes = 0;  // per rank, for the largest window or chunk
    int64_t read_bytes = 0, write_bytes = 0;   // the whole run (the scratch's included)
    int64_t scratch_bytes = 0;   // --scratch: written by the largest rank (its reads are the same)
    int64_t scratch_total = 0;   // --scratch: written by all ranks
    // A streamed run whose inputs as read (phase and flags, 5 B a pixel of its chunks' buffers) fit
    // the host's limit beside the chunks keeps them from pass 1 for passes 2 and 3 (section 5.1):
    // the input is read once. kept_bytes: the largest rank's (in host_bytes).
    bool inputs_kept = false;
    int64_t kept_bytes = 0;
    // Where the host's share also holds the output phase's pages (4 B a pixel of the own window)
    // beside the kept inputs and the chunks, they are made ready in the page cache beside pass 2
    // (section 5.1): pass 3's writes then only copy. Page cache, not the process's own (host_bytes);
    // never more than PlanRequest::writeback_from.
    bool output_ready_early = false;
    bool write_behind = false;   // PlanRequest::write_behind, for a streamed run (in host_bytes)
    // The window in one piece when it fits both limits; otherwise chunks (even one: a chunked
    // run holds fewer bytes a pixel than a run in one piece).
    bool streamed = false;
    bool in_core() const { return !streamed; }
};

// The share of a memory limit that chunk arrays may take; the rest holds the rank's residues,
// cuts and tile component records, which scale with residues and components, not pixels.
inline constexpr double kChunkShare = 0.75;
// A cuda::Region's window stays below 2^32 pixels (its 32-bit pixel indices).
inline constexpr int64_t kDeviceWindowPixels = (int64_t{1} << 32) - 1;
// A streamed run takes at least this many chunks on its largest rank (fewer where it has fewer
// tile rows): a pass overlaps reading, working and writing only across its chunks.
inline constexpr int64_t kMinStreamedChunks = 4;

// A streamed run's scratch (--scratch, section 5.1), per chunk: phase and flags over its buffer
// (own rows plus the halo), a union-find word over its own pixels; plus a root list whose length
// the union-find decides (at most a word per component: not in this count).
inline constexpr int64_t kScratchBufferBytes = 4 + 1, kScratchOwnBytes = 8;
// The bytes `rank` writes to its scratch in chunks of `tile_rows` tile rows, root lists aside.
int64_t scratch_bytes(const RankGrid& grid, int rank, int64_t tile_rows);
// The bytes `rank` keeps of its inputs as read (Plan::inputs_kept): phase and flags over its chunks' buffers.
int64_t kept_input_bytes(const RankGrid& grid, int rank, int64_t tile_rows);

// Throws InputError(input, ...) when one row of tiles does not fit a limit.
Plan make_plan(const PlanRequest& req, const std::string& input);

// "4G", "512M", "1.5T", "1000000" (bytes; K/M/G/T are powers of 1024); -1 for "" or "auto"
// is the caller's; throws InputError naming `option` otherwise.
int64_t parse_bytes(const std::string& text, const std::string& option);
std::string format_bytes(int64_t bytes);

}  // namespace tessera
