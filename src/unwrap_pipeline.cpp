#include "src/unwrap_pipeline.h"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numbers>

#include "io/error_agreement.h"
#include "io/geotiff_writer.h"
#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/raster_reader.h"
#include "src/host_buffer.h"
#include "src/progress.h"
#include "src/quicklook.h"
#include "src/rank_device.h"
#include "src/result_attributes.h"
#include "src/unwrap_region.h"
#include "partition/comm.h"
#include "partition/rank_grid.h"

namespace tessera {

namespace {

// Tests end a job from one rank: TESSERA_INJECT_ERROR="RANK:STAGE" (section 7, MPI tests).
void inject_error_for_tests(int rank, const char* stage) {
    static const char* spec = std::getenv("TESSERA_INJECT_ERROR");
    if (!spec) return;
    const std::string s(spec);
    const auto colon = s.find(':');
    if (colon != std::string::npos && std::to_string(rank) == s.substr(0, colon) && s.substr(colon + 1) == stage)
        throw std::runtime_error("injected error on rank " + std::to_string(rank) + " at stage " + stage);
}

constexpr int64_t kRowBlock = 256;                       // rows per coherence/mask read
constexpr float kMaxAbsPhase = 64.0f * std::numbers::pi_v<float>;  // section 2 bounds |q|

// Inputs folded into phase (0 at invalid) and flags (kInvalid, kLowCoherence).
// Reads the buffer window (own + halo); returns the largest |phase| seen. Phase rows are
// reported to `ready` as they are read where no mask or coherence changes them afterwards.
float read_inputs(const UnwrapOptions& opt, const RasterReader& in, const RegionArrays& a, const RowsReady& ready) {
    const Window own = a.buf;
    HostBuffer<uint8_t> valid(static_cast<size_t>(a.buf.size()));
    in.read_phase(own, a.phase, valid.data(), a.buf.cols, opt.mask.empty() && opt.coherence.empty() ? ready : RowsReady{});
    float worst = 0;
#pragma omp parallel for reduction(max : worst)
    for (int64_t i = 0; i < a.buf.size(); ++i) {
        a.flags[i] = valid[static_cast<size_t>(i)] ? 0 : kInvalid;
        worst = std::max(worst, std::fabs(a.phase[i]));
    }
    if (!opt.mask.empty()) {
        RasterReader m(opt.mask, 1);
        std::vector<uint8_t> buf(static_cast<size_t>(kRowBlock * own.cols));
        for (int64_t r = own.row0; r < own.row0 + own.rows; r += kRowBlock) {
            Window w{r, own.col0, std::min(kRowBlock, own.row0 + own.rows - r), own.cols};
            m.read_mask(w, buf.data(), own.cols);
            for (int64_t i = 0; i < w.rows; ++i)
                for (int64_t j = 0; j < w.cols; ++j)
                    if (!buf[static_cast<size_t>(i * w.cols + j)]) {
                        a.flags[a.index(r + i, own.col0 + j)] |= kInvalid;
                        a.phase[a.index(r + i, own.col0 + j)] = 0.0f;
                    }
        }
    }
    if (!opt.coherence.empty()) {
        RasterReader c(opt.coherence, 1);
        std::vector<float> buf(static_cast<size_t>(kRowBlock * own.cols));
        const float thr = static_cast<float>(opt.min_coherence);
        for (int64_t r = own.row0; r < own.row0 + own.rows; r += kRowBlock) {
            Window w{r, own.col0, std::min(kRowBlock, own.row0 + own.rows - r), own.cols};
            c.read_float(w, buf.data(), own.cols);
            for (int64_t i = 0; i < w.rows; ++i)
                for (int64_t j = 0; j < w.cols; ++j) {
                    const float g = buf[static_cast<size_t>(i * w.cols + j)];
                    const int64_t p = a.index(r + i, own.col0 + j);
                    if (!(g > 0.0f)) {  // zero or NaN coherence is masked, as SNAPHU and dolphin do
                        a.flags[p] |= kInvalid;
                        a.phase[p] = 0.0f;
                    } else if (g < thr) {
                        a.flags[p] |= kLowCoherence;
                    }
                }
        }
    }
    return worst;
}

// Setup errors are agreed on: the lowest failing rank's line is thrown on every rank.
void agree(Comm& comm, const std::function<void()>& step) { agree_on_errors(comm.get(), step); }

void check_same_size(const std::string& path, const RasterInfo& info, const RasterInfo& ref) {
    if (info.rows != ref.rows || info.cols != ref.cols)
        throw InputError(path, "size " + std::to_string(info.cols) + "x" + std::to_string(info.rows) +
                                   " (cols x rows) differs from the phase's " + std::to_string(ref.cols) + "x" +
                                   std::to_string(ref.rows));
}

}  // namespace

UnwrapReport run_unwrap(const UnwrapOptions& opt, MPI_Comm mpi_comm) {
    using clock = std::chrono::steady_clock;
    const auto t_start = clock::now();
    Comm comm(mpi_comm);
    const int rank = comm.rank();
    UnwrapReport rep;
    Progress progress(opt.quiet || rank != 0);
    auto t_stage = clock::now();
    auto stage_done = [&](const char* name) {
        const auto now = clock::now();
        const double s = std::chrono::duration<double>(now - t_stage).count();
        rep.times.push_back({name, s});
        progress.stage(name, s);
        t_stage = now;
    };

    // --- inputs and their checks (section 7), agreed on by every rank ---
    std::unique_ptr<RasterReader> in;
    RankGrid grid;
    agree(comm, [&] {
        in = std::make_unique<RasterReader>(opt.input, opt.band);
        const RasterInfo& info = in->info();
        if (info.rows < 2 || info.cols < 2)
            throw InputError(opt.input, "image is " + std::to_string(info.cols) + "x" + std::to_string(info.rows) +
                                            " (cols x rows); at least 2x2 is needed");
        if (!opt.coherence.empty()) check_same_size(opt.coherence, RasterReader(opt.coherence, 1).info(), info);
        if (!opt.mask.empty()) check_same_size(opt.mask, RasterReader(opt.mask, 1).info(), info);
        if (opt.reference && (opt.reference->first < 0 || opt.reference->first >= info.rows ||
                              opt.reference->second < 0 || opt.reference->second >= info.cols))
            throw InputError(opt.input, "reference pixel (" + std::to_string(opt.reference->first) + ", " +
                                            std::to_string(opt.reference->second) + ") is outside the image");
        if (opt.tile_size < 2) throw InputError(opt.input, "--tile-size must be at least 2");
        if (opt.max_pair_distance < 1 || opt.max_pair_distance > 1024)
            throw InputError(opt.input, "--cut-radius must be in [1, 1024]");
        if (!opt.geotiff.empty()) check_output_directory(opt.geotiff);
        if (!opt.quicklook.empty()) check_output_directory(opt.quicklook);
        grid = make_rank_grid(TileGrid(info.rows, info.cols, opt.tile_size), comm.size(), opt.rank_grid, opt.input);
    });
    if (opt.backend == Backend::kCuda) select_rank_device(mpi_comm, opt.device, opt.share_gpus);
    const RasterInfo& info = in->info();
    const int64_t H = info.rows, W = info.cols;
    // Created before any work so that a bad output path fails first; removed unless committed.
    std::unique_ptr<Hdf5Writer> out;
    agree(comm, [&] { out = std::make_unique<Hdf5Writer>(opt.output, mpi_comm, H, W); });
    rep.rows = H;
    rep.cols = W;

    const Window own = grid.own(rank), buf = grid.buffer(rank);
    HostBuffer<float> phase(static_cast<size_t>(buf.size()));
    HostBuffer<uint8_t> flags(static_cast<size_t>(buf.size()));
    HostBuffer<uint32_t> label(static_cast<size_t>(buf.size()));
    HostBuffer<int32_t> cycles(opt.save_cycles ? static_cast<size_t>(buf.size()) : 0);
    RegionArrays a{H, W, buf, phase.data(), flags.data(), label.data(), opt.save_cycles ? cycles.data() : nullptr};
    // The read fills the region's arrays once the backend's region exists, so that the CUDA
    // backend uploads phase rows while the rest is read (issue 5; kernels/region.h).
    const RegionFill read_stage = [&](const RowsReady& ready) {
        float worst = 0;
        agree(comm, [&] {
            worst = read_inputs(opt, *in, a, ready);
            inject_error_for_tests(rank, "read");
        });
        int64_t valid = 0;
#pragma omp parallel for reduction(+ : valid) schedule(static)
        for (int64_t r = own.row0; r < own.row0 + own.rows; ++r)
            for (int64_t c = own.col0; c < own.col0 + own.cols; ++c) valid += !(flags[static_cast<size_t>(a.index(r, c))] & kInvalid);
        valid = comm.sum(valid);
        worst = static_cast<float>(comm.max(static_cast<double>(worst)));
        agree(comm, [&] {
            if (worst > kMaxAbsPhase)
                throw InputError(opt.input, "values up to " + std::to_string(worst) +
                                                " rad: not a wrapped phase (expected |phase| <= 64 pi)");
            if (valid == 0) throw InputError(opt.input, "no valid pixels (all nodata or masked)");
            if (opt.reference && own.contains(opt.reference->first, opt.reference->second) &&
                (flags[static_cast<size_t>(a.index(opt.reference->first, opt.reference->second))] & kUnreliable))
                throw InputError(opt.input, "reference pixel is invalid (nodata, masked or below --min-coherence)");
        });
        rep.valid = valid;
        stage_done("read");
    };
    // Labels stay as narrow as they fit: the writer widens them chunk by chunk (label_width.h).
    UnwrapParams params{opt.max_pair_distance, opt.min_component_size, opt.reference, opt.backend, true};
    std::vector<Residue> res;
    const RegionStats st = unwrap_region(
        a, grid, comm, params, opt.save_residues ? &res : nullptr,
        [&](const char* s) {
            inject_error_for_tests(rank, s);
            stage_done(s);
        },
        read_stage);
    add_region_stats(rep, st);
    rep.ranks = comm.size();
    rep.rank_rows = grid.P;
    rep.rank_cols = grid.Q;
    rep.bytes_sent_max = comm.max(st.bytes_sent);
    rep.bytes_sent_total = comm.sum(st.bytes_sent);

    // --- outputs (section 7): every rank writes its own window collectively ---
    const double nan = std::nan("");
    const int64_t o = a.index(own.row0, own.col0), stride = buf.cols;
    // A noisy float phase deflates about 1.3x at ~45 MB/s per core (README): off by default.
    out->set_deflate(opt.compress_phase);
    out->write_f32("unwrapped_phase", own, phase.data() + o, stride,
                   {{"units", std::string("radians")},
                    {"description", std::string("unwrapped phase u = phi + 2 pi k; NaN where invalid")},
                    {"_FillValue", nan}});
    out->set_deflate(1);
    const int lb = st.label_bytes;
    out->write_labels("connected_components", own, static_cast<const uint8_t*>(a.label) + o * lb, lb, stride,
                   {{"description", std::string("connected component 1..N by size descending; 0 = invalid, low "
                                                "coherence or small component")}});
    if (opt.save_cycles)
        out->write_i32("cycles", own, cycles.data() + o, stride,
                       {{"description", std::string("integer cycles k: u = phi + 2 pi k (0 where invalid)")}});
    if (opt.save_residues) {
        std::vector<int8_t> q(static_cast<size_t>(own.size()), 0);
        for (const Residue& x : res)
            q[static_cast<size_t>((x.r - own.row0) * own.cols + (x.c - own.col0))] += static_cast<int8_t>(x.sign);
        out->write_i8("residues", own, q.data(), own.cols,
                      {{"description", std::string("residue charge of plaquette (r,c), corners (r,c)..(r+1,c+1)")}});
    }
    if (opt.save_cuts) {
        std::vector<uint8_t> b(static_cast<size_t>(own.size()));
        for (int64_t i = 0; i < own.rows; ++i)
            for (int64_t j = 0; j < own.cols; ++j)
                b[static_cast<size_t>(i * own.cols + j)] =
                    flags[static_cast<size_t>(a.index(own.row0 + i, own.col0 + j))] & (kBlockRight | kBlockDown);
        out->write_u8("branch_cuts", own, b.data(), own.cols,
                      {{"description", std::string("blocked edges: bit 0 right edge, bit 1 down edge (cuts and "
                                                  "edges touching invalid pixels)")}});
    }
    std::vector<Attribute> attrs = result_attributes(opt, opt.input, rep, info);
    // Stage times: the slowest rank's, so that every rank writes the same values.
    for (StageTime& t : rep.times) {
        t.seconds = comm.max(t.seconds);
        attrs.push_back({"time_" + t.stage, t.seconds});
    }
    if (!opt.quicklook.empty()) {
        // Each rank reduces its window to quicklook cells; rank 0 draws them (a failed PNG leaves no .h5).
        const QuicklookGrid qg = quicklook_grid(H, W, 1024);
        const auto parts = comm.gatherv(quicklook_cells(phase.data() + o, static_cast<const uint8_t*>(a.label) + o * lb, own, stride, qg, lb), 0);
        std::string err;
        if (rank == 0) {
            try {
                write_quicklook_cells(opt.quicklook, qg, parts);
            } catch (const std::exception& e) {
                err = e.what();
            }
        }
        if (comm.max(int64_t{!err.empty()}))
            throw InputError::everywhere(rank == 0 ? err : opt.quicklook + ": quicklook failed");
    }
    out->write_attributes(attrs);
    out->commit();
    if (!opt.geotiff.empty()) {
        // Rank 0 copies the committed dataset through GDAL, so no rank holds the whole image.
        std::string err;
        if (rank == 0) {
            try {
                geotiff_from_hdf5(opt.output, "unwrapped_phase", opt.geotiff,
                                  GeoRef{info.has_geotransform, info.geotransform, info.projection_wkt}, nan);
            } catch (const std::exception& e) {
                err = e.what();
            }
        }
        int64_t failed = comm.max(int64_t{!err.empty()});
        if (failed) {
            if (rank == 0) std::remove(opt.output.c_str());
            throw InputError::everywhere(rank == 0 ? err : opt.geotiff + ": GeoTIFF output failed");
        }
    }
    stage_done("write");
    rep.total_seconds = comm.max(std::chrono::duration<double>(clock::now() - t_start).count());
    return rep;
}

}  // namespace tessera
