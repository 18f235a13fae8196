// What a chunked run of a rank's region takes besides the grid and the parameters
// (docs/ARCHITECTURE.md section 5.1): how a chunk is filled, where its result goes, and the
// hooks a driver listens on. Plain data, so that each backend's table (backend/backend.h) can
// point at its own instantiation of pipeline/chunked_stages.h.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/region.h"
#include "kernels/residue.h"
#include "kernels/types.h"

namespace tessera {

class ScratchFile;  // io/scratch_file.h

// Fills a chunk's phase and flags over a.buf (the chunk's own rows plus the one-pixel halo
// below and to the right where the image continues), as unwrap_region's input is filled.
using ChunkFill = std::function<void(const RegionArrays& a)>;
// Takes a chunk's result over `own` (the chunk's rows of the own window): u in a.phase, labels
// in a.label (`label_bytes` wide: RegionStats::label_bytes), k in a.cycles when it was asked
// for, the blocked-edge bits in a.flags. Called the same number of times on every rank (collective
// writes): a rank with fewer chunks than another gets an empty `own` (0 rows) for the rest.
using ChunkSink = std::function<void(const RegionArrays& a, const Window& own, int label_bytes)>;

struct ChunkRun {
    ChunkFill fill;
    ChunkSink sink;
    // After each stage of the last chunk's pass ("residues" follows pass 1: every chunk read once).
    std::function<void(const char*)> stage = [](const char*) {};
    // After each chunk: pass 1..3, chunks done of the pass's total.
    std::function<void(int pass, int64_t done, int64_t total)> chunk_done = [](int, int64_t, int64_t) {};
    // When set, the rank's residues (sorted by id), as unwrap_region gives them.
    std::vector<Residue>* residues_out = nullptr;
    // Fill chunk i + 1 on a thread of its own while chunk i is worked on (and written): two
    // chunks' arrays at once. Off where the fill may not run beside the sink.
    bool read_ahead = true;
    // The same in pass 1, whose work is light beside its fills: there the fill beside the work
    // took longer than both in turn (section 5.1), so off unless asked for (A/B studies).
    bool read_ahead_first_pass = false;
    // Plan::inputs_kept: pass 1 keeps each chunk's phase and flags as filled, and passes 2 and 3
    // take them from there instead of filling again (ahead, whatever read_ahead says).
    bool keep_inputs = false;
    // The sink of chunk i on a thread of its own while chunk i + 1 is worked on (three chunks'
    // arrays at once: PlanRequest::write_behind), the sink's calls one at a time and in order.
    // Only where MPI may be called from any thread (the sink's writes are collective).
    bool write_behind = false;
    // BackendOps::host_free_in_stages (or TESSERA_HOST_FREE_IN_STAGES=1 on the CPU backend, for
    // tests): the host's threads are free while the stages run, so host work goes beside them.
    bool host_free = false;
    // --scratch: pass 2 writes each chunk's phase, flags and union-find here, and pass 3 reads
    // them back instead of filling from the inputs (ahead, whatever read_ahead says).
    ScratchFile* scratch = nullptr;
};

}  // namespace tessera
