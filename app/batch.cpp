// Batches of frames over MPI ranks and frame lanes (issue item 4); see batch.h.
#include "app/batch.h"

#include <CLI/CLI.hpp>
#include <glob.h>
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "backend/backend.h"
#include "io/phase_source.h"
#include "io/unwrap_result_writer.h"
#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/output_set.h"
#include "io/png_writer.h"
#include "io/raster_reader.h"
#include "pipeline/frame_lanes.h"
#include "app/hologram_command.h"
#include "app/partner_files.h"
#include "pipeline/rank_device.h"
#include "pipeline/result_attributes.h"

namespace tessera {

namespace fs = std::filesystem;

std::vector<std::string> expand_inputs(const std::vector<std::string>& items) {
    if (items.empty()) throw InputError::everywhere("no input given");
    std::vector<std::string> out;
    std::set<std::string> seen;
    auto add = [&](const std::string& s) {
        if (seen.insert(fs::path(s).lexically_normal().string()).second) out.push_back(s);
    };
    for (const std::string& item : items) {
        std::error_code ec;
        if (item.find_first_of("*?[") == std::string::npos || fs::exists(item, ec)) {
            add(item);
            continue;
        }
        glob_t g{};
        const int rc = glob(item.c_str(), 0, nullptr, &g);
        if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
            globfree(&g);
            throw InputError::everywhere(item + ": no file matches this pattern");
        }
        if (rc != 0) {
            globfree(&g);
            throw InputError::everywhere(item + ": cannot expand this pattern (" +
                                         (rc == GLOB_NOSPACE ? "out of memory" : "read error") + ")");
        }
        for (size_t k = 0; k < g.gl_pathc; ++k) add(g.gl_pathv[k]);  // sorted by glob(3)
        globfree(&g);
    }
    return out;
}

std::vector<std::string> batch_outputs(const std::vector<std::string>& inputs, const std::string& out,
                                       const std::string& suffix) {
    std::error_code ec;
    if (inputs.size() == 1 && !fs::is_directory(out, ec)) return {out};
    std::vector<std::string> r;
    std::set<std::string> names;
    for (const std::string& in : inputs) {
        const std::string name = fs::path(in).stem().string() + suffix;
        const std::string path = (fs::path(out) / name).string();
        if (!names.insert(name).second)
            throw InputError::everywhere(path + ": two inputs would write this file (same file name stem; "
                                                "rename one, e.g. " + in + ")");
        r.push_back(path);
    }
    return r;
}

void prepare_output_directory(Comm& comm, const std::string& dir) {
    std::string msg;
    if (comm.rank() == 0) {
        std::error_code ec;
        if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
            msg = dir + ": output for several inputs must be a directory, and this is a file";
        else if (!fs::exists(dir, ec) && (fs::create_directories(dir, ec), ec))
            msg = dir + ": cannot create the output directory (" + ec.message() + ")";
        else if (access(dir.c_str(), W_OK | X_OK) != 0)
            msg = dir + ": output directory is not writable";
    }
    agree_on_first_error(comm, msg.empty() ? -1 : 0, msg);
}

int default_lanes(Backend backend) { return backend == Backend::kCuda ? 4 : 1; }

std::string lanes_unsupported(const UnwrapOptions& base, const FrameBatchOptions& frames) {
    if (!frames.from_hologram) return "wrapped-phase inputs";
    const std::pair<bool, const char*> needs[] = {
        {!frames.hologram_reference.empty(), "--hologram-reference"},
        {!base.coherence.empty(), "--coherence"},
        {!base.mask.empty(), "--mask"},
        {!geotiff_outputs(base).empty(), "--geotiff, --conncomp-geotiff, --dolphin"},
        {!base.quicklook.empty(), "--quicklook"},
        {base.save_cycles, "--save-cycles"},
        {base.save_residues, "--save-residues"},
        {base.save_cuts, "--save-cuts"},
        {base.guide_window > 1, "--guide-window"},  // the guide is read by the driver's source (section 2.1)
    };
    for (const auto& [on, name] : needs)
        if (on) return name;
    return "";
}

void FrameFailures::add(int64_t index, const std::string& message, bool print) {
    if (print) std::fprintf(stderr, "tessera: frame %lld failed: %s\n", static_cast<long long>(index), message.c_str());
    if (first < 0 || index < first) first = index, first_message = message;
    ++count;
}

