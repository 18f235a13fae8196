// Windowed GDAL reads of the inputs (ARCHITECTURE.md section 7).
#include "io/raster_reader.h"

#include <gdal_priv.h>
#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <cpl_vsi.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "io/column_pieces.h"
#include "io/gdal_session.h"
#include "io/input_error.h"
#include "kernels/ab_switch.h"

namespace tessera {

namespace {



bool supported_type(GDALDataType t) {
    switch (t) {
        case GDT_Byte:
        case GDT_UInt16:
        case GDT_Int16:
        case GDT_UInt32:
        case GDT_Int32:
        case GDT_Float32:
        case GDT_Float64:
        case GDT_CInt16:
        case GDT_CInt32:
        case GDT_CFloat32:
        case GDT_CFloat64:
            return true;
        default:
            return false;
    }
}

// Types whose every value is exact in float32: read straight into a float buffer.
bool exact_in_float(GDALDataType t) {
    return t == GDT_Byte || t == GDT_UInt16 || t == GDT_Int16 || t == GDT_Float32;
}

std::string plural(int n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Rows per strip for temporary buffers: about 4 Mi pixels, a multiple of the block height.
int64_t strip_rows(int64_t cols, int block_rows) {
    const int64_t target = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(cols, 1));
    const int64_t b = std::max(1, block_rows);
    // Whole rows of blocks up to 1024 rows: each thread opens its own dataset, so a block that
    // two strips share is decoded twice (the threads' block caches are not shared).
    if (b <= 1024) return std::max<int64_t>(1, target / b) * b;
    return target >= b ? (target / b) * b : target;
}

// One file's datasets opened again for the threads of parallel reads, kept from read to read and
// closed with the reader, on its owner's thread: a dataset closed on a worker made PROJ's context
// for that thread (proj.db opened and queried; 3 % of a 32768² run's samples on the lent H200's 16
// cores), and each read opened and closed them anew. Thread-safe; one dataset per taker.
class DatasetPool {
public:
    GDALDatasetUniquePtr take(const std::string& path) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (!free_.empty()) {
                GDALDatasetUniquePtr d = std::move(free_.back());
                free_.pop_back();
                return d;
            }
        }
        QuietGdal quiet;
        return GDALDatasetUniquePtr(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY, nullptr, nullptr, nullptr));
    }
    void put(GDALDatasetUniquePtr d) {
        if (!d) return;
        std::lock_guard<std::mutex> lock(mu_);
        free_.push_back(std::move(d));
    }
    ~DatasetPool() {
        QuietGdal quiet;  // closing may warn
        free_.clear();
    }

private:
    std::mutex mu_;
    std::vector<GDALDatasetUniquePtr> free_;
};

}  // namespace

struct RasterReader::Impl {
    GDALDatasetUniquePtr ds;
    mutable DatasetPool again;  // for for_each_strip's threads
    GDALRasterBand* band = nullptr;
    GDALDataType type = GDT_Unknown;
    int block_rows = 1, block_cols = 1;
    bool has_nodata = false;
    bool nodata_finite = false;  // a NaN/Inf nodata is covered by the NaN/Inf rule
    double nodata = 0.0;
    float nodata_f = 0.0f;

