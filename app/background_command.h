// `tessera background IN OUT`: fit a 2-D polynomial surface to a (unwrapped) phase and
// subtract it (issue item 2; kernels/background.h has the algorithm). Every rank reads
// its own row band, the fit is one collective reduction, and the result is written by
// every rank collectively (parallel HDF5); a GeoTIFF OUT with more than one rank is
// written to a temporary HDF5 first and copied by rank 0 through GDAL.
//
// Also the support shared by the quicklook subcommands (clahe): input naming for HDF5
// results, georeferencing of tessera result files, agreed errors, the CLI error protocol.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

#include "partition/error_agreement.h"
#include "io/geotiff_writer.h"
#include "io/raster_reader.h"
#include "kernels/background.h"
#include "pipeline/unwrap_region.h"

namespace CLI {
class App;
}

namespace tessera {

struct BackgroundOptions {
    std::string input, output;
    std::string mask;     // background pixels (nonzero = fit); empty = every valid pixel
    std::string dataset;  // HDF5 dataset of IN (default unwrapped_phase for IN *.h5)
    int band = 1;
    int degree = 2;
    Backend backend = Backend::kCpu;  // the CLI resolves --backend auto (parse_backend)
    bool quiet = false;
    bool overwrite = false;  // replace existing regular output files (--overwrite)
};

struct BackgroundReport {
    int64_t rows = 0, cols = 0, valid = 0;
    SurfaceFit fit;
    double residual_rms = 0;  // over the pixels the fit used
    double seconds = 0;       // total; and per stage (slowest rank):
    double read_seconds = 0, fit_seconds = 0, subtract_seconds = 0, write_seconds = 0;
    std::string output_dataset;  // for HDF5 OUT
    std::string backend;         // "cpu" or "cuda"
};

// Collective over comm. Throws InputError (agreed, one line) for bad input or an
// impossible fit; leaves no output file behind on failure.
BackgroundReport run_background(const BackgroundOptions& opt, MPI_Comm comm);

// Registers `background` on app; once it is parsed, `run` runs the command (it throws on failure:
// app/error_report.h reports). Returns the subcommand.
CLI::App* add_background_command(CLI::App& app, std::function<void()>& run);

// --- shared by the subcommands ---------------------------------------------------

// The GDAL name of IN: "x.h5" (or .hdf5, .he5) -> HDF5:"x.h5"://DATASET (DATASET default
// `unwrapped_phase`); anything else unchanged. A dataset for a non-HDF5 IN is an error.
std::string resolve_raster_input(const std::string& in, const std::string& dataset);

// Georeferencing of IN: GDAL's, or for an HDF5 result of tessera its root attributes
// (geotransform, has_geotransform, projection).
GeoRef input_georef(const std::string& in, const RasterInfo& info);



// True when path ends with one of the suffixes (case-insensitive).
bool has_suffix(const std::string& path, std::initializer_list<const char*> suffixes);

}  // namespace tessera
