#include "io/result_sink.h"

#include <cmath>
#include <cstring>

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

class GeoTiffSink final : public ResultSink {
public:
    GeoTiffSink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo, Comm& comm)
        : path_(path), H_(H), W_(W), geo_(geo), comm_(comm) {}
    void write(const UnwrapResultWindow& r) override {
        write_geotiff_from_ranks(comm_, path_, H_, W_, geo_, r.own, r.u, r.stride);
    }
    void finish(const std::vector<Attribute>&) override {}

private:
    std::string path_;
    int64_t H_, W_;
    GeoRef geo_;
    Comm& comm_;
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
    std::unique_ptr<GeoTiffWriter> tif;  // rank 0's, made with the first strip
    gather_strips_to_root(
        comm, own, data, stride, H, W, GeoTiffWriter::kStripRows,
        [&](int64_t r0, int64_t nr, const float* rows) {
            if (!tif) tif = std::make_unique<GeoTiffWriter>(path, H, W, GeoTiffWriter::Pixel::kFloat32, geo, std::nan(""));
            tif->write_rows(r0, nr, rows);
            if (r0 + nr == H) tif->finish();
        },
        path + ": GeoTIFF output failed");
}

std::unique_ptr<ResultSink> hdf5_result_sink(Hdf5Writer& out, int compress_phase) {
    return std::make_unique<Hdf5Sink>(out, compress_phase);
}

std::unique_ptr<ResultSink> geotiff_result_sink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                                                Comm& comm) {
    return std::make_unique<GeoTiffSink>(path, H, W, geo, comm);
}

std::unique_ptr<ResultSink> memory_result_sink(MemoryResult& out) { return std::make_unique<MemorySink>(out); }

}  // namespace tessera