    // Rows [r0, r0 + nr) of window w's columns into buf as `as`; hook(y, x, seg, n) as each row piece
    // lands (y from r0, x from w.col0, seg its first byte), while it is in cache, and landed(y, x, ny, nx)
    // once a block's (or the RasterIO's) pieces have. A null buf only where by_blocks holds: the
    // hook then sees the block's own bytes (no copy).
    template <class Hook, class Landed>
    static void read_from(GDALRasterBand* band, const std::string& path, const Window& w,
                          int64_t r0, int64_t nr, GDALDataType as, void* buf, GSpacing pixel_space, GSpacing line_space,
                          Hook&& hook, Landed&& landed) {
        QuietGdal quiet;
        CPLErr err = CE_None;
        if (by_blocks(band, as, pixel_space)) {
            err = read_blocks(band, w, r0, nr, as, static_cast<std::byte*>(buf), line_space, hook, landed);
        } else {
            err = band->RasterIO(GF_Read, static_cast<int>(w.col0), static_cast<int>(r0), static_cast<int>(w.cols),
                                 static_cast<int>(nr), buf, static_cast<int>(w.cols), static_cast<int>(nr), as,
                                 pixel_space, line_space, nullptr);
            if (err == CE_None) {
                for (int64_t y = 0; y < nr; ++y) hook(y, int64_t{0}, static_cast<std::byte*>(buf) + y * line_space, w.cols);
                landed(int64_t{0}, int64_t{0}, nr, w.cols);
            }
        }
        if (err != CE_None || quiet.failed()) {
            std::string problem = "read failed in rows " + std::to_string(r0) + ".." +
                                  std::to_string(r0 + nr - 1) + ", cols " + std::to_string(w.col0) +
                                  ".." + std::to_string(w.col0 + w.cols - 1);
            if (!quiet.message().empty()) problem += " (" + quiet.message() + ")";
            throw InputError(path, problem);
        }
    }
    template <class Hook>
    static void read_from(GDALRasterBand* band, const std::string& path, const Window& w,
                          int64_t r0, int64_t nr, GDALDataType as, void* buf, GSpacing pixel_space, GSpacing line_space,
                          Hook&& hook) {
        read_from(band, path, w, r0, nr, as, buf, pixel_space, line_space, hook, no_landing);
    }
    static void read_from(GDALRasterBand* band, const std::string& path, const Window& w,
                          int64_t r0, int64_t nr, GDALDataType as, void* buf, GSpacing pixel_space, GSpacing line_space) {
        read_from(band, path, w, r0, nr, as, buf, pixel_space, line_space, [](int64_t, int64_t, std::byte*, int64_t) {},
                  no_landing);
    }
    static constexpr auto no_landing = [](int64_t, int64_t, int64_t, int64_t) {};

    // A GeoTIFF band read in its own type: block by block through ReadBlock, past GDAL's block
    // cache (its lock and one more copy held 16 reading threads to about 2 GB/s at 32768², section
    // 7), with the driver's own checks (a truncated file fails as through RasterIO).
    // TESSERA_READ_BLOCKS=0: through RasterIO and the cache (A/B studies).
    static bool by_blocks(GDALRasterBand* band, GDALDataType as, GSpacing pixel_space) {
        static const bool off = switch_is("TESSERA_READ_BLOCKS", "0");
        GDALDataset* ds = band->GetDataset();
        if (off) return false;
        return as == band->GetRasterDataType() && pixel_space == GDALGetDataTypeSizeBytes(as) && ds &&
               ds->GetDriver() && std::strcmp(ds->GetDriver()->GetDescription(), "GTiff") == 0;
    }
    template <class Hook, class Landed>
    static CPLErr read_blocks(GDALRasterBand* band, const Window& w, int64_t r0, int64_t nr,
                              GDALDataType as, std::byte* buf, GSpacing line_space, Hook& hook, Landed& landed) {
        int bw = 0, bh = 0;
        band->GetBlockSize(&bw, &bh);
        const int64_t H = band->GetYSize(), W = band->GetXSize(), sz = GDALGetDataTypeSizeBytes(as);
        std::vector<std::byte> block(static_cast<size_t>(int64_t{bw} * bh * sz));
        for (int64_t br = r0 / bh; br * bh < r0 + nr; ++br) {
            const int64_t y0 = std::max(r0, br * bh), y1 = std::min({r0 + nr, (br + 1) * bh, H});
            for (int64_t bc = w.col0 / bw; bc * bw < w.col0 + w.cols; ++bc) {
                if (band->ReadBlock(static_cast<int>(bc), static_cast<int>(br), block.data()) != CE_None) return CE_Failure;
                const int64_t x0 = std::max(w.col0, bc * bw), x1 = std::min({w.col0 + w.cols, (bc + 1) * bw, W});
                for (int64_t y = y0; y < y1; ++y) {
                    std::byte* from = block.data() + ((y - br * bh) * bw + (x0 - bc * bw)) * sz;
                    std::byte* seg = buf ? buf + (y - r0) * line_space + (x0 - w.col0) * sz : from;
                    if (buf) std::memcpy(seg, from, static_cast<size_t>((x1 - x0) * sz));
                    hook(y - r0, x0 - w.col0, seg, x1 - x0);
                }
                landed(y0 - r0, x0 - w.col0, y1 - y0, x1 - x0);
            }
        }
        return CE_None;
    }

