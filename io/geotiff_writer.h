// Whole-image GeoTIFF output (optional result copy, synthetic scenes).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace tessera {

struct GeoRef {
    bool has_geotransform = false;
    std::array<double, 6> geotransform{0, 1, 0, 0, 0, 1};
    std::string projection_wkt;
    bool compress = true;  // DEFLATE; off for inputs that are read back often (benchmarks)
};

// Writes a single-band tiled, DEFLATE-compressed GeoTIFF (BIGTIFF=IF_SAFER) to a unique
// temporary (io/output_set.h) and renames it to path when complete, or leaves it to the
// active OutputSet (CollectOutputs) to be renamed with the run's other outputs. Throws InputError naming
// the path when the directory is missing or not writable.
void write_geotiff_f32(const std::string& path, int64_t rows, int64_t cols, const float* data,
                       const GeoRef& geo, std::optional<double> nodata);
void write_geotiff_u32(const std::string& path, int64_t rows, int64_t cols, const uint32_t* data,
                       const GeoRef& geo, std::optional<double> nodata);

}  // namespace tessera

namespace tessera {

// Copies dataset `name` of a committed HDF5 result into a tiled, compressed GeoTIFF
// through GDAL (streamed; never the whole image in memory), to a unique temporary, then
// renamed (as write_geotiff_f32). Throws InputError naming `path` on failure.
void geotiff_from_hdf5(const std::string& h5_path, const std::string& name, const std::string& path,
                       const GeoRef& geo, std::optional<double> nodata);

}  // namespace tessera
