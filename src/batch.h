// Batches of frames (issue item 4): many inputs (a list and/or glob patterns) spread
// over MPI ranks round-robin, each frame processed by one rank alone; `tessera unwrap`
// with several inputs or --from-hologram runs here.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/hologram.h"
#include "src/unwrap_pipeline.h"

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

// Collective over `comm`. Every rank passes the index of the first item it found bad
// (-1 if none) and that item's message; if any rank found one, every rank throws
// InputError::everywhere with the message of the lowest index (lowest rank on a tie).
void agree_on_first_error(MPI_Comm comm, int64_t bad_index, const std::string& message);

// Rank 0 creates directory `dir` if missing; every rank throws InputError::everywhere
// if it cannot be created, is not a directory or is not writable. Collective.
void prepare_output_directory(MPI_Comm comm, const std::string& dir);

struct UnwrapFrameReport {
    std::string input, output;
    int64_t rows = 0, cols = 0, residues = 0, components = 0, conflicts = 0;
    double hologram_seconds = 0;  // read + demodulate + temporary phase GeoTIFF (--from-hologram)
    double seconds = 0;           // the whole frame
};

// Unwraps every input (already expanded) with `base`'s parameters (its input, output,
// rank_grid and quiet are ignored), each frame by one rank alone through
// run_unwrap(opt, MPI_COMM_SELF), frames round-robin over the ranks of `comm`
// (rank r takes frames r, r+P, ...). Outputs: batch_outputs(inputs, out, ".h5").
// `base.geotiff` is only allowed with one input. With `from_hologram` each input is a
// hologram: demodulated (HologramDemodulator, `hologram` and `hologram_reference`,
// band base.band) into a temporary wrapped-phase GeoTIFF next to its output
// (<output>.wrapped.tmp.tif, removed afterwards), which is then unwrapped.
// A frame's result does not depend on the batch: the same bits as one-by-one runs.
// Rank 0 prints one line per frame and the total frames/s unless base.quiet.
// Errors as run_hologram (hologram_command.h). Returns the union-find conflicts summed
// over all frames (must be 0), on every rank. `reports`, if given, receives every
// frame's report on rank 0 (input order).
int run_unwrap_batch(const std::vector<std::string>& inputs, const UnwrapOptions& base, const std::string& out,
                     bool from_hologram, const HologramParams& hologram,
                     const std::string& hologram_reference = "", MPI_Comm comm = MPI_COMM_WORLD,
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
    HologramParams hologram_params() const;  // throws InputError for a bad --window
};
// Adds the positional FILES (IN... OUT; it replaces the IN and OUT positionals),
// --from-hologram, --carrier, --dc-radius, --filter-radius, --window and
// --hologram-reference to the `unwrap` subcommand.
void add_unwrap_batch_options(CLI::App* unwrap, UnwrapBatchCli& cli);
// True when `tessera unwrap` must run as a batch: several expanded inputs, --from-hologram,
// or OUT an existing directory.
bool unwrap_is_batch(const UnwrapBatchCli& cli, const std::vector<std::string>& expanded, const std::string& out);

}  // namespace tessera
