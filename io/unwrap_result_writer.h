// The datasets of an unwrap result (docs/ARCHITECTURE.md section 7), written by one function
// for a whole run (pipeline/unwrap_pipeline.cpp) and for a frame unwrapped on a lane
// (app/batch.cpp): names, types, filters, fill values and descriptions in one place.
#pragma once
#include <cstdint>
#include <vector>

#include "io/hdf5_writer.h"
#include "kernels/types.h"

namespace tessera {

// One rank's window of the result, row stride `stride` elements for u, label and cycles.
struct UnwrapResultWindow {
    Window own;
    int64_t stride = 0;
    const float* u = nullptr;         // NaN where invalid
    const void* label = nullptr;      // `label_bytes` wide (1, 2 or 4)
    int label_bytes = 4;
    const int32_t* cycles = nullptr;  // null: no /cycles
    const int8_t* residues = nullptr; // own.cols stride; null: no /residues
    const uint8_t* cuts = nullptr;    // own.cols stride; null: no /branch_cuts
};

// Collective over the writer's ranks: every rank passes its window (the same datasets on every
// rank), without the root attributes. Called again with another window (a chunked run's next
// rows, docs/ARCHITECTURE.md section 5.1), it writes into the datasets the first call made.
void write_unwrap_datasets(Hdf5Writer& out, const UnwrapResultWindow& r, int compress_phase);

// Collective: the netCDF-4/CF structure of the datasets written (coordinates as dimension scales,
// grid mapping, io/cf_grid.h) from the georeferencing the root attributes carry, then the root
// attributes and Conventions. Once, after the last write_unwrap_datasets.
void finish_unwrap_result(Hdf5Writer& out, const std::vector<Attribute>& root_attributes);

// Before write_unwrap_result, while the host waits (a device's stages): /unwrapped_phase created
// and its pages made ready on `threads` threads (0: all) where one rank writes it whole through a
// mapping (Hdf5Writer::prepare_f32).
void prepare_unwrap_result(Hdf5Writer& out, int compress_phase, int threads = 0);

// Collective over the writer's ranks: every rank passes its window (the same datasets on every
// rank), then the root attributes (finish_unwrap_result). /unwrapped_phase deflated at `compress_phase` (0: none).
void write_unwrap_result(Hdf5Writer& out, const UnwrapResultWindow& r, int compress_phase,
                         const std::vector<Attribute>& root_attributes);

}  // namespace tessera