void FrameFailures::agree(Comm& comm, int64_t n) const {
    const int64_t total = comm.sum(count);
    if (total == 0) return;
    agree_on_first_error(comm, first,
                         total == 1 ? first_message
                                    : std::to_string(total) + " of " + std::to_string(n) +
                                          " frames failed; the first: " + first_message);
}

std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> frames_by_size(const std::vector<RasterInfo>& info,
                                                                           int rank, int P) {
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> groups;
    for (auto i = static_cast<int64_t>(rank); i < static_cast<int64_t>(info.size()); i += P)
        groups[{info[static_cast<size_t>(i)].rows, info[static_cast<size_t>(i)].cols}].push_back(i);
    return groups;
}

void run_input_frames(const std::vector<std::string>& inputs, const std::vector<int64_t>& idx, int64_t rows,
                      int64_t cols, int band, const FrameOptions& opt, const FrameWriter& write,
                      FrameFailures& failures, bool print) {
    using clock = std::chrono::steady_clock;
    // Per frame of idx: set by its lane's source, then by the sink (after the source, on that lane
    // or handed over under a lock), read here after run_frames has joined the lanes.
    enum State : uint8_t { kWaiting, kStarted, kWritten, kFailed };
    std::vector<uint8_t> state(idx.size(), kWaiting);
    std::vector<clock::time_point> started(idx.size());
    std::vector<std::string> why(idx.size());
    const FrameSource source = [&](int64_t k, float* buffer) -> const float* {
        const auto ku = static_cast<size_t>(k);
        const std::string& in = inputs[static_cast<size_t>(idx[ku])];
        state[ku] = kStarted, started[ku] = clock::now();
        try {
            RasterReader r(in, band);
            if (r.info().rows != rows || r.info().cols != cols) throw InputError(in, "size changed while the batch ran");
            r.read_float(Window{0, 0, rows, cols}, buffer, cols);
            return buffer;
        } catch (const InputError& e) {
            state[ku] = kFailed, why[ku] = e.what();
            return nullptr;  // no output for this frame; its lane goes on
        }
    };
    const FrameSink sink = [&](const FrameView& v) {
        const auto ku = static_cast<size_t>(v.index);
        try {
            write(idx[ku], v, std::chrono::duration<double>(clock::now() - started[ku]).count());
            state[ku] = kWritten;
        } catch (const InputError& e) {
            state[ku] = kFailed, why[ku] = e.what();  // writers leave no partial file (temporary name)
        }
    };
    std::string chain_error;
    try {
        run_frames(static_cast<int64_t>(idx.size()), rows, cols, opt, source, sink);
    } catch (const std::invalid_argument& e) {
        chain_error = e.what();  // tessera::demodulate refused a frame
    }
    // Started but neither written nor failed: its chain threw (the lowest one is the error
    // run_frames rethrew); still waiting: after such a frame on its lane.
    bool first_thrown = true;
    for (size_t k = 0; k < idx.size(); ++k) {
        const std::string& in = inputs[static_cast<size_t>(idx[k])];
        if (state[k] == kFailed) failures.add(idx[k], why[k], print);
        if (state[k] == kStarted)
            failures.add(idx[k], in + ": " + (std::exchange(first_thrown, false) ? chain_error : "failed on its lane"),
                         print);
        if (state[k] == kWaiting)
            failures.add(idx[k], in + ": not processed (an earlier frame on its lane failed)", print);
    }
}

namespace {

using clock = std::chrono::steady_clock;

// Removes a temporary file when leaving the scope, however it is left.
struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
        if (!path.empty()) {
            std::error_code ec;
            fs::remove(path, ec);
        }
    }
};

double since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

constexpr int kRec = 7;  // rows cols residues components conflicts hologram_seconds seconds

// One rank's share of a batch: a record per frame (zeros for other ranks' frames) and its failures.
struct FrameTally {
    explicit FrameTally(int64_t n) : rec(static_cast<size_t>(n) * kRec, 0.0) {}
    double* at(int64_t i) { return &rec[static_cast<size_t>(i) * kRec]; }
    std::vector<double> rec;
    int64_t conflicts = 0;
    FrameFailures failures;
};