    // Rows [r0, r0 + nr) of window w as float32 (read_float's values) into out (row stride
    // `stride`); hook(y, x, values, n) for each row piece as it lands. out may be null where
    // direct_float (the hook sees the block's bytes).
    template <class Hook>
    void float_rows(GDALRasterBand* band, const std::string& path, const Window& w, int64_t r0, int64_t nr,
                    float* out, int64_t stride, Hook&& hook) const {
        const int64_t wc = w.cols;
        if (GDALDataTypeIsComplex(type)) {  // a complex band read as a real quantity: its magnitude
            std::vector<double> buf(static_cast<size_t>(2 * nr * wc));
            read_from(band, path, w, r0, nr, GDT_CFloat64, buf.data(), 16, wc * 16);
            for (int64_t r = 0; r < nr; ++r) {
                float* o = out + r * stride;
                for (int64_t c = 0; c < wc; ++c) {
                    const size_t i = static_cast<size_t>(r * wc + c);
                    const double re = buf[2 * i], imv = buf[2 * i + 1];
                    const bool bad = !std::isfinite(re) || !std::isfinite(imv) || (nodata_finite && re == nodata);
                    o[c] = bad ? 0.0f : static_cast<float>(std::hypot(re, imv));
                }
                hook(r, int64_t{0}, static_cast<const float*>(o), wc);
            }
            return;
        }
        if (exact_in_float(type)) {
            read_from(band, path, w, r0, nr, GDT_Float32, out, sizeof(float), stride * static_cast<GSpacing>(sizeof(float)),
                      [&](int64_t y, int64_t x, std::byte* seg, int64_t n) {
                          float* o = reinterpret_cast<float*>(seg);
                          clean_floats(o, o, n);
                          hook(y, x, static_cast<const float*>(o), n);
                      });
            return;
        }
        std::vector<double> buf(static_cast<size_t>(nr * wc));
        read_from(band, path, w, r0, nr, GDT_Float64, buf.data(), 8, wc * 8);
        for (int64_t r = 0; r < nr; ++r) {
            float* o = out + r * stride;
            for (int64_t c = 0; c < wc; ++c) {
                const double v = buf[static_cast<size_t>(r * wc + c)];
                o[c] = invalid_real(v) ? 0.0f : static_cast<float>(v);
            }
            hook(r, int64_t{0}, static_cast<const float*>(o), wc);
        }
    }
    bool direct_float() const { return type == GDT_Float32 && by_blocks(band, GDT_Float32, sizeof(float)); }

    // The same for a mask (read_mask's 0/1 values).
    template <class Hook>
    void mask_rows(GDALRasterBand* band, const std::string& path, const Window& w, int64_t r0, int64_t nr,
                   uint8_t* out, int64_t stride, Hook&& hook) const {
        const int64_t wc = w.cols;
        if (type == GDT_Byte) {  // the common case: the bytes in place, then 0/1
            const int nd = (nodata_finite && nodata >= 0 && nodata <= 255 && nodata == std::floor(nodata))
                               ? static_cast<int>(nodata)
                               : -1;
            read_from(band, path, w, r0, nr, GDT_Byte, out, 1, stride, [&](int64_t y, int64_t x, std::byte* seg, int64_t n) {
                uint8_t* o = reinterpret_cast<uint8_t*>(seg);
                for (int64_t c = 0; c < n; ++c) o[c] = (o[c] != 0 && o[c] != nd) ? 1 : 0;
                hook(y, x, static_cast<const uint8_t*>(o), n);
            });
            return;
        }
        // Anything else via double (complex: real part, nonzero imaginary also counts as nonzero).
        const bool cplx = GDALDataTypeIsComplex(type) != 0;
        const int64_t per = cplx ? 2 : 1;
        std::vector<double> buf(static_cast<size_t>(per * nr * wc));
        read_from(band, path, w, r0, nr, cplx ? GDT_CFloat64 : GDT_Float64, buf.data(), 8 * per, wc * 8 * per);
        for (int64_t r = 0; r < nr; ++r) {
            uint8_t* o = out + r * stride;
            for (int64_t c = 0; c < wc; ++c) {
                const size_t i = static_cast<size_t>(per * (r * wc + c));
                const double re = buf[i];
                const double imv = cplx ? buf[i + 1] : 0.0;
                const bool bad = !std::isfinite(re) || !std::isfinite(imv) || (nodata_finite && re == nodata) ||
                                 (re == 0.0 && imv == 0.0);
                o[c] = bad ? 0 : 1;
            }
            hook(r, int64_t{0}, static_cast<const uint8_t*>(o), wc);
        }
    }
    bool direct_mask() const { return type == GDT_Byte && by_blocks(band, GDT_Byte, 1); }

