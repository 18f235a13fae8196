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
};

// Writes a single-band tiled, DEFLATE-compressed GeoTIFF (BIGTIFF=IF_SAFER) to
// path + ".tmp" and renames it to path when complete. Throws InputError naming
// the path when the directory is missing or not writable.
void write_geotiff_f32(const std::string& path, int64_t rows, int64_t cols, const float* data,
                       const GeoRef& geo, std::optional<double> nodata);
void write_geotiff_u32(const std::string& path, int64_t rows, int64_t cols, const uint32_t* data,
                       const GeoRef& geo, std::optional<double> nodata);

}  // namespace tessera