// What one rank needs to run its frames.
struct RankFrames {
    const std::vector<std::string>& inputs;
    const std::vector<std::string>& outs;
    const std::vector<RasterInfo>& info;  // headers of this rank's frames (checked before any work)
    const UnwrapOptions& base;
    const FrameBatchOptions& frames;
    HologramDemodulator* demod;  // --from-hologram
    int rank, P;
};

// Each frame alone through run_unwrap(MPI_COMM_SELF); a hologram's phase from memory.
FrameTally unwrap_one_by_one(const RankFrames& f) {
    const auto N = static_cast<int64_t>(f.inputs.size());
    FrameTally t(N);
    HologramDemodulator::Frame frame;
    for (int64_t i = f.rank; i < N; i += f.P) {
        const auto tf = clock::now();
        const std::string& in = f.inputs[static_cast<size_t>(i)];
        UnwrapOptions opt = f.base;
        opt.output = f.outs[static_cast<size_t>(i)];
        opt.rank_grid.clear();  // one rank per frame
        opt.quiet = true;
        opt.input = in;
        opt.coherence = partner_file(f.base.coherence, in, "--coherence");  // its own (app/partner_files.h)
        opt.mask = partner_file(f.base.mask, in, "--mask");
        opt.quicklook = partner_file(f.base.quicklook, in, "--quicklook");
        double holo_s = 0;
        try {
            std::unique_ptr<PhaseSource> source;
            if (f.demod) {
                // The demodulated phase goes to the unwrapper from memory (io/phase_source.h).
                f.demod->run(in, frame, false);
                MemoryInput mi;
                mi.H = frame.info.rows, mi.W = frame.info.cols;
                mi.phase = frame.phase;
                mi.info = frame.info;
                mi.name = in;
                source = with_coherence_and_mask(
                    memory_phase_source(std::move(mi)), opt.coherence, opt.mask, static_cast<float>(opt.min_coherence),
                    opt.coherence.empty() ? 1 : auxiliary_band(opt.coherence, opt.coherence_band, "--coherence-band"),
                    opt.mask.empty() ? 1 : auxiliary_band(opt.mask, opt.mask_band, "--mask-band"));
                holo_s = since(tf);
            }
            const UnwrapReport r = run_unwrap(opt, source.get(), MPI_COMM_SELF);
            double* x = t.at(i);
            x[0] = static_cast<double>(r.rows);
            x[1] = static_cast<double>(r.cols);
            x[2] = static_cast<double>(r.residues);
            x[3] = static_cast<double>(r.components);
            x[4] = static_cast<double>(r.conflicts);
            x[5] = holo_s;
            t.conflicts += r.conflicts;
        } catch (const InputError& e) {
            t.failures.add(i, e.what(), N > 1);
            continue;
        }
        t.at(i)[6] = since(tf);
    }
    return t;
}

// run_unwrap's output (pipeline/unwrap_pipeline.cpp) for a frame unwrapped on a lane: the same
// datasets, chunks, filters and attributes, but for the per-stage times the lane does not keep.
void write_lane_frame(const std::string& path, const std::string& input, const RasterInfo& info,
                      const UnwrapOptions& o, const FrameView& v) {
    const int64_t n = v.rows * v.cols;
    check_disk_space({{path, n * (o.compress_phase > 0 ? 3 : 4) + n + (1 << 20)}});  // per frame, as written (issue 14)
    int64_t valid = 0;  // the hologram's phase is valid everywhere; u is NaN exactly at invalid pixels
    for (int64_t i = 0; i < n; ++i) valid += !std::isnan(v.u[i]);
    UnwrapReport rep;
    rep.rows = v.rows;
    rep.cols = v.cols;
    rep.valid = valid;
    add_region_stats(rep, v.stats);
    // --reference: u = 0 there, as run_unwrap writes it (pipeline/unwrap_pipeline.cpp).
    std::vector<float> shifted;
    const float* u = v.u;
    if (o.reference) {
        rep.reference_phase = v.u[o.reference->first * v.cols + o.reference->second];
        shifted.assign(v.u, v.u + n);
        const float u_ref = static_cast<float>(rep.reference_phase);
        for (float& x : shifted)
            if (!std::isnan(x)) x = x - u_ref;
        u = shifted.data();
    }
    Hdf5Writer out(path, MPI_COMM_SELF, v.rows, v.cols);
    write_unwrap_result(out, UnwrapResultWindow{Window{0, 0, v.rows, v.cols}, v.cols, u, v.label, 4}, o.compress_phase,
                        result_attributes(o, input, rep, info));
    out.commit();
}

