#include "io/result_sink.h"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "io/input_error.h"
#include "kernels/label_width.h"
#include "partition/strip_gather.h"

namespace tessera {

namespace {

class Hdf5Sink final : public ResultSink {
public:
    Hdf5Sink(Hdf5Writer& out, int compress_phase) : out_(out), compress_(compress_phase) {}
    void write(const UnwrapResultWindow& r) override { r_ = r; }
    void finish(const std::vector<Attribute>& attrs) override {
        write_unwrap_result(out_, r_, compress_, attrs);
        out_.commit();  // closed; renamed now, or with the run's other outputs (io/output_set.h)
    }

private:
    Hdf5Writer& out_;
    int compress_;
    UnwrapResultWindow r_;  // written with the attributes: one collective pass over the datasets
};

class Hdf5WindowsSink final : public ResultSink {
public:
    Hdf5WindowsSink(Hdf5Writer& out, int compress_phase) : out_(out), compress_(compress_phase) {
        out_.set_windowed(true);
    }
    void write(const UnwrapResultWindow& r) override { write_unwrap_datasets(out_, r, compress_); }
    void finish(const std::vector<Attribute>& attrs) override {
        finish_unwrap_result(out_, attrs);
        out_.commit();
    }

private:
    Hdf5Writer& out_;
    int compress_;
};

// What `band` stores (README "Output"): f(T{}, pixel, nodata, value) with value(u, label) -> T.
template <typename F>
void with_band(GeoTiffBand band, F&& f) {
    using Pixel = GeoTiffWriter::Pixel;
    switch (band) {
        case GeoTiffBand::kPhase:
            return f(float{}, Pixel::kFloat32, std::optional<double>(std::nan("")), [](float u, uint32_t) { return u; });
        case GeoTiffBand::kComponents:
            return f(uint32_t{}, Pixel::kUInt32, std::optional<double>(0.0), [](float, uint32_t l) { return l; });
        case GeoTiffBand::kDolphinPhase:
            return f(float{}, Pixel::kFloat32, std::optional<double>(0.0),
                     [](float u, uint32_t) { return std::isnan(u) ? 0.0f : u; });
        case GeoTiffBand::kDolphinComponents:
            return f(uint16_t{}, Pixel::kUInt16, std::optional<double>(kDolphinComponentsNodata),
                     [](float u, uint32_t l) -> uint16_t {
                         if (std::isnan(u)) return kDolphinComponentsNodata;
                         return l < kDolphinComponentsNodata ? static_cast<uint16_t>(l) : 0;
                     });
    }
}

// Rank 0 reads /unwrapped_phase and /connected_components of the closed file `h5` strip by strip
// into `band` of a GeoTIFF at `path`.
void copy_band_to_geotiff(const std::string& h5, GeoTiffBand band, const std::string& path, int64_t H, int64_t W,
                          const GeoRef& geo) {
    const hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) throw std::runtime_error("cannot reopen the result " + h5);
    const hid_t du = H5Dopen2(f, "unwrapped_phase", H5P_DEFAULT), dl = H5Dopen2(f, "connected_components", H5P_DEFAULT);
    const hid_t fs = du < 0 || dl < 0 ? -1 : H5Dget_space(du);
    bool ok = fs >= 0;
    const size_t strip = static_cast<size_t>(GeoTiffWriter::kStripRows * W);
    std::vector<float> u(strip);
    std::vector<uint32_t> label(strip);
    with_band(band, [&](auto zero, GeoTiffWriter::Pixel pixel, std::optional<double> nodata, auto value) {
        GeoTiffWriter tif(path, H, W, pixel, geo, nodata);
        std::vector<decltype(zero)> rows(strip);
        for (int64_t r0 = 0; ok && r0 < H; r0 += GeoTiffWriter::kStripRows) {
            const int64_t nr = std::min(GeoTiffWriter::kStripRows, H - r0);
            const hsize_t start[2] = {static_cast<hsize_t>(r0), 0},
                          count[2] = {static_cast<hsize_t>(nr), static_cast<hsize_t>(W)};
            const hid_t ms = H5Screate_simple(2, count, nullptr);
            ok = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr) >= 0 &&
                 H5Dread(du, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, u.data()) >= 0 &&
                 (band == GeoTiffBand::kPhase || H5Dread(dl, H5T_NATIVE_UINT32, ms, fs, H5P_DEFAULT, label.data()) >= 0);
            H5Sclose(ms);
            for (int64_t i = 0; ok && i < nr * W; ++i) rows[static_cast<size_t>(i)] = value(u[static_cast<size_t>(i)], label[static_cast<size_t>(i)]);
            if (ok) tif.write_rows(r0, nr, rows.data());
        }
        if (ok) tif.finish();
    });
    if (fs >= 0) H5Sclose(fs);
    if (du >= 0) H5Dclose(du);
    if (dl >= 0) H5Dclose(dl);
    H5Fclose(f);
    if (!ok) throw std::runtime_error("cannot read the result back from " + h5);
}

class GeoTiffFromHdf5Sink final : public ResultSink {
public:
    GeoTiffFromHdf5Sink(const Hdf5Writer& out, const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                        Comm& comm, GeoTiffBand band)
        : out_(out), path_(path), H_(H), W_(W), geo_(geo), comm_(comm), band_(band) {}
    void write(const UnwrapResultWindow&) override {}
    void finish(const std::vector<Attribute>&) override {
        std::string err;
        if (comm_.rank() == 0) {
            try {
                copy_band_to_geotiff(out_.temporary_path(), band_, path_, H_, W_, geo_);
            } catch (const InputError& e) {
                err = e.what();
            } catch (const std::exception& e) {
                err = path_ + ": " + e.what();
            }
        }
        if (comm_.max(int64_t{!err.empty()}))
            throw InputError::everywhere(comm_.rank() == 0 ? err : path_ + ": GeoTIFF output failed");
    }

private:
    const Hdf5Writer& out_;
    std::string path_;
    int64_t H_, W_;
    GeoRef geo_;
    Comm& comm_;
    GeoTiffBand band_;
};

