#include "io/result_sink.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

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

// This rank's window of the result as `band` holds it, own.rows x own.cols.
template <typename T, typename F>
std::vector<T> window_of(const UnwrapResultWindow& r, F value_at) {
    std::vector<T> out(static_cast<size_t>(std::max<int64_t>(r.own.size(), 0)));
    with_label_type(r.label_bytes, [&](auto l) {
        const auto* lab = static_cast<const decltype(l)*>(r.label);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < r.own.rows; ++i)
            for (int64_t j = 0; j < r.own.cols; ++j)
                out[static_cast<size_t>(i * r.own.cols + j)] =
                    value_at(r.u[i * r.stride + j], static_cast<uint32_t>(lab[i * r.stride + j]));
    });
    return out;
}

class GeoTiffSink final : public ResultSink {
public:
    GeoTiffSink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo, Comm& comm, GeoTiffBand band)
        : path_(path), H_(H), W_(W), geo_(geo), comm_(comm), band_(band) {}
    void write(const UnwrapResultWindow& r) override {
        using Pixel = GeoTiffWriter::Pixel;
        const int64_t n = r.own.cols;
        switch (band_) {
            case GeoTiffBand::kPhase:
                write_band_from_ranks(comm_, path_, H_, W_, geo_, r.own, r.u, r.stride, Pixel::kFloat32, std::nan(""));
                break;
            case GeoTiffBand::kComponents: {
                const auto v = window_of<uint32_t>(r, [](float, uint32_t l) { return l; });
                write_band_from_ranks(comm_, path_, H_, W_, geo_, r.own, v.data(), n, Pixel::kUInt32, 0.0);
                break;
            }
            case GeoTiffBand::kDolphinPhase: {
                const auto v = window_of<float>(r, [](float u, uint32_t) { return std::isnan(u) ? 0.0f : u; });
                write_band_from_ranks(comm_, path_, H_, W_, geo_, r.own, v.data(), n, Pixel::kFloat32, 0.0);
                break;
            }
            case GeoTiffBand::kDolphinComponents: {
                const auto v = window_of<uint16_t>(r, [](float u, uint32_t l) -> uint16_t {
                    if (std::isnan(u)) return kDolphinComponentsNodata;
                    return l < kDolphinComponentsNodata ? static_cast<uint16_t>(l) : 0;
                });
                write_band_from_ranks(comm_, path_, H_, W_, geo_, r.own, v.data(), n, Pixel::kUInt16,
                                      double{kDolphinComponentsNodata});
                break;
            }
        }
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

std::unique_ptr<ResultSink> geotiff_result_sink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                                                Comm& comm, GeoTiffBand band) {
    return std::make_unique<GeoTiffSink>(path, H, W, geo, comm, band);
}

std::unique_ptr<ResultSink> memory_result_sink(MemoryResult& out) { return std::make_unique<MemorySink>(out); }

}  // namespace tessera