// The rank's holograms through run_frames, one call per frame size, written here
// (sink_on_caller) as run_unwrap writes.
FrameTally unwrap_on_lanes(const RankFrames& f, int lanes) {
    const auto N = static_cast<int64_t>(f.inputs.size());
    FrameTally t(N);
    FrameOptions fo;
    fo.hologram = f.frames.hologram;
    fo.unwrap = UnwrapParams{f.base.max_pair_distance, f.base.min_component_size, f.base.reference, f.base.backend,
                             false, f.base.correct_cycles, f.base.far_reach};
    fo.tile_size = f.base.tile_size;
    fo.background_degree = -1;  // unwrap keeps the background
    fo.lanes = lanes;
    fo.sink_on_caller = true;  // HDF5 is not thread-safe and writes through MPI-IO: one thread, one file at a time
    const FrameWriter write = [&](int64_t i, const FrameView& v, double seconds) {
        const auto iu = static_cast<size_t>(i);
        write_lane_frame(f.outs[iu], f.inputs[iu], f.info[iu], f.base, v);
        double* x = t.at(i);
        x[0] = static_cast<double>(v.rows);
        x[1] = static_cast<double>(v.cols);
        x[2] = static_cast<double>(v.stats.residues);
        x[3] = static_cast<double>(v.stats.components);
        x[4] = static_cast<double>(v.stats.conflicts);
        x[6] = seconds;
        t.conflicts += v.stats.conflicts;
    };
    for (const auto& [size, idx] : frames_by_size(f.info, f.rank, f.P))
        run_input_frames(f.inputs, idx, size.first, size.second, f.base.band, fo, write, t.failures, N > 1);
    return t;
}

}  // namespace