    bool invalid_real(double v) const {
        return !std::isfinite(v) || (nodata_finite && v == nodata);
    }
    // out[c] = v[c], or 0 where invalid (NaN, Inf, the nodata; out may be v); valid[c] = 1 or 0 where given.
    // Branch-free with the band's nodata in locals: the compiler's vectors (a loop that stored
    // only where invalid, the nodata read through `this`, ran a pixel at a time).
    template <bool kValid = false>
    void clean_floats(const float* v, float* out, int64_t n, uint8_t* valid = nullptr) const {
        const bool has = nodata_finite;
        const float nd = nodata_f, big = std::numeric_limits<float>::max();
#pragma omp simd
        for (int64_t c = 0; c < n; ++c) {
            const float x = v[c];
            const bool bad = !(std::fabs(x) <= big) || (has && x == nd);  // NaN and Inf fail the first
            if constexpr (kValid) valid[c] = bad ? 0 : 1;
            out[c] = bad ? 0.0f : x;
        }
    }
};

RasterReader::RasterReader(const std::string& path, int band) : path_(path), band_(band) {
    register_gdal_once();
    impl_ = std::make_unique<Impl>();

    VSIStatBufL st;
    const bool exists = VSIStatL(path.c_str(), &st) == 0;
    const bool is_dir = exists && VSI_ISDIR(st.st_mode);
    if (exists && !is_dir && path.rfind("/vsi", 0) != 0 && ::access(path.c_str(), R_OK) != 0 &&
        errno == EACCES) {
        throw InputError(path, "file is not readable (permission denied)");
    }

    {
        QuietGdal quiet;
        GDALDataset* raw = GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY,
                                             nullptr, nullptr, nullptr);
        impl_->ds.reset(raw);
        if (raw == nullptr) {
            if (!exists && path.find(':') == std::string::npos) throw InputError(path, "no such file");
            if (!exists) {
                // GDAL connection strings (HDF5:"f.h5"://x, NETCDF:...) are not plain files.
                std::string problem = "no such file or dataset";
                if (!quiet.message().empty()) problem += " (" + quiet.message() + ")";
                throw InputError(path, problem);
            }
            throw InputError(path, is_dir ? "not a raster GDAL can read (it is a directory)"
                                          : "not a raster GDAL can read");
        }
    }

    GDALDataset& ds = *impl_->ds;
    const int nbands = ds.GetRasterCount();
    if (nbands == 0) {
        // Containers (HDF5, netCDF) open with subdatasets and no bands of their own.
        CSLConstList subs = ds.GetMetadata("SUBDATASETS");
        const char* first = subs ? CSLFetchNameValue(subs, "SUBDATASET_1_NAME") : nullptr;
        if (first != nullptr) {
            throw InputError(path, std::string("has no raster bands of its own; name one of its "
                                               "subdatasets instead, e.g. ") +
                                       first);
        }
        throw InputError(path, "has no raster bands");
    }
    if (band < 1 || band > nbands) {
        throw InputError(path, "band " + std::to_string(band) + " out of range (the raster has " +
                                   plural(nbands, "band") + ")");
    }
    impl_->band = ds.GetRasterBand(band);
    impl_->type = impl_->band->GetRasterDataType();
    if (!supported_type(impl_->type)) {
        throw InputError(path, std::string("unsupported data type ") +
                                   GDALGetDataTypeName(impl_->type) + " in band " +
                                   std::to_string(band) +
                                   " (expected Byte, UInt16, Int16, UInt32, Int32, Float32, "
                                   "Float64, CInt16, CInt32, CFloat32 or CFloat64)");
    }
    int bx = 0, by = 0;
    impl_->band->GetBlockSize(&bx, &by);
    impl_->block_rows = std::max(1, by), impl_->block_cols = std::max(1, bx);
    info_.block_rows = impl_->block_rows, info_.block_cols = impl_->block_cols;

    info_.rows = ds.GetRasterYSize();
    info_.cols = ds.GetRasterXSize();
    info_.band_count = nbands;
    info_.is_complex = GDALDataTypeIsComplex(impl_->type) != 0;
    info_.data_type = GDALGetDataTypeName(impl_->type);
    info_.driver = ds.GetDriver() ? ds.GetDriver()->GetDescription() : "";
    int has_nd = 0;
    const double nd = impl_->band->GetNoDataValue(&has_nd);
    if (has_nd) {
        info_.nodata = nd;
        impl_->has_nodata = true;
        impl_->nodata = nd;
        impl_->nodata_finite = std::isfinite(nd);
        impl_->nodata_f = static_cast<float>(nd);
    }
    double gt[6];
    {
        QuietGdal quiet;
        if (ds.GetGeoTransform(gt) == CE_None) {
            info_.has_geotransform = true;
            std::copy(gt, gt + 6, info_.geotransform.begin());
        }
        const char* wkt = ds.GetProjectionRef();
        if (wkt != nullptr) info_.projection_wkt = wkt;
    }
}

