// The CF-1.8 grid of a result (docs/ARCHITECTURE.md section 7): the coordinate variables and the
// grid mapping that make the HDF5 result a netCDF-4 file that GDAL's netCDF driver, QGIS,
// xarray and rioxarray place on the map with no options.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/hdf5_writer.h"

namespace tessera {

struct CfAxis {
    std::string name;            // "y"/"x", or "lat"/"lon" for a geographic CRS
    std::vector<double> values;  // pixel centres
    std::vector<Attribute> attributes;
};

struct CfGrid {
    CfAxis y, x;                                // dimensions 0 and 1 of every 2-D dataset
    std::string grid_mapping;                   // "spatial_ref", or "" when there is no CRS
    std::vector<Attribute> grid_mapping_attributes;
};

inline constexpr const char* kCfConventions = "CF-1.8";

// The grid of a rows x cols result georeferenced by `geo`: coordinates from the geotransform
// (pixel centres; without one, or with a rotated one, the pixel centres col + 0.5, row + 0.5),
// and a grid mapping with crs_wkt, spatial_ref (GDAL's and rioxarray's names) and GDAL's
// GeoTransform when `geo` has a projection.
CfGrid cf_grid(const GeoRef& geo, int64_t rows, int64_t cols);

// The georeferencing carried by a result's root attributes (geotransform, has_geotransform,
// projection; pipeline/result_attributes.cpp): the result's grid is the input's.
GeoRef georef_of_attributes(const std::vector<Attribute>& root_attributes);

}  // namespace tessera