int run_unwrap_batch(const std::vector<std::string>& inputs, const UnwrapOptions& given, const std::string& out,
                     const FrameBatchOptions& frames, MPI_Comm mpi_comm, std::vector<UnwrapFrameReport>* reports) {
    const auto t0 = clock::now();
    // A demodulated hologram is the sideband filter's average already: auto takes no guide for it,
    // on lanes or not (docs/ARCHITECTURE.md 2.2).
    UnwrapOptions base = given;
    if (frames.from_hologram && base.guide_window == kGuideAuto) base.guide_window = 0;
    Comm comm(mpi_comm);
    const int rank = comm.rank(), P = comm.size();
    if (inputs.empty()) throw InputError::everywhere("no input given");
    const auto N = static_cast<int64_t>(inputs.size());
    const std::vector<std::string> outs = batch_outputs(inputs, out, ".h5");
    std::error_code ec;
    const bool dir_mode = N > 1 || fs::is_directory(out, ec);
    const std::string per_frame_reason = lanes_unsupported(base, frames);
    const bool on_lanes = per_frame_reason.empty();
    const int lanes = frames.lanes > 0 ? frames.lanes : default_lanes(base.backend);
    // Lanes on the CUDA backend use the GPU of the rank's node-local index (collective: outside the checks).
    const auto [local_rank, local_size] =
        on_lanes && base.backend == Backend::kCuda ? comm.node_local_rank() : std::pair<int, int>{0, 1};

    // Checks before any work (section 7): options and outputs (index 0), each rank's frames.
    std::unique_ptr<HologramDemodulator> demod;
    std::vector<RasterInfo> info(static_cast<size_t>(N));
    {
        int64_t bad = -1;
        std::string msg;
        try {
            if (const auto tifs = geotiff_outputs(base); !tifs.empty() && N > 1)
                throw InputError::everywhere(tifs[0].first + ": --geotiff, --conncomp-geotiff and --dolphin name "
                                             "one result; they cannot be used with " + std::to_string(N) + " inputs");
            // Every frame its own picture: one name would be written by the first frame and refused
            // (or replaced) by the next.
            if (!base.quicklook.empty() && N > 1 && !is_partner_template(base.quicklook))
                throw InputError::everywhere(base.quicklook + ": --quicklook names one file; with " +
                                             std::to_string(N) + " inputs give a template, e.g. '" +
                                             (fs::path(out) / "{stem}.png").string() + "'");
            if (rank == 0) {
                // Outputs: never an input, never two of them one file, only regular files, existing
                // ones only with --overwrite (section 7). A directory still to be created holds none.
                std::vector<std::string> all_outs = outs, all_ins = inputs;
                if (dir_mode && !fs::is_directory(out, ec)) all_outs.clear();
                for (const auto& [tif, band] : geotiff_outputs(base)) all_outs.push_back(tif);
                for (const std::string& in : inputs) {
                    all_ins.insert(all_ins.end(), {partner_file(base.coherence, in, "--coherence"),
                                                   partner_file(base.mask, in, "--mask")});
                    const std::string q = partner_file(base.quicklook, in, "--quicklook");
                    if (q.empty()) continue;
                    check_png_name(q, "--quicklook");
                    const fs::path dir = fs::path(q).parent_path();
                    if (dir.empty() || fs::is_directory(dir, ec)) all_outs.push_back(q);  // else in OUT_DIR, still to be made
                }
                all_ins.push_back(frames.hologram_reference);
                check_outputs(all_outs, all_ins, base.overwrite);
                if (!(base.min_coherence >= 0.0 && base.min_coherence <= 1.0))
                    throw InputError(base.coherence.empty() ? out : base.coherence,
                                     "--min-coherence " + std::to_string(base.min_coherence) +
                                         " is outside [0, 1] (coherence is a magnitude between 0 and 1)");
            }
            // The unwrap's backend demodulates too (kCuda: on the current or --device GPU); this
            // also refuses a backend the process cannot run.
            if (frames.from_hologram)
                demod = std::make_unique<HologramDemodulator>(frames.hologram, frames.hologram_reference, base.band,
                                                              base.backend, base.device);
            if (on_lanes) {  // what run_unwrap checks per frame, checked once here
                if (base.tile_size < 2) throw InputError::everywhere("--tile-size must be at least 2");
                if (base.max_pair_distance < 1 || base.max_pair_distance > 1024)
                    throw InputError::everywhere("--cut-radius must be in [1, 1024]");
                const BackendOps& ops = backend_ops(base.backend);
                try {
                    ops.select_device(local_rank, local_size, base.device, /*share=*/true);
                } catch (const std::runtime_error& e) {
                    throw InputError::everywhere(std::string("GPU: ") + e.what());
                }
            }
        } catch (const InputError& e) {
            bad = 0;
            msg = e.what();
        }
        for (int64_t i = rank; bad < 0 && i < N; i += P) {
            try {
                const std::string& in = inputs[static_cast<size_t>(i)];
                RasterReader r(in, base.band);
                if (demod) demod->check(r.path(), r.info());
                const RasterInfo& ri = r.info();
                check_partners(in, ri, base, !frames.from_hologram);
                if (on_lanes && base.reference &&
                    (base.reference->first < 0 || base.reference->first >= ri.rows || base.reference->second < 0 ||
                     base.reference->second >= ri.cols))
                    throw InputError(in, "reference pixel (" + std::to_string(base.reference->first) + ", " +
                                             std::to_string(base.reference->second) + ") is outside the image");
                info[static_cast<size_t>(i)] = ri;
            } catch (const InputError& e) {
                bad = i + 1;
                msg = e.what();
            }
        }
        agree_on_first_error(comm, bad, msg);
    }
    if (dir_mode) prepare_output_directory(comm, out);  // created only for valid inputs

    const RankFrames mine{inputs, outs, info, base, frames, demod.get(), rank, P};
    FrameTally t = on_lanes ? unwrap_on_lanes(mine, lanes) : unwrap_one_by_one(mine);
    t.failures.agree(comm, N);
    const int64_t total_conflicts = comm.sum(t.conflicts);
    const std::vector<double> all = comm.sum_at(t.rec, 0);
    const double wall = comm.max(since(t0));

    if (rank == 0) {
        std::vector<UnwrapFrameReport> fr;
        for (int64_t i = 0; i < N; ++i) {
            const double* x = &all[static_cast<size_t>(i) * kRec];
            UnwrapFrameReport f;
            f.input = inputs[static_cast<size_t>(i)];
            f.output = outs[static_cast<size_t>(i)];
            f.rows = static_cast<int64_t>(x[0]);
            f.cols = static_cast<int64_t>(x[1]);
            f.residues = static_cast<int64_t>(x[2]);
            f.components = static_cast<int64_t>(x[3]);
            f.conflicts = static_cast<int64_t>(x[4]);
            f.hologram_seconds = x[5];
            f.seconds = x[6];
            fr.push_back(f);
        }
        if (!base.quiet) {
            const std::string how =
                on_lanes ? std::to_string(lanes) + " lane(s) per rank, " +
                               (base.backend == Backend::kCuda ? "cuda" : "cpu") + " backend"
                         : "one rank per frame" + (frames.from_hologram ? ", no lanes (" + per_frame_reason + ")"
                                                                         : std::string());
            std::printf("tessera unwrap: %lld frame(s)%s on %d rank(s), %s, %.3f s, %.2f frames/s\n",
                        static_cast<long long>(N), frames.from_hologram ? " from holograms" : "", P, how.c_str(),
                        wall, static_cast<double>(N) / wall);
            for (const UnwrapFrameReport& f : fr) {
                std::printf("  %s -> %s: %lldx%lld, residues %lld, components %lld", f.input.c_str(),
                            f.output.c_str(), static_cast<long long>(f.cols), static_cast<long long>(f.rows),
                            static_cast<long long>(f.residues), static_cast<long long>(f.components));
                if (frames.from_hologram && !on_lanes) std::printf(", hologram %.3f s", f.hologram_seconds);
                std::printf(", %.3f s\n", f.seconds);
            }
        }
        if (reports) *reports = std::move(fr);
    }
    return static_cast<int>(std::min<int64_t>(total_conflicts, std::numeric_limits<int>::max()));
}

