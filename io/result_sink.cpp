#include "io/result_sink.h"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

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
        out_.write_attributes(attrs);
        out_.commit();
    }

private:
    Hdf5Writer& out_;
    int compress_;
};

// Rank 0 reads /unwrapped_phase of the closed file `h5` strip by strip into `tif`.
void copy_phase_to_geotiff(const std::string& h5, GeoTiffWriter& tif, int64_t H, int64_t W) {
    const hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) throw std::runtime_error("cannot reopen the result " + h5);
    const hid_t d = H5Dopen2(f, "unwrapped_phase", H5P_DEFAULT);
    const hid_t fs = d < 0 ? -1 : H5Dget_space(d);
    bool ok = fs >= 0;
    std::vector<float> rows(static_cast<size_t>(GeoTiffWriter::kStripRows * W));
    for (int64_t r0 = 0; ok && r0 < H; r0 += GeoTiffWriter::kStripRows) {
        const int64_t nr = std::min(GeoTiffWriter::kStripRows, H - r0);
        const hsize_t start[2] = {static_cast<hsize_t>(r0), 0}, count[2] = {static_cast<hsize_t>(nr), static_cast<hsize_t>(W)};
        const hid_t ms = H5Screate_simple(2, count, nullptr);
        ok = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr) >= 0 &&
             H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, rows.data()) >= 0;
        H5Sclose(ms);
        if (ok) tif.write_rows(r0, nr, rows.data());
    }
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    H5Fclose(f);
    if (!ok) throw std::runtime_error("cannot read /unwrapped_phase back from " + h5);
    tif.finish();
}

class GeoTiffFromHdf5Sink final : public ResultSink {
public:
    GeoTiffFromHdf5Sink(const Hdf5Writer& out, const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                        Comm& comm)
        : out_(out), path_(path), H_(H), W_(W), geo_(geo), comm_(comm) {}
    void write(const UnwrapResultWindow&) override {}
    void finish(const std::vector<Attribute>&) override {
        std::string err;
        if (comm_.rank() == 0) {
            try {
                GeoTiffWriter tif(path_, H_, W_, GeoTiffWriter::Pixel::kFloat32, geo_, std::nan(""));
                copy_phase_to_geotiff(out_.temporary_path(), tif, H_, W_);
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

std::unique_ptr<ResultSink> hdf5_windows_sink(Hdf5Writer& out, int compress_phase) {
    return std::make_unique<Hdf5WindowsSink>(out, compress_phase);
}

std::unique_ptr<ResultSink> geotiff_from_hdf5_sink(const Hdf5Writer& out, const std::string& path, int64_t H,
                                                   int64_t W, const GeoRef& geo, Comm& comm) {
    return std::make_unique<GeoTiffFromHdf5Sink>(out, path, H, W, geo, comm);
}

std::unique_ptr<ResultSink> geotiff_result_sink(const std::string& path, int64_t H, int64_t W, const GeoRef& geo,
                                                Comm& comm) {
    return std::make_unique<GeoTiffSink>(path, H, W, geo, comm);
}

std::unique_ptr<ResultSink> memory_result_sink(MemoryResult& out) { return std::make_unique<MemorySink>(out); }

}  // namespace tessera
