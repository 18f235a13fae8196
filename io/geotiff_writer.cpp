// Whole-image GeoTIFF output (optional result copy, synthetic scenes).
#include "io/geotiff_writer.h"

#include <gdal_priv.h>
#include <ogr_spatialref.h>
#include <cpl_error.h>
#include <cpl_string.h>

#include <algorithm>
#include <functional>
#include <vector>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <sys/stat.h>
#include <unistd.h>

#include "io/gdal_session.h"
#include "io/input_error.h"
#include "io/output_set.h"

namespace tessera {

namespace {



void check_output_dir(const std::string& path) {
    namespace fs = std::filesystem;
    if (path.empty()) throw InputError(path, "empty output path");
    const fs::path parent = fs::path(path).parent_path();
    const std::string dir = parent.empty() ? std::string(1, '.') : parent.string();
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        throw InputError(path, "output directory " + dir + " does not exist");
    }
    if (!S_ISDIR(st.st_mode)) {
        throw InputError(path, "output directory " + dir + " is not a directory");
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        throw InputError(path, "output directory " + dir + " is not writable");
    }
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        throw InputError(path, S_ISDIR(st.st_mode) ? "output path is a directory"
                                                   : "output exists and is not a regular file");
    }
}

[[noreturn]] void fail(const std::string& path, const std::string& problem, const QuietGdal& quiet) {
    std::string msg = problem;
    if (!quiet.message().empty()) msg += " (" + quiet.message() + ")";
    throw InputError(path, msg);
}

}  // namespace

struct GeoTiffWriter::Impl {
    std::string path;
    int64_t rows, cols;
    GDALDataType type;
    bool overviews = false;
    StagedFile staged;
    GDALDatasetUniquePtr ds;
    Impl(const std::string& p, int64_t r, int64_t c, GDALDataType t) : path(p), rows(r), cols(c), type(t), staged(p) {}
};

GeoTiffWriter::GeoTiffWriter(const std::string& path, int64_t rows, int64_t cols, Pixel pixel, const GeoRef& geo,
                             std::optional<double> nodata) {
    if (rows < 1 || cols < 1) {
        throw InputError(path, "cannot write an empty " + std::to_string(rows) + "x" +
                                   std::to_string(cols) + " image");
    }
    if (rows > INT_MAX || cols > INT_MAX) {
        throw InputError(path, "image of " + std::to_string(rows) + "x" + std::to_string(cols) +
                                   " pixels is too large for GeoTIFF");
    }
    check_output_dir(path);
    register_gdal_once();
    // A unique temporary created exclusively; renamed by finish() or by the run's OutputSet,
    // removed on failure.
    const GDALDataType type = pixel == Pixel::kFloat32  ? GDT_Float32
                              : pixel == Pixel::kUInt32 ? GDT_UInt32
                              : pixel == Pixel::kByte   ? GDT_Byte
                                                        : GDT_UInt16;
    impl_ = std::make_unique<Impl>(path, rows, cols, type);
    Impl& m = *impl_;
    m.overviews = geo.overviews;
    const std::string tmp = m.staged.tmp();
    QuietGdal quiet;
    GDALDriver* drv = GetGDALDriverManager()->GetDriverByName("GTiff");
    if (drv == nullptr) fail(path, "GDAL has no GTiff driver", quiet);
    CPLStringList opts;
    opts.SetNameValue("TILED", "YES");
    opts.SetNameValue("BLOCKXSIZE", "256");
    opts.SetNameValue("BLOCKYSIZE", "256");
    if (geo.compress) {
        opts.SetNameValue("COMPRESS", "DEFLATE");
        opts.SetNameValue("ZLEVEL", "1");
        // Floating-point predictor for the phase, horizontal differencing for integers (labels,
        // pictures): both readable by every GDAL since 1.x.
        opts.SetNameValue("PREDICTOR", pixel == Pixel::kFloat32 ? "3" : "2");
    }
    opts.SetNameValue("BIGTIFF", "IF_SAFER");
    opts.SetNameValue("NUM_THREADS", "ALL_CPUS");
    m.ds.reset(drv->Create(tmp.c_str(), static_cast<int>(cols), static_cast<int>(rows), 1, m.type, opts.List()));
    if (!m.ds) fail(path, "cannot create " + tmp, quiet);
    if (geo.has_geotransform) {
        double gt[6];
        std::copy(geo.geotransform.begin(), geo.geotransform.end(), gt);
        if (m.ds->SetGeoTransform(gt) != CE_None) m.ds.reset(), fail(path, "cannot set the geotransform", quiet);
    }
    if (!geo.projection_wkt.empty() && m.ds->SetProjection(geo.projection_wkt.c_str()) != CE_None)
        m.ds.reset(), fail(path, "cannot set the projection", quiet);
    if (nodata && m.ds->GetRasterBand(1)->SetNoDataValue(*nodata) != CE_None)
        m.ds.reset(), fail(path, "cannot set the nodata value", quiet);
}