int auxiliary_band(const std::string& path, int band, const std::string& option) {
    if (band > 0) return band;
    const int n = RasterReader(path, 1).info().band_count;
    if (n > 1)
        throw InputError(path, "has " + plural(n, "band") + "; pick the one to use with " + option + " N");
    return 1;
}

RasterReader::~RasterReader() {
    QuietGdal quiet;  // closing may warn; nothing of ours to report from a destructor
    impl_.reset();
}

namespace {

void check_window(const std::string& path, const RasterInfo& info, const Window& w, int64_t stride) {
    if (w.rows < 0 || w.cols < 0 || w.row0 < 0 || w.col0 < 0 || w.row0 + w.rows > info.rows ||
        w.col0 + w.cols > info.cols) {
        throw std::out_of_range(path + ": window rows " + std::to_string(w.row0) + "+" +
                                std::to_string(w.rows) + ", cols " + std::to_string(w.col0) + "+" +
                                std::to_string(w.cols) + " outside the " +
                                std::to_string(info.rows) + "x" + std::to_string(info.cols) +
                                " raster");
    }
    if (stride < w.cols) {
        throw std::invalid_argument(path + ": row stride " + std::to_string(stride) +
                                    " smaller than the window width " + std::to_string(w.cols));
    }
}

}  // namespace

namespace {

// Pieces of a window read on the host's threads (windows of 4 Mi pixels or more): GDAL handles are
// not shared across threads, so each thread but the first opens the file again. Strips of `sr` rows,
// cut into pieces of whole blocks (`block_cols` wide) where there are fewer strips than twice the
// threads (a chunk's few block rows): fn(band, piece, r0, nr, c0) gets window-relative rows
// [r0, r0 + nr) and columns from c0 (piece: the window's columns of the piece, all its rows); done(r0, nr)
// follows a strip's last piece. The first failure (lowest piece) is rethrown.
constexpr int64_t kParallelReadMinPixels = int64_t{1} << 22;

template <class Fn>
void for_each_strip(const std::string& path, DatasetPool& again, int band_no, GDALRasterBand* band0, const Window& w,
                    int64_t sr, int64_t block_cols, Fn&& fn, const RowsDone& done) {
    const int64_t strips = (w.rows + sr - 1) / sr;
    const bool parallel = w.rows * w.cols >= kParallelReadMinPixels && omp_get_max_threads() > 1;
    const int64_t T = omp_get_max_threads();
    const ColumnPieces pieces(w, strips, T, block_cols, parallel);
    const int64_t parts = pieces.parts();
    std::vector<std::atomic<int64_t>> left(static_cast<size_t>(strips));
    for (auto& x : left) x = parts;
    auto piece = [&](GDALRasterBand* band, int64_t k) {
        const int64_t s = k / parts, j = k % parts, r0 = s * sr, nr = std::min(sr, w.rows - r0);
        const int64_t c0 = pieces.begin(j), c1 = pieces.begin(j + 1);
        if (c1 > c0) fn(band, Window{w.row0, w.col0 + c0, w.rows, c1 - c0}, r0, nr, c0);
        if (--left[static_cast<size_t>(s)] == 0 && done) done(r0, nr);
    };
    const int64_t items = strips * parts;
    const int threads = parallel ? static_cast<int>(std::min<int64_t>(items, T)) : 1;
    if (threads <= 1) {
        for (int64_t k = 0; k < items; ++k) piece(band0, k);
        return;
    }
    std::mutex mu;
    int64_t failed_at = items;
    std::exception_ptr failure;
#pragma omp parallel num_threads(threads)
    {
        GDALDatasetUniquePtr mine;
        GDALRasterBand* band = band0;
        try {
            if (omp_get_thread_num() != 0) {
                mine = again.take(path);
                if (!mine) throw InputError(path, "cannot be opened again for a parallel read");
                band = mine->GetRasterBand(band_no);
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu);
            if (!failure) failure = std::current_exception(), failed_at = -1;
            band = nullptr;
        }
#pragma omp for schedule(dynamic)
        for (int64_t k = 0; k < items; ++k) {
            if (!band) continue;
            try {
                piece(band, k);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mu);
                if (k < failed_at) failed_at = k, failure = std::current_exception();
            }
        }
        again.put(std::move(mine));
    }
    if (failure) std::rethrow_exception(failure);
}

}  // namespace

