// The root attributes of a result file (ARCHITECTURE.md section 7): one list, whether a whole
// run (pipeline/unwrap_pipeline.cpp) or a frame unwrapped on a lane (app/batch.cpp) writes it.
#pragma once
#include <string>
#include <vector>

#include "io/hdf5_writer.h"
#include "io/raster_reader.h"
#include "pipeline/unwrap_pipeline.h"

namespace tessera {

// A region's global counts into the report (ranks, rank grid and bytes are the caller's).
void add_region_stats(UnwrapReport& rep, const RegionStats& st);

// Options, counts and georeferencing of the result; `input` names what was unwrapped.
std::vector<Attribute> result_attributes(const UnwrapOptions& opt, const std::string& input, const UnwrapReport& rep,
                                         const RasterInfo& info);

}  // namespace tessera
