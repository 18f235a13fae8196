// The georeferencing a tessera result file carries in its root attributes (geotransform,
// has_geotransform, projection), for commands that take a result as input.
#pragma once
#include <string>

#include "io/geotiff_writer.h"

namespace tessera {

// Fills `geo` from the root attributes of the HDF5 file `path`; false when the file or its
// geotransform is absent. HDF5's own messages are silenced.
bool read_result_georef(const std::string& path, GeoRef& geo);

}  // namespace tessera