// The ranks' windows of an H x W image of T as one GeoTIFF, written by rank 0 as strips arrive.
template <typename T>
void write_band_from_ranks(Comm& comm, const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                           const Window& own, const T* data, int64_t stride, GeoTiffWriter::Pixel pixel,
                           std::optional<double> nodata) {
    std::unique_ptr<GeoTiffWriter> tif;  // rank 0's, made with the first strip
    gather_strips_to_root<T>(
        comm, own, data, stride, H, W, GeoTiffWriter::kStripRows,
        [&](int64_t r0, int64_t nr, const T* rows) {
            if (!tif) tif = std::make_unique<GeoTiffWriter>(path, H, W, pixel, geo, nodata);
            tif->write_rows(r0, nr, rows);
            if (r0 + nr == H) tif->finish();
        },
        path + ": GeoTIFF output failed");
}

class GeoTiffSink final : public ResultSink {
public:
    GeoTiffSink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo, Comm& comm, GeoTiffBand band)
        : path_(path), H_(H), W_(W), geo_(geo), comm_(comm), band_(band) {}
    void write(const UnwrapResultWindow& r) override {
        if (band_ == GeoTiffBand::kPhase) {  // as it is, no copy
            write_band_from_ranks(comm_, path_, H_, W_, geo_, r.own, r.u, r.stride, GeoTiffWriter::Pixel::kFloat32,
                                  std::nan(""));
            return;
        }
        with_band(band_, [&](auto zero, GeoTiffWriter::Pixel pixel, std::optional<double> nodata, auto value) {
            // This rank's window as the band holds it, own.rows x own.cols.
            std::vector<decltype(zero)> v(static_cast<size_t>(std::max<int64_t>(r.own.size(), 0)));
            with_label_type(r.label_bytes, [&](auto l) {
                const auto* lab = static_cast<const decltype(l)*>(r.label);
#pragma omp parallel for schedule(static)
                for (int64_t i = 0; i < r.own.rows; ++i)
                    for (int64_t j = 0; j < r.own.cols; ++j)
                        v[static_cast<size_t>(i * r.own.cols + j)] =
                            value(r.u[i * r.stride + j], static_cast<uint32_t>(lab[i * r.stride + j]));
            });
            write_band_from_ranks(comm_, path_, H_, W_, geo_, r.own, v.data(), r.own.cols, pixel, nodata);
        });
    }
    void finish(const std::vector<Attribute>&) override {}

private:
    std::string path_;
    int64_t H_, W_;
    GeoRef geo_;
    Comm& comm_;
    GeoTiffBand band_;
};

class MemorySink final : public ResultSink {
public:
    explicit MemorySink(MemoryResult& out) : out_(out) {}
    void write(const UnwrapResultWindow& r) override {
        for (int64_t i = 0; i < r.own.rows; ++i) {
            const int64_t src = i * r.stride, dst = (r.own.row0 + i) * out_.W + r.own.col0;
            std::memcpy(out_.u.data() + dst, r.u + src, static_cast<size_t>(r.own.cols) * sizeof(float));
            with_label_type(r.label_bytes, [&](auto l) {
                const auto* lab = static_cast<const decltype(l)*>(r.label) + src;
                for (int64_t j = 0; j < r.own.cols; ++j) out_.label[static_cast<size_t>(dst + j)] = lab[j];
            });
            if (!out_.cycles.empty() && r.cycles)
                std::memcpy(out_.cycles.data() + dst, r.cycles + src, static_cast<size_t>(r.own.cols) * sizeof(int32_t));
        }
    }
    void finish(const std::vector<Attribute>& attrs) override { out_.attributes = attrs; }

private:
    MemoryResult& out_;
};

}  // namespace

void write_geotiff_from_ranks(Comm& comm, const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                              const Window& own, const float* data, int64_t stride) {
    write_band_from_ranks(comm, path, H, W, geo, own, data, stride, GeoTiffWriter::Pixel::kFloat32, std::nan(""));
}

std::unique_ptr<ResultSink> hdf5_result_sink(Hdf5Writer& out, int compress_phase) {
    return std::make_unique<Hdf5Sink>(out, compress_phase);
}

std::unique_ptr<ResultSink> hdf5_windows_sink(Hdf5Writer& out, int compress_phase) {
    return std::make_unique<Hdf5WindowsSink>(out, compress_phase);
}

std::unique_ptr<ResultSink> geotiff_from_hdf5_sink(const Hdf5Writer& out, const std::string& path, int64_t H,
                                                   int64_t W, const GeoRef& geo, Comm& comm, GeoTiffBand band) {
    return std::make_unique<GeoTiffFromHdf5Sink>(out, path, H, W, geo, comm, band);
}

std::unique_ptr<ResultSink> geotiff_result_sink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                                                Comm& comm, GeoTiffBand band) {
    return std::make_unique<GeoTiffSink>(path, H, W, geo, comm, band);
}

std::unique_ptr<ResultSink> memory_result_sink(MemoryResult& out) { return std::make_unique<MemorySink>(out); }

}  // namespace tessera