void RasterReader::read_phase(const Window& w, float* phase, uint8_t* valid, int64_t stride, const RowsDone& done,
                              const RowPiecesRead& each, const PieceLanded& landed) const {
    check_window(path_, info_, w, stride);
    if (w.rows == 0 || w.cols == 0) return;
    const Impl& im = *impl_;
    const int64_t wc = w.cols;

    if (info_.is_complex) {
        // Phase = arg(re + i im). CInt16/CFloat32 are exact as CFloat32; wider types go via
        // CFloat64 so that tiny magnitudes do not flush to 0+0i. Nodata (GDAL convention)
        // applies to the real part.
        const bool wide = im.type == GDT_CInt32 || im.type == GDT_CFloat64;
        for_each_strip(path_, im.again, band_, im.band, w, strip_rows(wc, im.block_rows), im.block_cols,
                       [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, int64_t c0) {
            const int t = omp_get_thread_num();
            const int64_t pc = pw.cols;
            const int64_t n = nr * pc;
            std::vector<float> buf32;
            std::vector<double> buf64;
            if (wide) {
                buf64.resize(static_cast<size_t>(2 * n));
                Impl::read_from(band, path_, pw, w.row0 + r0, nr, GDT_CFloat64, buf64.data(), 16, pc * 16);
            } else {
                buf32.resize(static_cast<size_t>(2 * n));
                Impl::read_from(band, path_, pw, w.row0 + r0, nr, GDT_CFloat32, buf32.data(), 8, pc * 8);
            }
            for (int64_t r = 0; r < nr; ++r) {
                float* ph = phase + (r0 + r) * stride + c0;
                uint8_t* va = valid + (r0 + r) * stride + c0;
                for (int64_t c = 0; c < pc; ++c) {
                    const int64_t i = r * pc + c;
                    double re, imv;
                    if (wide) {
                        re = buf64[2 * i];
                        imv = buf64[2 * i + 1];
                    } else {
                        re = buf32[2 * i];
                        imv = buf32[2 * i + 1];
                    }
                    const bool bad = !std::isfinite(re) || !std::isfinite(imv) ||
                                     (re == 0.0 && imv == 0.0) ||
                                     (im.nodata_finite && re == im.nodata);
                    if (bad) {
                        ph[c] = 0.0f;
                        va[c] = 0;
                    } else {
                        ph[c] = wide ? static_cast<float>(std::atan2(imv, re))
                                     : std::atan2(static_cast<float>(imv), static_cast<float>(re));
                        va[c] = 1;
                    }
                }
                if (each) each(t, r0 + r, c0, pc);
            }
            if (landed) landed(t, Window{r0, c0, nr, pc});
        }, done);
        return;
    }

    if (exact_in_float(im.type)) {
        // Into the caller's buffer, each row piece's invalid pixels made 0 as it lands: a float32
        // GeoTIFF's straight from its blocks (one pass), other types converted in place.
        for_each_strip(path_, im.again, band_, im.band, w, strip_rows(wc, im.block_rows), im.block_cols,
                       [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, int64_t c0) {
            const int t = omp_get_thread_num();
            const bool direct = im.type == GDT_Float32 && Impl::by_blocks(band, GDT_Float32, sizeof(float));
            Impl::read_from(band, path_, pw, w.row0 + r0, nr, GDT_Float32,
                            direct ? nullptr : phase + r0 * stride + c0, sizeof(float),
                            stride * static_cast<GSpacing>(sizeof(float)), [&](int64_t y, int64_t x, std::byte* seg, int64_t n) {
                                float* ph = phase + (r0 + y) * stride + c0 + x;
                                uint8_t* va = valid + (r0 + y) * stride + c0 + x;
                                im.clean_floats<true>(reinterpret_cast<const float*>(seg), ph, n, va);
                                if (each) each(t, r0 + y, c0 + x, n);
                            },
                            [&](int64_t y, int64_t x, int64_t ny, int64_t nx) {
                                if (landed) landed(t, Window{r0 + y, c0 + x, ny, nx});
                            });
        }, done);
        return;
    }

    // Int32, UInt32, Float64: compare with nodata in double, then narrow.
    for_each_strip(path_, im.again, band_, im.band, w, strip_rows(wc, im.block_rows), im.block_cols,
                   [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, int64_t c0) {
        const int t = omp_get_thread_num();
        const int64_t pc = pw.cols;
        std::vector<double> buf(static_cast<size_t>(nr * pc));
        Impl::read_from(band, path_, pw, w.row0 + r0, nr, GDT_Float64, buf.data(), 8, pc * 8);
        for (int64_t r = 0; r < nr; ++r) {
            float* ph = phase + (r0 + r) * stride + c0;
            uint8_t* va = valid + (r0 + r) * stride + c0;
            for (int64_t c = 0; c < pc; ++c) {
                const double v = buf[static_cast<size_t>(r * pc + c)];
                const bool bad = im.invalid_real(v);
                va[c] = bad ? 0 : 1;
                ph[c] = bad ? 0.0f : static_cast<float>(v);
            }
            if (each) each(t, r0 + r, c0, pc);
        }
        if (landed) landed(t, Window{r0, c0, nr, pc});
    }, done);
}

