// `tessera hologram IN... OUT` (issue items 1 and 4); see hologram_command.h.
#include "app/hologram_command.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "backend/backend.h"
#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/output_set.h"
#include "app/memory_budget.h"
#include "app/batch.h"
#include "pipeline/rank_device.h"
#include "pipeline/frame_lanes.h"

namespace tessera {

namespace {

std::string size_text(int64_t rows, int64_t cols) {
    return std::to_string(cols) + "x" + std::to_string(rows) + " (cols x rows)";
}

// At most this many frame sizes keep a plan (a batch normally has one size).
constexpr size_t kMaxPlans = 4;

}  // namespace

// Disk space for one frame's files (float32 phase, and the amplitude when saved): up front for
// a single frame, as each is written in a batch, whose sizes are known frame by frame (issue 14).
void check_frame_space(const std::pair<std::string, std::string>& out, int64_t pixels, bool amplitude) {
    std::vector<OutputNeed> needs{{out.first, pixels * 4 + (1 << 20)}};
    if (amplitude) needs.push_back({out.second, pixels * 4 + (1 << 20)});
    check_disk_space(needs);
}

RasterInfo read_hologram(const std::string& path, int band, std::vector<float>& intensity) {
    RasterReader in(path, band);
    const RasterInfo& info = in.info();
    if (info.is_complex)
        throw InputError(path, "complex raster (" + info.data_type +
                                   "): a hologram is a real intensity image; unwrap a complex field with "
                                   "`tessera unwrap`");
    if (info.rows < 2 || info.cols < 2)
        throw InputError(path, "image is " + size_text(info.rows, info.cols) + "; at least 2x2 is needed");
    intensity.resize(static_cast<size_t>(info.rows * info.cols));
    in.read_float(Window{0, 0, info.rows, info.cols}, intensity.data(), info.cols);
    return info;
}

SidebandWindow parse_window(const std::string& name) {
    if (name == "circular") return SidebandWindow::kCircular;
    if (name == "hann") return SidebandWindow::kHann;
    throw InputError::everywhere("--window " + name + ": expected circular or hann");
}

HologramDemodulator::HologramDemodulator(const HologramParams& params, const std::string& reference, int band,
                                         Backend backend, int device)
    : params_(params), reference_(reference), band_(band), backend_(backend), device_(device) {
    (void)backend_ops(backend_);  // one line where it cannot run here
    if (reference_.empty()) return;
    ref_info_ = read_hologram(reference_, band_, intensity_);
    HologramEngine& engine = engine_for(ref_info_.rows, ref_info_.cols);
    try {
        // One carrier for the reference and every frame (detected on the reference unless
        // given): the division then also removes the residual (sub-bin) carrier tilt.
        const CarrierPeak c = engine.keep_as_reference(params_, intensity_.data());
        params_.carrier = std::pair<int64_t, int64_t>{c.row, c.col};
    } catch (const std::invalid_argument& e) {
        throw InputError(reference_, e.what());
    }
}

HologramEngine& HologramDemodulator::engine_for(int64_t rows, int64_t cols) {
    const auto key = std::make_pair(rows, cols);
    auto it = engines_.find(key);
    if (it != engines_.end()) return *it->second;
    if (engines_.size() >= kMaxPlans) engines_.clear();
    return *engines_.emplace(key, backend_ops(backend_).hologram_engine(rows, cols, device_)).first->second;
}

void HologramDemodulator::check(const std::string& path, const RasterInfo& info) const {
    const int64_t H = info.rows, W = info.cols;
    if (info.is_complex)
        throw InputError(path, "complex raster (" + info.data_type + "): a hologram is a real intensity image");
    if (H < 2 || W < 2) throw InputError(path, "image is " + size_text(H, W) + "; at least 2x2 is needed");
    if (!reference_.empty() && (H != ref_info_.rows || W != ref_info_.cols))
        throw InputError(path, "size " + size_text(H, W) + " differs from the reference hologram's " +
                                   size_text(ref_info_.rows, ref_info_.cols) + " (" + reference_ + ")");
    if (params_.carrier && (params_.carrier->first < 0 || params_.carrier->first >= H ||
                            params_.carrier->second < 0 || params_.carrier->second >= W))
        throw InputError(path, "carrier (row " + std::to_string(params_.carrier->first) + ", col " +
                                   std::to_string(params_.carrier->second) + ") is outside the image's " +
                                   size_text(H, W) + " spectrum");
}

void HologramDemodulator::run(const std::string& path, Frame& out, bool want_amplitude) {
    out.info = read_hologram(path, band_, intensity_);
    const int64_t H = out.info.rows, W = out.info.cols, n = H * W;
    check(path, out.info);
    HologramEngine& engine = engine_for(H, W);
    out.phase.resize(static_cast<size_t>(n));
    if (want_amplitude)
        out.amplitude.resize(static_cast<size_t>(n));
    else
        out.amplitude.clear();
    try {
        out.carrier = engine.run(params_, intensity_.data(), out.phase.data(),
                                 want_amplitude ? out.amplitude.data() : nullptr);
    } catch (const std::invalid_argument& e) {
        throw InputError(path, e.what());
    }
    out.filter_radius = filter_radius(params_, H, W, out.carrier);
}

std::vector<std::pair<std::string, std::string>> hologram_outputs(const std::vector<std::string>& inputs,
                                                                  const std::string& output) {
    std::vector<std::pair<std::string, std::string>> r;
    const auto phase = batch_outputs(inputs, output, "_phase.tif");
    const auto amp = batch_outputs(inputs, output, "_amplitude.tif");
    for (size_t i = 0; i < inputs.size(); ++i) {
        std::string a = amp[i];
        if (a == output) {  // one input written to the file OUT: OUT's stem + _amplitude.tif
            const std::filesystem::path p(output);
            a = (p.parent_path() / (p.stem().string() + "_amplitude.tif")).string();
        }
        r.emplace_back(phase[i], a);
    }
    return r;
}

namespace {

constexpr int kRec = 7;  // rows cols carrier-row carrier-col |F| filter-radius seconds

void record(double* r, int64_t rows, int64_t cols, const CarrierPeak& c, double radius, double seconds) {
    r[0] = static_cast<double>(rows);
    r[1] = static_cast<double>(cols);
    r[2] = static_cast<double>(c.row);
    r[3] = static_cast<double>(c.col);
    r[4] = c.magnitude;
    r[5] = radius;
    r[6] = seconds;
}

GeoRef geo_of(const RasterInfo& info, bool compress) {
    GeoRef geo;
    geo.has_geotransform = info.has_geotransform;
    geo.geotransform = info.geotransform;
    geo.projection_wkt = info.projection_wkt;
    geo.compress = compress;
    return geo;
}

}  // namespace

HologramRunReport run_hologram(const HologramRunOptions& opt, MPI_Comm mpi_comm) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    Comm comm(mpi_comm);
    const int rank = comm.rank(), P = comm.size();

