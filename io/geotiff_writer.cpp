// Whole-image GeoTIFF output (optional result copy, synthetic scenes).
#include "io/geotiff_writer.h"

#include <gdal_priv.h>
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

// `rows_at(r0, nr)` gives rows [r0, r0 + nr) contiguous, or nullptr on a read failure.
void write_single_band(const std::string& path, int64_t rows, int64_t cols,
                       const std::function<const void*(int64_t, int64_t)>& rows_at, GDALDataType type,
                       const GeoRef& geo, std::optional<double> nodata) {
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
    StagedFile staged(path);
    const std::string tmp = staged.tmp();

    auto fail = [&](const std::string& problem, const QuietGdal& quiet) {
        std::string msg = problem;
        if (!quiet.message().empty()) msg += " (" + quiet.message() + ")";
        throw InputError(path, msg);
    };

    {
        QuietGdal quiet;
        GDALDriver* drv = GetGDALDriverManager()->GetDriverByName("GTiff");
        if (drv == nullptr) fail("GDAL has no GTiff driver", quiet);

        CPLStringList opts;
        opts.SetNameValue("TILED", "YES");
        opts.SetNameValue("BLOCKXSIZE", "256");
        opts.SetNameValue("BLOCKYSIZE", "256");
        if (geo.compress) {
            opts.SetNameValue("COMPRESS", "DEFLATE");
            opts.SetNameValue("ZLEVEL", "1");
        }
        opts.SetNameValue("BIGTIFF", "IF_SAFER");
        opts.SetNameValue("NUM_THREADS", "ALL_CPUS");

        GDALDatasetUniquePtr ds(drv->Create(tmp.c_str(), static_cast<int>(cols),
                                            static_cast<int>(rows), 1, type, opts.List()));
        if (!ds) fail("cannot create " + tmp, quiet);

        if (geo.has_geotransform) {
            double gt[6];
            std::copy(geo.geotransform.begin(), geo.geotransform.end(), gt);
            if (ds->SetGeoTransform(gt) != CE_None) {
                ds.reset();
                fail("cannot set the geotransform", quiet);
            }
        }
        if (!geo.projection_wkt.empty() && ds->SetProjection(geo.projection_wkt.c_str()) != CE_None) {
            ds.reset();
            fail("cannot set the projection", quiet);
        }
        GDALRasterBand* band = ds->GetRasterBand(1);
        if (nodata && band->SetNoDataValue(*nodata) != CE_None) {
            ds.reset();
            fail("cannot set the nodata value", quiet);
        }

        // One row of tiles at a time, so complete tiles are compressed and flushed as we go.
        const int64_t strip = 256;
        for (int64_t r0 = 0; r0 < rows; r0 += strip) {
            const int64_t nr = std::min(strip, rows - r0);
            void* src = const_cast<void*>(rows_at(r0, nr));
            if (src == nullptr) {
                ds.reset();
                fail("cannot read rows " + std::to_string(r0) + ".. of the source", quiet);
            }
            const CPLErr err =
                band->RasterIO(GF_Write, 0, static_cast<int>(r0), static_cast<int>(cols),
                               static_cast<int>(nr), src, static_cast<int>(cols),
                               static_cast<int>(nr), type, 0, 0, nullptr);
            if (err != CE_None || quiet.failed()) {
                ds.reset();
                fail("write failed at row " + std::to_string(r0), quiet);
            }
        }
        ds.reset();  // flushes and closes; failures land in `quiet`
        if (quiet.failed()) fail("write failed while closing", quiet);
    }

    staged.finish();
}
}  // namespace

void write_geotiff_f32(const std::string& path, int64_t rows, int64_t cols, const float* data,
                       const GeoRef& geo, std::optional<double> nodata) {
    write_single_band(
        path, rows, cols, [&](int64_t r0, int64_t) { return static_cast<const void*>(data + r0 * cols); },
        GDT_Float32, geo, nodata);
}

void write_geotiff_u32(const std::string& path, int64_t rows, int64_t cols, const uint32_t* data,
                       const GeoRef& geo, std::optional<double> nodata) {
    write_single_band(
        path, rows, cols, [&](int64_t r0, int64_t) { return static_cast<const void*>(data + r0 * cols); },
        GDT_UInt32, geo, nodata);
}

void geotiff_from_hdf5(const std::string& h5_path, const std::string& name, const std::string& path,
                       const GeoRef& geo, std::optional<double> nodata) {
    register_gdal_once();
    const std::string src_name = "HDF5:\"" + h5_path + "\"://" + name;
    GDALDatasetUniquePtr src;
    {
        QuietGdal quiet;
        src.reset(GDALDataset::Open(src_name.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
        if (!src) throw InputError(path, "cannot read back " + src_name + " for the GeoTIFF copy");
    }
    const int64_t rows = src->GetRasterYSize(), cols = src->GetRasterXSize();
    GDALRasterBand* band = src->GetRasterBand(1);
    std::vector<float> buf;
    write_single_band(
        path, rows, cols,
        [&](int64_t r0, int64_t nr) -> const void* {
            buf.resize(static_cast<size_t>(nr * cols));
            const CPLErr err = band->RasterIO(GF_Read, 0, static_cast<int>(r0), static_cast<int>(cols),
                                              static_cast<int>(nr), buf.data(), static_cast<int>(cols),
                                              static_cast<int>(nr), GDT_Float32, 0, 0, nullptr);
            return err == CE_None ? buf.data() : nullptr;
        },
        GDT_Float32, geo, nodata);
}

}  // namespace tessera