namespace {

// read_float and read_mask: window w into out (row stride `stride`) in pieces on the threads,
// rows(band, pw, r0, nr, out, stride) reading each.
template <class T, class Rows>
void store_rows(const std::string& path, const RasterInfo& info, DatasetPool& again, int band_no, GDALRasterBand* band0,
                const Window& w, int block_rows, int block_cols, T* out, int64_t stride, Rows&& rows) {
    check_window(path, info, w, stride);
    if (w.rows == 0 || w.cols == 0) return;
    for_each_strip(path, again, band_no, band0, w, strip_rows(w.cols, block_rows), block_cols,
                   [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, int64_t c0) {
        rows(band, pw, w.row0 + r0, nr, out + r0 * stride + c0, stride);
    }, {});
}

}  // namespace

void RasterReader::read_float(const Window& w, float* out, int64_t stride) const {
    const Impl& im = *impl_;
    store_rows(path_, info_, im.again, band_, im.band, w, im.block_rows, im.block_cols, out, stride,
               [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, float* o, int64_t st) {
                   im.float_rows(band, path_, pw, r0, nr, o, st, [](int64_t, int64_t, const float*, int64_t) {});
               });
}

void RasterReader::read_mask(const Window& w, uint8_t* out, int64_t stride) const {
    const Impl& im = *impl_;
    store_rows(path_, info_, im.again, band_, im.band, w, im.block_rows, im.block_cols, out, stride,
               [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, uint8_t* o, int64_t st) {
                   im.mask_rows(band, path_, pw, r0, nr, o, st, [](int64_t, int64_t, const uint8_t*, int64_t) {});
               });
}