    const std::vector<std::string> inputs = expand_inputs(opt.inputs);
    const auto outs = hologram_outputs(inputs, opt.output);
    const auto N = static_cast<int64_t>(inputs.size());
    std::error_code ec;
    const bool dir_mode = N > 1 || std::filesystem::is_directory(opt.output, ec);

    // The GPU of the rank's node-local index (collective, so outside the checks below).
    const auto [local_rank, local_size] =
        opt.backend == Backend::kCuda ? comm.node_local_rank() : std::pair<int, int>{0, 1};

    // Checks before any work: the backend, the reference (every rank reads it), each rank's own frames.
    std::unique_ptr<HologramDemodulator> demod;
    std::vector<RasterInfo> info(static_cast<size_t>(N));
    {
        int64_t bad = -1;
        std::string msg;
        try {
            if (!dir_mode && rank == 0) check_output_directory(opt.output);
            if (rank == 0 && (!dir_mode || std::filesystem::is_directory(opt.output, ec))) {
                // Never an input, never two outputs one file, only regular files (issue 14).
                std::vector<std::string> all_outs, all_ins = inputs;
                for (const auto& [phase, amplitude] : outs) {
                    all_outs.push_back(phase);
                    if (opt.save_field) all_outs.push_back(amplitude);
                }
                all_ins.push_back(opt.reference);
                check_outputs(all_outs, all_ins, opt.overwrite);
            }
            if (rank == 0 && !dir_mode) {  // one frame: its size is known (batches: per frame as written)
                const RasterInfo ri = RasterReader(inputs[0], opt.band).info();
                check_frame_space(outs[0], ri.rows * ri.cols, opt.save_field);
                // A frame in flight: intensity 4, two complex spectra 16, phase and amplitude 8
                // bytes a pixel, in each of the rank's lanes.
                check_memory(inputs[0], ri.rows * ri.cols * 28 * std::max(1, opt.lanes), ri.rows, ri.cols, local_size);
            }
            if (opt.band < 1) throw InputError::everywhere("--band must be at least 1");
            const BackendOps& ops = backend_ops(opt.backend);
            int device = -1;
            try {
                device = ops.select_device(local_rank, local_size, -1, /*share=*/true);
            } catch (const std::runtime_error& e) {
                throw InputError::everywhere(std::string("--backend cuda: ") + e.what());
            }
            demod = std::make_unique<HologramDemodulator>(opt.params, opt.reference, opt.band, opt.backend, device);
        } catch (const InputError& e) {
            bad = 0;
            msg = e.what();
        }
        for (int64_t i = rank; bad < 0 && i < N; i += P) {
            try {
                RasterReader r(inputs[static_cast<size_t>(i)], opt.band);
                demod->check(r.path(), r.info());
                info[static_cast<size_t>(i)] = r.info();
            } catch (const InputError& e) {
                bad = i + 1;
                msg = e.what();
            }
        }
        agree_on_first_error(comm, bad, msg);
    }
    if (dir_mode) prepare_output_directory(comm, opt.output);  // created only for valid inputs