GeoTiffWriter::~GeoTiffWriter() = default;

void GeoTiffWriter::write_rows(int64_t r0, int64_t nr, const void* data) {
    Impl& m = *impl_;
    if (!m.ds) throw InputError(m.path, "write after a failure");
    QuietGdal quiet;
    const CPLErr err = m.ds->GetRasterBand(1)->RasterIO(GF_Write, 0, static_cast<int>(r0), static_cast<int>(m.cols),
                                                        static_cast<int>(nr), const_cast<void*>(data),
                                                        static_cast<int>(m.cols), static_cast<int>(nr), m.type, 0, 0,
                                                        nullptr);
    if (err != CE_None || quiet.failed()) m.ds.reset(), fail(m.path, "write failed at row " + std::to_string(r0), quiet);
}

void GeoTiffWriter::finish() {
    Impl& m = *impl_;
    if (!m.ds) throw InputError(m.path, "finish after a failure");
    if (m.overviews) {
        // Internal overviews, compressed as the image; labels are picked, not averaged.
        std::vector<int> f = overview_factors(m.rows, m.cols);
        QuietGdal quiet;
        if (!f.empty() && m.ds->BuildOverviews(m.type == GDT_Float32 ? "AVERAGE" : "NEAREST", static_cast<int>(f.size()),
                                               f.data(), 0, nullptr, nullptr, nullptr) != CE_None)
            m.ds.reset(), fail(m.path, "cannot build overviews", quiet);
    }
    {
        QuietGdal quiet;
        m.ds.reset();  // flushes and closes; failures land in `quiet`
        if (quiet.failed()) fail(m.path, "write failed while closing", quiet);
    }
    m.staged.finish();
}

namespace {

// `rows_at(r0, nr)` gives rows [r0, r0 + nr) contiguous, or nullptr on a read failure. One row
// of tiles at a time, so complete tiles are compressed and flushed as we go.
void write_single_band(const std::string& path, int64_t rows, int64_t cols,
                       const std::function<const void*(int64_t, int64_t)>& rows_at, GeoTiffWriter::Pixel pixel,
                       const GeoRef& geo, std::optional<double> nodata) {
    GeoTiffWriter out(path, rows, cols, pixel, geo, nodata);
    for (int64_t r0 = 0; r0 < rows; r0 += GeoTiffWriter::kStripRows) {
        const int64_t nr = std::min(GeoTiffWriter::kStripRows, rows - r0);
        const void* src = rows_at(r0, nr);
        if (src == nullptr) throw InputError(path, "cannot read rows " + std::to_string(r0) + ".. of the source");
        out.write_rows(r0, nr, src);
    }
    out.finish();
}

}  // namespace

void write_geotiff_f32(const std::string& path, int64_t rows, int64_t cols, const float* data,
                       const GeoRef& geo, std::optional<double> nodata) {
    write_single_band(
        path, rows, cols, [&](int64_t r0, int64_t) { return static_cast<const void*>(data + r0 * cols); },
        GeoTiffWriter::Pixel::kFloat32, geo, nodata);
}

void write_geotiff_u32(const std::string& path, int64_t rows, int64_t cols, const uint32_t* data,
                       const GeoRef& geo, std::optional<double> nodata) {
    write_single_band(
        path, rows, cols, [&](int64_t r0, int64_t) { return static_cast<const void*>(data + r0 * cols); },
        GeoTiffWriter::Pixel::kUInt32, geo, nodata);
}

std::vector<int> overview_factors(int64_t rows, int64_t cols) {
    std::vector<int> f;
    for (int64_t k = 2, longest = std::max(rows, cols); (longest + k / 2 - 1) / (k / 2) > 256 && k <= (1 << 20); k *= 2)
        f.push_back(static_cast<int>(k));
    return f;
}

std::string epsg_wkt(int code) {
    register_gdal_once();
    QuietGdal quiet;
    OGRSpatialReference srs;
    std::string out;
    if (srs.importFromEPSG(code) == OGRERR_NONE) {
        char* wkt = nullptr;
        if (srs.exportToWkt(&wkt) == OGRERR_NONE && wkt != nullptr) out = wkt;
        CPLFree(wkt);
    }
    return out;
}

}  // namespace tessera
