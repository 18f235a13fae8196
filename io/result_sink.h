// Where a run's result goes (docs/ARCHITECTURE.md section 7): a result sink takes each rank's
// window of the result, then the root attributes. The HDF5 file (every dataset, collective),
// a GeoTIFF of the unwrapped phase (rank 0 writes it as strips arrive from the ranks), or
// arrays in memory (tests, the library's callers).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/hdf5_writer.h"
#include "io/unwrap_result_writer.h"
#include "partition/comm.h"

namespace tessera {

class ResultSink {
public:
    virtual ~ResultSink() = default;
    // Collective over the sink's ranks: each rank's window, once.
    virtual void write(const UnwrapResultWindow& r) = 0;
    // Collective: the root attributes, and the output completed (renamed into place, or left
    // to the OutputSet that collects the run's outputs, io/output_set.h). A run finishes one
    // sink before it writes the next, so a failure names the first output that could not be
    // written and the outputs already complete stay as they are until the set's commit.
    virtual void finish(const std::vector<Attribute>& root_attributes) = 0;
};

// What a GeoTIFF of the result holds (README "Output"); every one carries `geo`.
enum class GeoTiffBand {
    kPhase,              // float32 u, nodata NaN (--geotiff)
    kComponents,         // uint32 /connected_components as they are, nodata 0 (--conncomp-geotiff)
    kDolphinPhase,       // float32 u, 0 where invalid, nodata 0 (--dolphin: PREFIX.unw.tif)
    kDolphinComponents,  // uint16 label, 65535 (nodata) where u is invalid, 0 for labels past 65534
                         // (--dolphin: PREFIX.unw.conncomp.tif)
};
inline constexpr uint16_t kDolphinComponentsNodata = 65535;

// dolphin's names of the phase and components GeoTIFFs of PREFIX.
inline std::string dolphin_phase_path(const std::string& prefix) { return prefix + ".unw.tif"; }
inline std::string dolphin_components_path(const std::string& prefix) { return prefix + ".unw.conncomp.tif"; }

// Every dataset of the result into `out` (io/unwrap_result_writer.h), committed by finish();
// `out` must outlive it.
std::unique_ptr<ResultSink> hdf5_result_sink(Hdf5Writer& out, int compress_phase);
// The same for a run that hands its result over in windows (a chunked run, docs/
// ARCHITECTURE.md section 5.1): write() may be called many times, the same number of times on
// every rank (empty windows allowed), and writes each window at once.
std::unique_ptr<ResultSink> hdf5_windows_sink(Hdf5Writer& out, int compress_phase);
// `band` of `out`'s file, once finished, copied by rank 0 into a GeoTIFF at `path` in strips:
// for a result that no rank holds whole. finish() must come after the HDF5 sink's; write() does
// nothing. Failures agreed on (InputError::everywhere).
std::unique_ptr<ResultSink> geotiff_from_hdf5_sink(const Hdf5Writer& out, const std::string& path, int64_t H,
                                                   int64_t W, const GeoRef& geo, Comm& comm,
                                                   GeoTiffBand band = GeoTiffBand::kPhase);

// `band` of the result as a GeoTIFF at `path`, H x W, written by rank 0 of `comm` from the
// ranks' windows; failures agreed on (InputError::everywhere).
std::unique_ptr<ResultSink> geotiff_result_sink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                                                Comm& comm, GeoTiffBand band = GeoTiffBand::kPhase);

// The ranks' windows `own` (row stride `stride`) of an H x W float image as one GeoTIFF at
// `path` (NaN nodata), written by rank 0 as strips arrive (partition/strip_gather.h).
// Collective; failures agreed on (InputError::everywhere).
void write_geotiff_from_ranks(Comm& comm, const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                              const Window& own, const float* data, int64_t stride);

// Arrays the caller owns, H x W row-major: u, labels (4 bytes) and, when not empty, k.
struct MemoryResult {
    int64_t H = 0, W = 0;
    std::span<float> u;
    std::span<uint32_t> label;
    std::span<int32_t> cycles;
    std::vector<Attribute> attributes;  // filled by finish()
};
std::unique_ptr<ResultSink> memory_result_sink(MemoryResult& out);

}  // namespace tessera