    std::vector<double> rec(static_cast<size_t>(N) * kRec, 0.0);
    FrameFailures failures;
    const int lanes = opt.reference.empty() ? (opt.lanes > 0 ? opt.lanes : default_lanes(opt.backend)) : 1;
    if (opt.reference.empty()) {
        // The frames over the rank's lanes; each lane writes its frames' GeoTIFFs (GDAL is
        // thread-safe for distinct datasets).
        FrameOptions fo;
        fo.hologram = opt.params;
        fo.unwrap.backend = opt.backend;
        fo.lanes = lanes;
        fo.demodulate_only = true;
        fo.amplitude = opt.save_field;
        const FrameWriter write = [&](int64_t i, const FrameView& v, double seconds) {
            const auto iu = static_cast<size_t>(i);
            const GeoRef geo = geo_of(info[iu], opt.compress);
            check_frame_space(outs[iu], v.rows * v.cols, opt.save_field);
            OutputSet frame_outputs;  // phase and amplitude in place together or neither (issue 14)
            {
                CollectOutputs collect(frame_outputs);
                write_geotiff_f32(outs[iu].first, v.rows, v.cols, v.u, geo, std::nullopt);
                if (opt.save_field) write_geotiff_f32(outs[iu].second, v.rows, v.cols, v.amplitude, geo, std::nullopt);
            }
            frame_outputs.commit();
            record(&rec[iu * kRec], v.rows, v.cols, v.carrier, filter_radius(opt.params, v.rows, v.cols, v.carrier),
                   seconds);
        };
        for (const auto& [size, idx] : frames_by_size(info, rank, P))
            run_input_frames(inputs, idx, size.first, size.second, opt.band, fo, write, failures, N > 1);
    } else {
        // Frame after frame: the demodulator keeps the reference's field.
        HologramDemodulator::Frame f;
        for (int64_t i = rank; i < N; i += P) {
            const auto tf = clock::now();
            const auto iu = static_cast<size_t>(i);
            try {
                demod->run(inputs[iu], f, opt.save_field);
                const GeoRef geo = geo_of(f.info, opt.compress);
                check_frame_space(outs[iu], f.info.rows * f.info.cols, opt.save_field);
                OutputSet frame_outputs;  // phase and amplitude in place together or neither (issue 14)
                {
                    CollectOutputs collect(frame_outputs);
                    write_geotiff_f32(outs[iu].first, f.info.rows, f.info.cols, f.phase.data(), geo, std::nullopt);
                    if (opt.save_field)
                        write_geotiff_f32(outs[iu].second, f.info.rows, f.info.cols, f.amplitude.data(), geo,
                                          std::nullopt);
                }
                frame_outputs.commit();
            } catch (const InputError& e) {
                failures.add(i, e.what(), N > 1);
                continue;
            }
            record(&rec[iu * kRec], f.info.rows, f.info.cols, f.carrier, f.filter_radius,
                   std::chrono::duration<double>(clock::now() - tf).count());
        }
    }
    failures.agree(comm, N);
    HologramRunReport rep;
    rep.ranks = P;
    rep.lanes = lanes;
    const std::vector<double> all = comm.sum_at(rec, 0);
    const double wall = comm.max(std::chrono::duration<double>(clock::now() - t0).count());
    rep.total_seconds = wall;
    for (int64_t i = 0; i < N; ++i) {
        const double* r = &all[static_cast<size_t>(i) * kRec];
        HologramFrameReport fr;
        fr.input = inputs[static_cast<size_t>(i)];
        fr.output = outs[static_cast<size_t>(i)].first;
        fr.rows = static_cast<int64_t>(r[0]);
        fr.cols = static_cast<int64_t>(r[1]);
        fr.carrier = CarrierPeak{static_cast<int64_t>(r[2]), static_cast<int64_t>(r[3]), r[4]};
        fr.filter_radius = r[5];
        fr.seconds = r[6];
        rep.frames.push_back(fr);
    }
    return rep;
}

