// `tessera hologram IN... OUT`: off-axis holograms (real intensity images, any GDAL
// raster) to wrapped phase GeoTIFFs (issue items 1 and 4); kernels/hologram.h has the
// method. Frames are spread over the ranks of the communicator round-robin (rank r takes
// frames r, r+P, ...) and over each rank's frame lanes; plans and arrays are made once per
// lane and frame size, on the rank's backend: FFTW on the CPU, or cuFFT on the rank's GPU.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/raster_reader.h"
#include "kernels/hologram.h"
#include "pipeline/hologram_backend.h"
#include "pipeline/unwrap_region.h"

namespace CLI {
class App;
}

namespace tessera {

// Reads holograms and demodulates them with reused plans (one per frame size) and, when
// given, the field of a reference hologram (recorded without the sample) divided out.
// With a reference and no explicit carrier, the carrier is detected on the reference
// (which has the cleanest peak) and used for every frame, so that the division removes
// the residual carrier tilt too; without a reference each frame's carrier is detected
// on that frame. A frame's result depends on that frame, the parameters, the reference
// and the backend only: a batch gives the bits of one-by-one runs on the same backend (the
// CUDA backend's phase differs from the CPU's in the last bits: kernels/cuda/hologram.h).
class HologramDemodulator {
public:
    // `backend` (chosen once, here) runs every frame: kCuda on CUDA device `device` (-1: the
    // current one). Throws InputError for a reference that cannot be read (see
    // read_hologram), InputError::everywhere for a backend this process cannot run.
    HologramDemodulator(const HologramParams& params, const std::string& reference, int band,
                        Backend backend = Backend::kCpu, int device = -1);

    struct Frame {
        RasterInfo info;
        CarrierPeak carrier;
        double filter_radius = 0;
        std::vector<float> phase;      // rows*cols, [-pi, pi)
        std::vector<float> amplitude;  // rows*cols |field|, only when asked for
    };
    // Throws InputError (file + problem) for an unreadable hologram, a complex raster,
    // a size other than the reference's, or a carrier outside the spectrum.
    void run(const std::string& path, Frame& out, bool want_amplitude);
    // The checks of run() that need only the raster's header: not complex, the
    // reference's size, the carrier inside the spectrum. Throws InputError.
    void check(const std::string& path, const RasterInfo& info) const;

private:
    HologramEngine& engine_for(int64_t rows, int64_t cols);

    HologramParams params_;
    std::string reference_;
    int band_;
    Backend backend_;
    int device_;
    // One engine per frame size; with a reference every frame has its size, so the one
    // engine holding the reference field is never dropped.
    std::map<std::pair<int64_t, int64_t>, std::unique_ptr<HologramEngine>> engines_;
    std::vector<float> intensity_;
    RasterInfo ref_info_;
};

// Whole band `band` of a real raster as float32 intensity (nodata/NaN -> 0). Throws
// InputError naming the file: missing, not a raster, band out of range, complex data.
RasterInfo read_hologram(const std::string& path, int band, std::vector<float>& intensity);

struct HologramRunOptions {
    std::vector<std::string> inputs;  // files and/or glob patterns (expand_inputs)
    // One input: the output GeoTIFF (or an existing directory). Several: a directory
    // (created if missing) receiving <stem>_phase.tif (and <stem>_amplitude.tif).
    std::string output;
    HologramParams params;
    std::string reference;  // reference hologram, empty = none
    int band = 1;
    bool save_field = false;  // also write |field| as <stem>_amplitude.tif
    bool compress = false;    // DEFLATE the GeoTIFFs (a noisy phase deflates ~1.3x, slowly)
    bool quiet = false;
    bool overwrite = false;  // replace existing regular output files (--overwrite)
    // kCuda: every rank demodulates on the GPU of its node-local rank (round-robin over the
    // node's GPUs: several ranks may share one, demodulation needs little GPU memory).
    Backend backend = Backend::kCpu;
    // Frames in flight per rank (frame lanes, pipeline/frame_lanes.h); <= 0: default_lanes(backend).
    // With a reference the frames go one at a time (the lanes keep no reference field).
    int lanes = 0;
};

struct HologramFrameReport {
    std::string input, output;
    int64_t rows = 0, cols = 0;
    CarrierPeak carrier;
    double filter_radius = 0;
    double seconds = 0;  // read + demodulate + write of this frame
};

struct HologramRunReport {
    std::vector<HologramFrameReport> frames;  // every frame, in input order (complete on rank 0)
    double total_seconds = 0;                 // wall, slowest rank
    int ranks = 1;
    int lanes = 1;                            // per rank
};

// Collective over `comm`. Without a reference each rank runs its frames through run_frames
// (demodulate_only, opt.lanes lanes, one call per frame size; the lanes read the frames into
// their buffers and write the GeoTIFFs); with one, frame after frame through
// HologramDemodulator. Either gives the same bits as one-by-one runs. Bad input (missing file, pattern matching nothing, unwritable
// output, size mismatch with the reference, ...) is found before any work where it can
// be and thrown as InputError::everywhere on every rank; a frame that fails later is
// reported on its rank's stderr, the others complete, and then every rank throws
// InputError::everywhere naming the first failed frame.
HologramRunReport run_hologram(const HologramRunOptions& opt, MPI_Comm comm);

// Output paths of run_hologram, in input order: (phase, amplitude). Throws
// InputError::everywhere when two inputs would write the same file.
std::vector<std::pair<std::string, std::string>> hologram_outputs(const std::vector<std::string>& inputs,
                                                                  const std::string& output);

// Registers the `hologram` subcommand on `app`; its options live in this module.
CLI::App* add_hologram_command(CLI::App& app);
// Runs the parsed `hologram` subcommand on MPI_COMM_WORLD and prints the report on rank 0
// (unless -q). Throws InputError for bad input (main.cpp's handlers print it).
void run_hologram_command();

// "circular" | "hann" -> window; throws InputError otherwise.
SidebandWindow parse_window(const std::string& name);

}  // namespace tessera