namespace {

// visit_float and visit_mask: window w in pieces on the threads, rows(band, pw, r0, nr, out,
// stride, hook) reading each into a buffer of the thread's (none where `direct`: the hook sees
// the file's blocks), fn(thread, row, col, values, n) per row piece as it lands.
template <class T, class Rows, class Fn>
void visit_rows(const std::string& path, DatasetPool& again, int band_no, GDALRasterBand* band0, const Window& w,
                int block_rows, int block_cols, bool direct, Rows&& rows, const Fn& fn) {
    std::vector<std::vector<T>> bufs(static_cast<size_t>(omp_get_max_threads()));
    for_each_strip(path, again, band_no, band0, w, strip_rows(w.cols, block_rows), block_cols,
                   [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, int64_t c0) {
        const int t = omp_get_thread_num();
        T* out = nullptr;
        if (!direct) {
            std::vector<T>& b = bufs[static_cast<size_t>(t)];
            b.resize(std::max(b.size(), static_cast<size_t>(nr * pw.cols)));
            out = b.data();
        }
        rows(band, pw, w.row0 + r0, nr, out, pw.cols,
             [&](int64_t y, int64_t x, const T* v, int64_t n) { fn(t, r0 + y, c0 + x, v, n); });
    }, {});
}

}  // namespace

void RasterReader::visit_float(const Window& w, const FloatPiecesRead& fn) const {
    check_window(path_, info_, w, w.cols);
    if (w.rows == 0 || w.cols == 0) return;
    const Impl& im = *impl_;
    visit_rows<float>(path_, im.again, band_, im.band, w, im.block_rows, im.block_cols, im.direct_float(),
                      [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, float* out, int64_t stride,
                          auto&& hook) { im.float_rows(band, path_, pw, r0, nr, out, stride, hook); },
                      fn);
}

void RasterReader::visit_mask(const Window& w, const MaskPiecesRead& fn) const {
    check_window(path_, info_, w, w.cols);
    if (w.rows == 0 || w.cols == 0) return;
    const Impl& im = *impl_;
    visit_rows<uint8_t>(path_, im.again, band_, im.band, w, im.block_rows, im.block_cols, im.direct_mask(),
                        [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, uint8_t* out,
                            int64_t stride, auto&& hook) { im.mask_rows(band, path_, pw, r0, nr, out, stride, hook); },
                        fn);
}

namespace {

// visit_float_here and visit_mask_here: window w on the calling thread, through a dataset of the
// pool's (every caller its own) and a buffer of the window's size (none where `direct`).
template <class T, class Rows, class Fn>
void visit_here(const std::string& path, DatasetPool& again, int band_no, const Window& w, int thread, bool direct,
                Rows&& rows, const Fn& fn) {
    GDALDatasetUniquePtr mine = again.take(path);
    if (!mine) throw InputError(path, "cannot be opened again for a parallel read");
    std::vector<T> buf(direct ? 0 : static_cast<size_t>(w.size()));
    T* out = direct ? nullptr : buf.data();
    try {
        rows(mine->GetRasterBand(band_no), w, w.row0, w.rows, out, w.cols,
             [&](int64_t y, int64_t x, const T* v, int64_t n) { fn(thread, y, x, v, n); });
    } catch (...) {
        again.put(std::move(mine));
        throw;
    }
    again.put(std::move(mine));
}

}  // namespace

void RasterReader::visit_float_here(const Window& w, int thread, const FloatPiecesRead& fn) const {
    check_window(path_, info_, w, w.cols);
    if (w.rows == 0 || w.cols == 0) return;
    const Impl& im = *impl_;
    visit_here<float>(path_, im.again, band_, w, thread, im.direct_float(),
                      [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, float* out, int64_t stride,
                          auto&& hook) { im.float_rows(band, path_, pw, r0, nr, out, stride, hook); },
                      fn);
}

void RasterReader::visit_mask_here(const Window& w, int thread, const MaskPiecesRead& fn) const {
    check_window(path_, info_, w, w.cols);
    if (w.rows == 0 || w.cols == 0) return;
    const Impl& im = *impl_;
    visit_here<uint8_t>(path_, im.again, band_, w, thread, im.direct_mask(),
                        [&](GDALRasterBand* band, const Window& pw, int64_t r0, int64_t nr, uint8_t* out,
                            int64_t stride, auto&& hook) { im.mask_rows(band, path_, pw, r0, nr, out, stride, hook); },
                        fn);
}

}  // namespace tessera

namespace tessera {

bool driver_uses_hdf5(const std::string& driver) {
    for (const char* d : {"HDF5", "HDF5Image", "netCDF", "BAG", "KEA", "S102", "S104", "S111"})
        if (driver == d) return true;
    return false;
}

}  // namespace tessera
