// `tessera clahe IN OUT.png|.tif`: contrast-limited adaptive histogram equalisation of
// an amplitude/intensity or an unwrapped phase for quicklooks (issue item 3;
// kernels/clahe.h defines the algorithm). Every rank reads and equalises its own row
// band (the histograms are one allreduce, so the picture does not depend on the rank
// count); rank 0 writes the file: a GeoTIFF band by band as the other ranks send their
// rows (never the whole image on one rank), a PNG from an in-memory copy (PNG is
// written in one piece; 1 or 2 bytes per pixel on rank 0).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>

#include "kernels/clahe.h"
#include "pipeline/unwrap_region.h"

namespace CLI {
class App;
}

namespace tessera {

struct ClaheOptions {
    std::string input, output;  // OUT: .png or .tif/.tiff
    std::string dataset;        // HDF5 dataset of IN (default unwrapped_phase for IN *.h5)
    int band = 1;
    ClaheParams params;         // nbins <= 0: 256 for 8-bit, 4096 for 16-bit
    Backend backend = Backend::kCpu;  // the CLI resolves --backend auto (parse_backend)
    bool quiet = false;
    bool overwrite = false;  // replace existing regular output files (--overwrite)
};

struct ClaheReport {
    int64_t rows = 0, cols = 0, valid = 0;
    ClaheRange range;
    ClaheParams params;  // as used
    double seconds = 0;  // total; and per stage (slowest rank):
    double read_seconds = 0, clahe_seconds = 0, write_seconds = 0;
    std::string backend;  // "cpu" or "cuda"
};

// Collective over comm. Throws InputError (agreed, one line) for bad input or
// parameters; leaves no output file behind on failure.
ClaheReport run_clahe(const ClaheOptions& opt, MPI_Comm comm);

// Registers `clahe` on app; once it is parsed, `run` runs the command (it throws on failure:
// app/error_report.h reports). Returns the subcommand.
CLI::App* add_clahe_command(CLI::App& app, std::function<void()>& run);

}  // namespace tessera
