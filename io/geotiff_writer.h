// GeoTIFF output: whole images (synthetic scenes), results written as their rows arrive.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

struct GeoRef {
    bool has_geotransform = false;
    std::array<double, 6> geotransform{0, 1, 0, 0, 0, 1};
    std::string projection_wkt;
    bool compress = true;  // DEFLATE; off for inputs that are read back often (benchmarks)
    bool overviews = false;  // internal overviews 2, 4, ... until the longer side is <= 256 (--overviews)
};

// Overview factors of a rows x cols image: 2, 4, ... while the level above is longer than 256.
std::vector<int> overview_factors(int64_t rows, int64_t cols);

// Writes a single-band GeoTIFF, tiled 256 x 256, DEFLATE-compressed with a predictor (floating-point
// for float32, horizontal for integers), BIGTIFF=IF_SAFER, to a unique
// temporary (io/output_set.h) and renames it to path when complete, or leaves it to the
// active OutputSet (CollectOutputs) to be renamed with the run's other outputs. Throws InputError naming
// the path when the directory is missing or not writable.
void write_geotiff_f32(const std::string& path, int64_t rows, int64_t cols, const float* data,
                       const GeoRef& geo, std::optional<double> nodata);
void write_geotiff_u32(const std::string& path, int64_t rows, int64_t cols, const uint32_t* data,
                       const GeoRef& geo, std::optional<double> nodata);

// The same written as rows arrive (a result gathered from the ranks, partition/strip_gather.h):
// strips of full rows top to bottom, then finish(). Destroyed unfinished,
// it removes its temporary. Throws InputError naming the path.
class GeoTiffWriter {
public:
    static constexpr int64_t kStripRows = 256;  // one row of tiles: complete tiles are flushed as they come
    enum class Pixel { kFloat32, kUInt32, kByte, kUInt16 };
    GeoTiffWriter(const std::string& path, int64_t rows, int64_t cols, Pixel pixel, const GeoRef& geo,
                  std::optional<double> nodata);
    ~GeoTiffWriter();
    GeoTiffWriter(const GeoTiffWriter&) = delete;
    GeoTiffWriter& operator=(const GeoTiffWriter&) = delete;
    void write_rows(int64_t r0, int64_t nr, const void* data);
    void finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The WKT of an EPSG code ("" when GDAL does not know it).
std::string epsg_wkt(int code);

}  // namespace tessera
