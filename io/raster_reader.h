// Windowed GDAL reads of the inputs (ARCHITECTURE.md section 7).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "kernels/types.h"

namespace tessera {

// Rows [r0, r0 + n) of a window are done (RasterReader::read_phase).
using RowsDone = std::function<void(int64_t r0, int64_t n)>;
// A row piece of a window as it lands, while it is in cache: window-relative row r, columns
// [c, c + n); `thread` is the reading thread's OpenMP number, below omp_get_max_threads() of the
// caller. Called on the reading threads, each pixel once, in no set order.
using RowPiecesRead = std::function<void(int thread, int64_t r, int64_t c, int64_t n)>;
// The same with the piece's values (v[0, n), read_float's or read_mask's).
using FloatPiecesRead = std::function<void(int thread, int64_t r, int64_t c, const float* v, int64_t n)>;
using MaskPiecesRead = std::function<void(int thread, int64_t r, int64_t c, const uint8_t* v, int64_t n)>;
// A piece of a window whose values are all in place (window-relative rows and columns): a block of
// a GeoTIFF read in its own type, else a strip's piece; called on the reading thread before the
// piece's rows are reported done, each pixel in one piece.
using PieceLanded = std::function<void(int thread, const Window& piece)>;

struct RasterInfo {
    int64_t rows = 0, cols = 0;
    int band_count = 0;
    bool is_complex = false;               // complex64/128 (or CInt16/32): phase = arg
    std::string data_type;                 // GDAL name, e.g. "Float32"
    std::optional<double> nodata;          // of the selected band
    bool has_geotransform = false;
    std::array<double, 6> geotransform{0, 1, 0, 0, 0, 1};
    std::string projection_wkt;            // empty when none
    std::string driver;                    // GDAL's short name, e.g. "GTiff"
    int block_rows = 1, block_cols = 1;    // GDAL's block of the band
};

// Whether reading through GDAL's `driver` calls the HDF5 library, which is not thread-safe here:
// such a read must not run beside the result's HDF5 writes (docs/ARCHITECTURE.md section 5.1).
bool driver_uses_hdf5(const std::string& driver);

// One opened raster band. Throws InputError (file + problem) for: missing file,
// not a raster GDAL can open, band out of range, unsupported data type.
class RasterReader {
public:
    RasterReader(const std::string& path, int band);  // band is 1-based
    ~RasterReader();
    RasterReader(const RasterReader&) = delete;
    RasterReader& operator=(const RasterReader&) = delete;

    const RasterInfo& info() const { return info_; }
    const std::string& path() const { return path_; }

    // Wrapped phase of a window, row-major with row stride `stride` (>= w.cols).
    // Real bands: the value; complex bands: atan2(im, re) in float32.
    // Invalid (nodata value, NaN/Inf, complex 0+0i): phase[i] = 0 and valid[i] = 0; else valid[i] = 1.
    // done(r0, n), if given, is called (from any thread, rows relative to w) as soon as rows
    // [r0, r0 + n) of the window are final, so that a caller can send them on while the rest
    // is read (the CUDA backend uploads them). each(thread, r, c, n), if given, follows every row
    // piece's phase and valid bytes (a fold over them while they are in cache); landed(thread,
    // piece), if given, every piece's last row piece (more folds, other rasters' pieces read there).
    void read_phase(const Window& w, float* phase, uint8_t* valid, int64_t stride, const RowsDone& done = {},
                    const RowPiecesRead& each = {}, const PieceLanded& landed = {}) const;

    // Any band as float32 (coherence); nodata/NaN -> 0.
    void read_float(const Window& w, float* out, int64_t stride) const;

    // Mask: nonzero = valid -> 1, zero or nodata -> 0.
    void read_mask(const Window& w, uint8_t* out, int64_t stride) const;

    // read_float's and read_mask's values of window w given to fn piece by piece instead of stored
    // (a float32 or byte GeoTIFF: straight from its blocks, no copy).
    void visit_float(const Window& w, const FloatPiecesRead& fn) const;
    void visit_mask(const Window& w, const MaskPiecesRead& fn) const;
    // The same on the calling thread only (fn gets `thread`), from any number of threads at once:
    // another raster's pieces read inside read_phase's `landed`.
    void visit_float_here(const Window& w, int thread, const FloatPiecesRead& fn) const;
    void visit_mask_here(const Window& w, int thread, const MaskPiecesRead& fn) const;

private:
    std::string path_;
    int band_;
    RasterInfo info_;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The band of an auxiliary raster (coherence, mask) to read: `band` when the user named one
// (>= 1; checked when read), else 1 for a raster of one band. A raster of several bands without
// a named one is refused (InputError naming `path` and telling to pick one with `option`):
// reading band 1 of an ISCE2 2-band .cor would silently take its amplitude.
int auxiliary_band(const std::string& path, int band, const std::string& option);

}  // namespace tessera
