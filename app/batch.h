// Batches of frames (issue item 4): many inputs (a list and/or glob patterns) spread
// over MPI ranks round-robin, each frame processed by one rank alone (holograms: over the
// rank's frame lanes too); `tessera unwrap` with several inputs or --from-hologram runs here.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "io/raster_reader.h"
#include "partition/error_agreement.h"
#include "kernels/hologram.h"
#include "pipeline/frame_lanes.h"
#include "pipeline/unwrap_pipeline.h"

namespace CLI {
class App;
}

namespace tessera {

// Items containing * ? or [ that do not name an existing file are glob(3) patterns,
// expanded in sorted order; other items are kept as given (checked when opened). Order
// of first appearance is kept; repeats (same lexically normal path) are dropped.
// Throws InputError::everywhere for a pattern that matches nothing, or for no items.
std::vector<std::string> expand_inputs(const std::vector<std::string>& items);

// Output file per input, in order: `out` itself when there is one input and `out` is
// not an existing directory; otherwise <out>/<stem><suffix> (<stem>: the input's file
// name without its extension). Throws InputError::everywhere when two inputs share a stem.
std::vector<std::string> batch_outputs(const std::vector<std::string>& inputs, const std::string& out,
                                       const std::string& suffix);


// Rank 0 creates directory `dir` if missing; every rank throws InputError::everywhere
// if it cannot be created, is not a directory or is not writable. Collective.
void prepare_output_directory(Comm& comm, const std::string& dir);

// One rank's frames of a batch that left no output. add() prints the frame's line on stderr
// when `print` (batches of several); agree() ends the batch on every rank (collective).
struct FrameFailures {
    int64_t first = -1, count = 0;  // lowest failed frame index, number failed
    std::string first_message;
    void add(int64_t index, const std::string& message, bool print);
    // If any rank has failures, every rank throws InputError::everywhere with the lowest frame's
    // line (several: "K of N frames failed; the first: LINE").
    void agree(Comm& comm, int64_t n) const;
};

// The frames rank, rank+P, ... of a batch, grouped by size (rows, cols) from their headers.
std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> frames_by_size(const std::vector<RasterInfo>& info,
                                                                           int rank, int P);

// Frames `idx` (indices into `inputs`, all rows x cols) through run_frames with `opt`: the lanes
// read band `band` of each input (float32, nodata/NaN -> 0, as read_hologram) straight into
// their buffers; `write(i, frame, seconds)` stores frame i's result (called as opt.sink_on_caller
// says; seconds since its read began) and throws InputError to fail it (leaving no output).
// Every frame of `idx` without an output is added to `failures`: unreadable, refused by the
// chain (demodulation's std::invalid_argument), failed to write, or not processed after an
// earlier failure on its lane. Other exceptions propagate.
using FrameWriter = std::function<void(int64_t index, const FrameView& frame, double seconds)>;
void run_input_frames(const std::vector<std::string>& inputs, const std::vector<int64_t>& idx, int64_t rows,
                      int64_t cols, int band, const FrameOptions& opt, const FrameWriter& write,
                      FrameFailures& failures, bool print);

// Frames in flight per rank when --lanes is not given: 4 on the CUDA backend (streams keep
// the GPU busy while a lane's host side works), 1 on the CPU (the stages' OpenMP threads
// already use the cores).
int default_lanes(Backend backend);


// --from-hologram and the frame lanes of `tessera unwrap` batches.
struct FrameBatchOptions {
    bool from_hologram = false;  // the inputs are off-axis holograms
    HologramParams hologram;
    std::string hologram_reference;  // empty = none
    int lanes = 0;                   // frames in flight per rank; <= 0: default_lanes(backend)
};

// Why a --from-hologram batch cannot run on frame lanes (the option that needs the
// one-frame-at-a-time path), or "" when it can. Lanes give the unwrapped phase and the
// components only: --hologram-reference, --coherence, --mask, --geotiff, --quicklook and
// --save-cycles/-residues/-cuts take the per-frame path.
std::string lanes_unsupported(const UnwrapOptions& base, const FrameBatchOptions& frames);

struct UnwrapFrameReport {
    std::string input, output;
    int64_t rows = 0, cols = 0, residues = 0, components = 0, conflicts = 0;
    double hologram_seconds = 0;  // read + demodulate + temporary phase GeoTIFF (per-frame path)
    double seconds = 0;           // the whole frame (lanes: from its read to its file's commit)
};

// Unwraps every input (already expanded) with `base`'s parameters (its input, output,
// rank_grid and quiet are ignored), frames round-robin over the ranks of `comm` (rank r takes
// frames r, r+P, ...). Outputs: batch_outputs(inputs, out, ".h5"). `base.geotiff` is only
// allowed with one input.
// With frames.from_hologram each input is a hologram (band base.band), and unless
// lanes_unsupported(): each rank runs its frames through run_frames (pipeline/frame_lanes.h) on
// frames.lanes lanes (the backend's plans and buffers reused; one run_frames call per frame
// size), no background removal; the sink writes /unwrapped_phase and /connected_components
// and the root attributes as run_unwrap does (attributes input and band name the hologram;
// no per-stage times) from this thread, one file at a time (HDF5 is not thread-safe and
// writes through MPI-IO). On the CUDA backend the rank's GPU is its node-local rank's
// (--device: that one), ranks sharing GPUs round-robin.
// Otherwise (per-frame path) each frame is run by one rank alone through
// run_unwrap(opt, MPI_COMM_SELF); a hologram is first demodulated (HologramDemodulator,
// frames.hologram and frames.hologram_reference) into a temporary wrapped-phase GeoTIFF next
// to its output (a unique <output>.wrapped.tif.tmp.XXXXXX, removed afterwards).
// A frame's result does not depend on the batch, the lanes or the ranks: the same bits as
// one-by-one runs. Rank 0 prints one line per frame and the total frames/s unless base.quiet.
// Errors as run_hologram (hologram_command.h): a frame that fails when processed leaves no
// output, the others complete, then every rank throws InputError::everywhere naming the
// first. Returns the union-find conflicts summed over all frames (must be 0), on every rank.
// `reports`, if given, receives every frame's report on rank 0 (input order).
int run_unwrap_batch(const std::vector<std::string>& inputs, const UnwrapOptions& base, const std::string& out,
                     const FrameBatchOptions& frames, MPI_Comm comm = MPI_COMM_WORLD,
                     std::vector<UnwrapFrameReport>* reports = nullptr);

// The command-line side of batches for `tessera unwrap`: the positionals become one
// IN... OUT list (CLI11 would give a leading vector positional every argument), plus
// --from-hologram and the hologram options.
struct UnwrapBatchCli {
    std::vector<std::string> files;  // IN... OUT
    std::vector<std::string> input_items() const { return {files.begin(), files.end() - (files.empty() ? 0 : 1)}; }
    std::string output() const { return files.empty() ? std::string() : files.back(); }
    bool from_hologram = false;
    std::vector<int64_t> carrier;  // ROW COL
    double dc_radius = 0, filter_radius = 0;
    std::string window = "circular";
    std::string hologram_reference;
    int lanes = 0;  // --lanes; 0: default_lanes(backend)
    // --from-hologram and the demodulation options; throws InputError for a bad --window.
    FrameBatchOptions frame_options() const;
};
// Adds the positional FILES (IN... OUT; it replaces the IN and OUT positionals),
// --from-hologram, --carrier, --dc-radius, --filter-radius, --window,
// --hologram-reference and --lanes to the `unwrap` subcommand.
void add_unwrap_batch_options(CLI::App* unwrap, UnwrapBatchCli& cli);
// True when `tessera unwrap` must run as a batch: several expanded inputs, --from-hologram,
// or OUT an existing directory.
bool unwrap_is_batch(const UnwrapBatchCli& cli, const std::vector<std::string>& expanded, const std::string& out);

}  // namespace tessera