FrameBatchOptions UnwrapBatchCli::frame_options() const {
    FrameBatchOptions f;
    f.from_hologram = from_hologram;
    if (carrier.size() == 2) f.hologram.carrier = std::pair<int64_t, int64_t>{carrier[0], carrier[1]};
    f.hologram.dc_exclusion = dc_radius;
    f.hologram.filter_radius = filter_radius;
    f.hologram.window = parse_window(window);
    f.hologram_reference = hologram_reference;
    f.lanes = lanes;
    return f;
}

void add_unwrap_batch_options(CLI::App* unwrap, UnwrapBatchCli& cli) {
    unwrap->add_option("FILES", cli.files,
                       "IN... OUT: wrapped phase (float32/64) or complex interferogram rasters (or holograms with "
                       "--from-hologram) and/or glob patterns (quoted: 'frames/*.tif'), then the output: OUT.h5 for "
                       "one input, a directory for several (<stem>.h5 each, created if missing)")
        ->required()
        ->expected(2, -1);
    auto* fh = unwrap->add_flag("--from-hologram", cli.from_hologram,
                                "IN are off-axis holograms: demodulate each (as `tessera hologram`), then unwrap");
    unwrap->add_option("--carrier", cli.carrier, "with --from-hologram: ROW COL of the +1 order (default: detected)")
        ->expected(2)
        ->allow_extra_args(false)
        ->needs(fh);
    unwrap->add_option("--dc-radius", cli.dc_radius, "with --from-hologram: DC exclusion radius in bins")->needs(fh);
    unwrap->add_option("--filter-radius", cli.filter_radius, "with --from-hologram: sideband filter radius in bins")
        ->needs(fh);
    unwrap->add_option("--window", cli.window, "with --from-hologram: sideband filter circular | hann")
        ->capture_default_str()
        ->check(CLI::IsMember({"circular", "hann"}))
        ->needs(fh);
    unwrap->add_option("--hologram-reference", cli.hologram_reference,
                       "with --from-hologram: reference hologram (no sample) whose field is divided out")
        ->needs(fh);
    unwrap->add_option("--lanes", cli.lanes,
                       "with --from-hologram: frames in flight per rank, each lane with its own plans and buffers "
                       "(CUDA: its own stream) (default: 4 on the cuda backend, 1 on cpu; ignored with the options "
                       "lanes do not provide: --hologram-reference, --coherence, --mask, --geotiff, --quicklook, "
                       "--save-*)")
        ->check(CLI::Range(1, 1024))
        ->needs(fh);
}

bool unwrap_is_batch(const UnwrapBatchCli& cli, const std::vector<std::string>& expanded, const std::string& out) {
    std::error_code ec;
    return expanded.size() > 1 || cli.from_hologram || fs::is_directory(out, ec);
}

}  // namespace tessera