namespace {

struct HologramCli {
    HologramRunOptions opt;
    std::vector<std::string> files;  // IN... OUT (one positional: CLI11 gives a leading vector everything)
    std::vector<int64_t> carrier;
    std::string window = "circular";
    std::string backend = "auto";
};

HologramCli& cli_state() {
    static HologramCli s;
    return s;
}

}  // namespace

CLI::App* add_hologram_command(CLI::App& app) {
    HologramCli& s = cli_state();
    auto* h = app.add_subcommand("hologram",
                                 "off-axis hologram(s) (real intensity, any GDAL raster) -> wrapped phase GeoTIFF(s)");
    h->add_option("FILES", s.files,
                  "IN... OUT: hologram rasters and/or glob patterns (quoted: 'frames/*.tif'), then the output: "
                  "a GeoTIFF (one input) or a directory (several: <stem>_phase.tif each, created if missing)")
        ->required()
        ->expected(2, -1);
    h->add_option("--carrier", s.carrier,
                  "ROW COL of the +1 order in the centred (fft-shifted) spectrum (default: detected)")
        ->expected(2)
        ->allow_extra_args(false);
    h->add_option("--dc-radius", s.opt.params.dc_exclusion,
                  "bins around the zero frequency never taken as the carrier (default min(rows,cols)/16)");
    h->add_option("--filter-radius", s.opt.params.filter_radius,
                  "sideband filter radius in bins (default: a third of the carrier's distance from zero)");
    h->add_option("--window", s.window, "sideband filter: circular | hann")
        ->capture_default_str()
        ->check(CLI::IsMember({"circular", "hann"}));
    h->add_option("--reference", s.opt.reference,
                  "hologram recorded without the sample: its field is divided out (aberrations, carrier tilt)");
    h->add_option("--band", s.opt.band, "band of IN (1-based)")->capture_default_str()->check(CLI::Range(1, 65535));
    h->add_flag("--save-field", s.opt.save_field, "also write the field amplitude (<stem>_amplitude.tif)");
    h->add_flag("--compress", s.opt.compress, "DEFLATE the output GeoTIFFs");
    h->add_option("--backend", s.backend, "auto (CUDA when a GPU is visible) | cpu | cuda")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    h->add_option("--lanes", s.opt.lanes,
                  "frames in flight per rank, each lane with its own plan and buffers (CUDA: its own stream) "
                  "(default: 4 on the cuda backend, 1 on cpu; with --reference frames go one at a time)")
        ->check(CLI::Range(1, 1024));
    h->add_flag("-q,--quiet", s.opt.quiet, "no report");
    h->add_flag("--overwrite", s.opt.overwrite, "replace output files that exist (regular files only; without it an existing output is an error)");
    return h;
}

void run_hologram_command() {
    HologramCli& s = cli_state();
    if (s.files.size() < 2) throw InputError::everywhere("hologram: expected IN... OUT (at least one input and the output)");
    s.opt.inputs.assign(s.files.begin(), s.files.end() - 1);
    s.opt.output = s.files.back();
    if (!s.carrier.empty()) s.opt.params.carrier = std::pair<int64_t, int64_t>{s.carrier[0], s.carrier[1]};
    s.opt.params.window = parse_window(s.window);
    // Chosen once for the run; auto needs this build's CUDA backend and a visible GPU.
    s.opt.backend = resolve_backend(s.backend);
    const HologramRunReport rep = run_hologram(s.opt, MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (s.opt.quiet || rank != 0) return;
    const auto n = static_cast<double>(rep.frames.size());
    std::printf("tessera hologram: %zu frame(s) on %d rank(s) x %d lane(s), %s backend, %s window, %.3f s, "
                "%.2f frames/s\n",
                rep.frames.size(), rep.ranks, rep.lanes, s.opt.backend == Backend::kCuda ? "cuda" : "cpu",
                s.window.c_str(), rep.total_seconds, n / rep.total_seconds);
    for (const HologramFrameReport& f : rep.frames)
        std::printf("  %s -> %s: %lldx%lld, carrier (row %lld, col %lld) |F| %.4g, filter radius %.1f, %.3f s\n",
                    f.input.c_str(), f.output.c_str(), static_cast<long long>(f.cols), static_cast<long long>(f.rows),
                    static_cast<long long>(f.carrier.row), static_cast<long long>(f.carrier.col), f.carrier.magnitude,
                    f.filter_radius, f.seconds);
}

}  // namespace tessera
