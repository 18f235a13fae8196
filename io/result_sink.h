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

// Every dataset of the result into `out` (io/unwrap_result_writer.h), committed by finish();
// `out` must outlive it.
std::unique_ptr<ResultSink> hdf5_result_sink(Hdf5Writer& out, int compress_phase);
// The same for a run that hands its result over in windows (a chunked run, docs/
// ARCHITECTURE.md section 5.1): write() may be called many times, the same number of times on
// every rank (empty windows allowed), and writes each window at once.
std::unique_ptr<ResultSink> hdf5_windows_sink(Hdf5Writer& out, int compress_phase);
// The unwrapped phase of `out`'s file, once finished, copied by rank 0 into a float32 GeoTIFF
// at `path` (NaN nodata) in strips: for a result that no rank holds whole. finish() must come
// after the HDF5 sink's; write() does nothing. Failures agreed on (InputError::everywhere).
std::unique_ptr<ResultSink> geotiff_from_hdf5_sink(const Hdf5Writer& out, const std::string& path, int64_t H,
                                                   int64_t W, const GeoRef& geo, Comm& comm);

// The unwrapped phase as a float32 GeoTIFF at `path` (NaN nodata), H x W, written by rank 0
// of `comm` from the ranks' windows; failures agreed on (InputError::everywhere).
std::unique_ptr<ResultSink> geotiff_result_sink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                                                Comm& comm);

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
