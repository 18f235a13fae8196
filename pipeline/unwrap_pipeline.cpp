#include "pipeline/unwrap_pipeline.h"

#include <mpi.h>
#include <omp.h>

#include <sys/statvfs.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <numbers>
#include <optional>

#include "partition/error_agreement.h"
#include "kernels/invariant.h"
#include "kernels/ab_switch.h"
#include "io/geotiff_writer.h"
#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/output_set.h"
#include "io/phase_source.h"
#include "io/png_writer.h"
#include "io/result_sink.h"
#include "io/scratch_file.h"
#include "io/unwrap_result_writer.h"
#include "pipeline/guided_source.h"
#include "pipeline/noise_census.h"
#include "io/raster_reader.h"
#include "backend/backend.h"
#include "pipeline/chunk_plan.h"
#include "kernels/lap.h"
#include "kernels/host_buffer.h"
#include "app/memory_budget.h"
#include "app/progress.h"
#include "app/quicklook.h"
#include "pipeline/rank_device.h"
#include "pipeline/result_attributes.h"
#include "pipeline/unwrap_region.h"
#include "partition/comm.h"
#include "partition/mpi_process.h"
#include "partition/rank_grid.h"

namespace tessera {

namespace {

// Tests end a job from one rank: TESSERA_INJECT_ERROR="RANK:STAGE" (section 7, MPI tests);
// "RANK:STAGE:sleep" makes that rank wait there for 60 s instead (signal tests);
// "RANK:STAGE:invariant" breaks an internal invariant there (the error path's tests).
void inject_error_for_tests(int rank, const char* stage) {
    static const char* spec = std::getenv("TESSERA_INJECT_ERROR");
    if (!spec) return;
    std::string s(spec);
    auto suffix = [&](const std::string& x) {
        const bool has = s.size() > x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
        if (has) s.resize(s.size() - x.size());
        return has;
    };
    const bool sleep = suffix(":sleep"), invariant = suffix(":invariant");
    const auto colon = s.find(':');
    if (colon == std::string::npos || std::to_string(rank) != s.substr(0, colon) || s.substr(colon + 1) != stage) return;
    if (sleep) {
        for (int i = 0; i < 600; ++i) usleep(100000);
        return;
    }
    TESSERA_INVARIANT(!invariant, std::string("injected broken invariant at stage ") + stage);
    throw std::runtime_error("injected error on rank " + std::to_string(rank) + " at stage " + stage);
}

// u -= u_ref over the own window's valid pixels (NaN stays NaN); float32, as written.
void subtract_reference(float* u, const RegionArrays& a, const Window& own, float u_ref) {
#pragma omp parallel for schedule(static)
    for (int64_t r = own.row0; r < own.row0 + own.rows; ++r)
        for (int64_t c = own.col0; c < own.col0 + own.cols; ++c) {
            float& x = u[static_cast<size_t>(a.index(r, c))];
            if (!std::isnan(x)) x = x - u_ref;
        }
}

std::string fmt(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

// Whether values in [lo, hi] could be fractions of a cycle: they span about one, inside
// [-0.5, 0.5] or [0, 1].
bool cycle_range(double lo, double hi) {
    constexpr double tol = 1e-3;
    const double span = hi - lo;
    return span >= 0.9 && span <= 1.0 + tol && ((lo >= -0.5 - tol && hi <= 0.5 + tol) || (lo >= -tol && hi <= 1.0 + tol));
}

// Horizontal pairs of valid pixels in the window whose step exceeds 0.75 (`wraps`) and 0.25
// (`steps`). Cycles wrap with steps of about 1 between steps much smaller; a phase in radians
// that stays within one radian never wraps, and its noise spreads its steps evenly.
struct CycleJumps {
    int64_t wraps = 0, steps = 0;
};

// A wrapped phase lies in [-pi, pi] or [0, 2 pi] (a little more for rounding): values that
// look like degrees or cycles get a line saying so (section 7). lo/hi over the valid pixels;
// jumps: scan_read's summed over the ranks.
void check_phase_range(const std::string& path, double lo, double hi, int64_t valid, const CycleJumps& jumps) {
    constexpr double pi = std::numbers::pi, tol = 1e-3;
    const std::string seen = "values in [" + fmt(lo) + ", " + fmt(hi) + "]";
    const double big = std::max(std::fabs(lo), std::fabs(hi));
    // [0, 2 pi) is the other common convention (Ghiglia and Pritt's data): the residues and the
    // integration see only wrapped differences, so it is accepted as it is.
    const bool minus_pi_pi = lo >= -pi - tol && hi <= pi + tol, zero_two_pi = lo >= -tol && hi <= 2 * pi + tol;
    if (!minus_pi_pi && !zero_two_pi) {
        if (big > 2 * pi + tol && big <= 360.0 + 0.5)
            throw InputError(path, seen + " look like degrees; tessera needs a wrapped phase in radians, "
                                          "[-pi, pi] or [0, 2 pi) (multiply by pi/180)");
        throw InputError(path, seen + ": not a wrapped phase (expected radians in [-pi, pi] or [0, 2 pi))");
    }
    // Cycles: fractions of a cycle span one, and wrap between neighbours with steps of about
    // one that stand out from the others (a genuine phase within one radian has no such wraps).
    if (valid >= 1000 && cycle_range(lo, hi) && jumps.wraps >= 10 && 4 * jumps.wraps >= jumps.steps)
        throw InputError(path, seen + " look like cycles (fractions of 2 pi); tessera needs a wrapped phase in "
                                      "radians, [-pi, pi] (multiply by 2 pi)");
}


// Disk space (section 7): what the outputs need (uncompressed datasets at full size,
// deflated ones at a quarter, the label dataset at one byte a pixel) against what the file
// system of each output's directory has (io/output_path.h).
void check_output_space(const UnwrapOptions& opt, int64_t pixels) {
    const int64_t h5 = pixels * (opt.compress_phase > 0 ? 3 : 4) + pixels * 1 + (opt.save_cycles ? pixels : 0) +
                       (opt.save_residues ? pixels / 4 : 0) + (opt.save_cuts ? pixels / 4 : 0) + (1 << 20);
    std::vector<OutputNeed> needs{{opt.output, h5}};
    for (const auto& [path, band] : geotiff_outputs(opt)) needs.push_back({path, pixels * 4 + (1 << 20)});
    if (!opt.quicklook.empty()) needs.push_back({opt.quicklook, 4 << 20});
    check_disk_space(needs);
}



// Setup errors are agreed on: the lowest failing rank's line is thrown on every rank.
void agree(Comm& comm, const std::function<void()>& step) { agree_on_errors(comm, step); }

void check_same_size(const std::string& path, const RasterInfo& info, const RasterInfo& ref) {
    if (info.rows != ref.rows || info.cols != ref.cols)
        throw InputError(path, "size " + std::to_string(info.cols) + "x" + std::to_string(info.rows) +
                                   " (cols x rows) differs from the phase's " + std::to_string(ref.cols) + "x" +
                                   std::to_string(ref.rows));
}

// One pass over window w of what the read left: its valid pixels and its cycle jumps. The
// jumps only where the fill's range [lo, hi] could be part of cycles (a span of at most one:
// a wider one here is wider everywhere, and check_phase_range does not look at them then).
struct ReadScan {
    int64_t valid = 0;
    CycleJumps jumps;
};
ReadScan scan_read(const RegionArrays& a, const Window& w, const InputRanges& rg) {
    const bool jumps = !(static_cast<double>(rg.hi) - static_cast<double>(rg.lo) > 1.0 + 1e-3);
    int64_t valid = 0, wraps = 0, steps = 0;
    const int64_t n = w.cols;
#pragma omp parallel for reduction(+ : valid, wraps, steps) schedule(static)
    for (int64_t r = w.row0; r < w.row0 + w.rows; ++r) {
        // Branch-free rows (the compiler's vectors): a pixel counts when valid, a step when both ends are.
        const uint8_t* f = a.flags + a.index(r, w.col0);
        const float* ph = a.phase + a.index(r, w.col0);
        int64_t v = 0;
        for (int64_t c = 0; c < n; ++c) v += (f[c] & kInvalid) == 0;
        valid += v;
        if (!jumps) continue;
        int64_t wr = 0, st = 0;
        for (int64_t c = 0; c + 1 < n; ++c) {
            const int64_t both = ((f[c] | f[c + 1]) & kInvalid) == 0;
            const float d = std::fabs(ph[c + 1] - ph[c]);
            wr += both & (d > 0.75f), st += both & (d > 0.25f);
        }
        wraps += wr, steps += st;
    }
    return {valid, {wraps, steps}};
}

// What a read saw on this rank, for the checks of what the inputs claim to be (section 7).
struct ReadTally {
    InputRanges ranges;
    int64_t valid = 0;
    CycleJumps jumps;
    bool ref_unreliable = false;
    void add(const InputRanges& r, const ReadScan& scan) {
        ranges.lo = std::min(ranges.lo, r.lo), ranges.hi = std::max(ranges.hi, r.hi);
        ranges.coh_lo = std::min(ranges.coh_lo, r.coh_lo), ranges.coh_hi = std::max(ranges.coh_hi, r.coh_hi);
        valid += scan.valid, jumps.wraps += scan.jumps.wraps, jumps.steps += scan.jumps.steps;
    }
};

// The checks after the read, agreed on by every rank; the number of valid pixels.
int64_t check_read(Comm& comm, const UnwrapOptions& opt, const ReadTally& t) {
    const int64_t valid = comm.sum(t.valid);
    const InputRanges& rg = t.ranges;
    const double lo = -comm.max(-static_cast<double>(rg.lo)), hi = comm.max(static_cast<double>(rg.hi));
    const double coh_lo = -comm.max(-static_cast<double>(rg.coh_lo)), coh_hi = comm.max(static_cast<double>(rg.coh_hi));
    CycleJumps j;
    if (lo <= hi && cycle_range(lo, hi)) j = {comm.sum(t.jumps.wraps), comm.sum(t.jumps.steps)};
    agree(comm, [&] {
        if (lo <= hi) check_phase_range(opt.input, lo, hi, valid, j);
        // Coherence folded in (a raster, or an array in memory): a magnitude in [0, 1].
        if (coh_lo <= coh_hi && (coh_lo < 0.0 || coh_hi > 1.0 + 1e-4))
            throw InputError(opt.coherence.empty() ? std::string("coherence") : opt.coherence,
                             "values in [" + fmt(coh_lo) + ", " + fmt(coh_hi) +
                                 "]: not a coherence (expected values in [0, 1])");
        if (valid == 0) throw InputError(opt.input, "no valid pixels (all nodata or masked)");
        if (t.ref_unreliable)
            throw InputError(opt.input, "reference pixel is invalid (nodata, masked or below --min-coherence)");
    });
    return valid;
}

// The size and plan, printed before any work (issue 16).
std::string describe_plan(const UnwrapOptions& opt, const Plan& plan, int64_t H, int64_t W, const char* backend) {
    char line[512];
    const int64_t tile = plan.grid.tiles.tile;
    const std::string mem = format_bytes(plan.host_bytes) +
                            (plan.device_bytes > 0 ? " host, " + format_bytes(plan.device_bytes) + " GPU" : std::string()) +
                            " per rank";
    std::snprintf(line, sizeof line, "unwrap %s: %lld x %lld (%.2f Gpx), %d rank(s) %lldx%lld, %s, tiles of %lld; %s; %s",
                  opt.input.c_str(), static_cast<long long>(H), static_cast<long long>(W),
                  static_cast<double>(H) * static_cast<double>(W) / 1e9, plan.grid.size(),
                  static_cast<long long>(plan.grid.P), static_cast<long long>(plan.grid.Q), backend,
                  static_cast<long long>(tile),
                  plan.in_core() ? "in one piece"
                                 : (std::to_string(plan.chunks) + " chunk(s) of " + std::to_string(plan.tile_rows * tile) +
                                    " rows a rank, 3 passes" +
                                    (plan.inputs_kept ? " over the input read once (" + format_bytes(plan.kept_bytes) +
                                                            " of it kept a rank)"
                                                      : std::string()) +
                                    (opt.scratch.empty() ? std::string()
                                                         : " (the third from " + format_bytes(plan.scratch_bytes) +
                                                               " of scratch a rank in " + opt.scratch + ")"))
                                       .c_str(),
                  mem.c_str());
    return line;
}

// The run's report completed on every rank alike, and the result's root attributes.
std::vector<Attribute> finish_report(UnwrapReport& rep, const RegionStats& st, Comm& comm, const UnwrapOptions& opt,
                                     const RasterInfo& info, const RankGrid& grid) {
    rep.ranks = comm.size();
    rep.tile_size = grid.tiles.tile;
    rep.rank_rows = grid.P;
    rep.rank_cols = grid.Q;
    rep.bytes_sent_max = comm.max(st.bytes_sent);
    rep.bytes_sent_total = comm.sum(st.bytes_sent);
    std::vector<Attribute> attrs = result_attributes(opt, opt.input, rep, info);
    // Stage times: the slowest rank's, so that every rank writes the same values.
    for (StageTime& t : rep.times) {
        t.seconds = comm.max(t.seconds);
        attrs.push_back({"time_" + t.stage, t.seconds});
    }
    return attrs;
}

// A window `w` of the result in `a` as the sinks take it (io/unwrap_result_writer.h), with the
// optional residues (from the rank's, sorted by id) and cut bits of that window. An empty
// window names the same datasets as the others (the writes are collective).
struct ResultParts {
    std::vector<int8_t> q;
    std::vector<uint8_t> cut_bits;
    UnwrapResultWindow window;

    ResultParts(const RegionArrays& a, const Window& w, int lb, const UnwrapOptions& opt, const std::vector<Residue>& res) {
        static int32_t no_cycles;
        static int8_t no_residues;
        static uint8_t no_cuts;
        const bool empty = w.size() == 0;
        const int64_t o = empty ? 0 : a.index(w.row0, w.col0);
        if (opt.save_residues && !empty) {
            q.assign(static_cast<size_t>(w.size()), 0);
            auto first = std::lower_bound(res.begin(), res.end(), w.row0, [](const Residue& x, int64_t r) { return x.r < r; });
            for (auto it = first; it != res.end() && it->r < w.row0 + w.rows; ++it)
                if (it->c >= w.col0 && it->c < w.col0 + w.cols)
                    q[static_cast<size_t>((it->r - w.row0) * w.cols + (it->c - w.col0))] += static_cast<int8_t>(it->sign);
        }
        if (opt.save_cuts && !empty) {
            cut_bits.resize(static_cast<size_t>(w.size()));
            for (int64_t i = 0; i < w.rows; ++i)
                for (int64_t j = 0; j < w.cols; ++j) {
                    const uint8_t f = a.flags[a.index(w.row0 + i, w.col0 + j)];
                    // bits 0-1: blocked edges; bit 2: the pixel's cycles corrected (section 4.1)
                    cut_bits[static_cast<size_t>(i * w.cols + j)] =
                        static_cast<uint8_t>((f & (kBlockRight | kBlockDown)) | ((f & kCycleCorrected) ? 4u : 0u));
                }
        }
        window = {w,
                  empty ? 0 : a.buf.cols,
                  empty ? nullptr : a.phase + o,
                  empty ? nullptr : static_cast<const uint8_t*>(a.label) + o * lb,
                  lb,
                  !opt.save_cycles ? nullptr : empty ? &no_cycles : a.cycles + o,
                  !opt.save_residues ? nullptr : empty ? &no_residues : q.data(),
                  !opt.save_cuts ? nullptr : empty ? &no_cuts : cut_bits.data()};
    }
};

}  // namespace

std::vector<std::pair<std::string, GeoTiffBand>> geotiff_outputs(const UnwrapOptions& opt) {
    std::vector<std::pair<std::string, GeoTiffBand>> out;
    if (!opt.geotiff.empty()) out.push_back({opt.geotiff, GeoTiffBand::kPhase});
    if (!opt.conncomp_geotiff.empty()) out.push_back({opt.conncomp_geotiff, GeoTiffBand::kComponents});
    if (!opt.dolphin.empty()) {
        out.push_back({dolphin_phase_path(opt.dolphin), GeoTiffBand::kDolphinPhase});
        out.push_back({dolphin_components_path(opt.dolphin), GeoTiffBand::kDolphinComponents});
    }
    return out;
}

namespace {

// A run in one piece's host arrays over its buffer (docs/ARCHITECTURE.md 5.1; cycles only with --save-cycles).
struct InCoreArrays {
    HostBuffer<float> phase;
    HostBuffer<uint8_t> flags;
    HostBuffer<uint32_t> label;
    HostBuffer<int32_t> cycles;
    InCoreArrays(size_t n, bool with_cycles) : phase(n), flags(n), label(n), cycles(with_cycles ? n : 0) {}
};

// The run: into the files of `opt`, or into `memory` when given (no file written or checked).
UnwrapReport run(const UnwrapOptions& opt, const PhaseSource* given, MemoryResult* memory, MPI_Comm mpi_comm) {
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

    std::future<void> warming = warm_rank_device(comm, opt.backend, opt.device, opt.share_gpus);

    // --- inputs and their checks (section 7), agreed on by every rank ---
    std::unique_ptr<PhaseSource> owned;
    std::unique_ptr<GuidedSource> guided;  // --guide-window: the run reads the guide in the phase's place
    const PhaseSource* in = given;
    RankGrid grid;
    agree(comm, [&] {
        const int coh_band = opt.coherence.empty() ? 1 : auxiliary_band(opt.coherence, opt.coherence_band, "--coherence-band");
        const int mask_band = opt.mask.empty() ? 1 : auxiliary_band(opt.mask, opt.mask_band, "--mask-band");
        if (!in) {
            owned = gdal_phase_source(opt.input, opt.band, opt.coherence, opt.mask, static_cast<float>(opt.min_coherence),
                                      coh_band, mask_band);
            in = owned.get();
        }
        const int n = opt.guide_window;
        if (n != kGuideAuto && (n < 0 || (n > 1 && (n % 2 == 0 || n > kMaxGuideWindow))))
            throw InputError(opt.input, "--guide-window " + std::to_string(n) + " must be auto, 0 (none) or odd, from 3 to " +
                                            std::to_string(kMaxGuideWindow));
        const RasterInfo& info = in->info();
        if (info.rows < 2 || info.cols < 2)
            throw InputError(opt.input, "image is " + std::to_string(info.cols) + "x" + std::to_string(info.rows) +
                                            " (cols x rows); at least 2x2 is needed");
        if (!opt.coherence.empty()) check_same_size(opt.coherence, RasterReader(opt.coherence, coh_band).info(), info);
        if (!opt.mask.empty()) check_same_size(opt.mask, RasterReader(opt.mask, mask_band).info(), info);
        if (opt.reference && (opt.reference->first < 0 || opt.reference->first >= info.rows ||
                              opt.reference->second < 0 || opt.reference->second >= info.cols))
            throw InputError(opt.input, "reference pixel (" + std::to_string(opt.reference->first) + ", " +
                                            std::to_string(opt.reference->second) + ") is outside the image");
        if (opt.tile_size < 2) throw InputError(opt.input, "--tile-size must be at least 2");
        if (opt.max_pair_distance < 1 || opt.max_pair_distance > 1024)
            throw InputError(opt.input, "--cut-radius must be in [1, 1024]");
        if (!(opt.min_coherence >= 0.0 && opt.min_coherence <= 1.0))
            throw InputError(opt.coherence.empty() ? opt.input : opt.coherence,
                             "--min-coherence " + std::to_string(opt.min_coherence) +
                                 " is outside [0, 1] (coherence is a magnitude between 0 and 1)");
        // Outputs: never an input, never two of them one file, only regular files, existing
        // ones only with --overwrite (section 7).
        if (!memory) {
            std::vector<std::string> outs{opt.output, opt.quicklook};
            for (const auto& [path, band] : geotiff_outputs(opt)) outs.push_back(path);
            check_outputs(outs, {opt.input, opt.coherence, opt.mask}, opt.overwrite);
            if (!opt.quicklook.empty()) check_png_name(opt.quicklook, "--quicklook");  // after the checks above
        }
        grid = make_rank_grid(TileGrid(info.rows, info.cols, run_tile_size(opt, info, comm.size())), comm.size(),
                              opt.rank_grid, opt.input);
    });
    const double checked_ms = std::chrono::duration<double, std::milli>(clock::now() - t_start).count();
    const RasterInfo& info = in->info();
    const int64_t H = info.rows, W = info.cols;
    const Window own = grid.own(rank), buf = grid.buffer(rank);
    // The plan (section 5.1): the window in one piece when it fits this rank's share of the
    // host's memory (--memory-limit, else what the node has, shared by its ranks) and of its
    // GPU's, else in chunks of whole tile rows that fit.
    const int64_t local_ranks = comm.size() > 1 ? comm.node_local_rank().second : 1;
    // One plan on every rank: the limit is the node's share or the user's, what is reserved of it
    // the most any rank holds (each rank's resident memory differs), the GPU's the least free.
    const int64_t avail = available_memory();
    const int64_t host_limit = opt.memory_limit > 0 ? opt.memory_limit
                               : avail < 0          ? -1
                                                    : comm.min(avail / std::max<int64_t>(1, local_ranks));
    const int64_t host_reserved = comm.max(memory_reserved(host_limit, opt.memory_limit > 0));
    const int64_t writeback_from = comm.min(writeback_threshold());
    auto plan_for = [&](int64_t device_limit) {
        PlanRequest q = plan_request(opt, info, comm.size());
        q.host_limit = host_limit, q.host_reserved = host_reserved, q.device_limit = device_limit;
        q.writeback_from = writeback_from;
        return make_plan(q, opt.input);
    };
    // A run in one piece's host arrays (counted in the read stage). Where the host holds the window
    // in one piece (and a given --gpu-memory-limit the device) they are touched while the device's
    // context is made (warm_rank_device); the GPU's free memory may still say chunks, and then
    // they go unused.
    std::optional<InCoreArrays> arrays;
    auto make_arrays = [&] {
        Lap alloc;
        arrays.emplace(static_cast<size_t>(buf.size()), opt.save_cycles);
        if (trace_on())
            std::fprintf(stderr, "tessera: %.1f ms into the run, the region's host arrays allocated and touched in %.1f ms\n",
                         std::chrono::duration<double, std::milli>(clock::now() - t_start).count(), alloc.next_ms());
    };
    try {
        if (plan_for(opt.gpu_memory_limit > 0 ? opt.gpu_memory_limit : -1).in_core()) make_arrays();
    } catch (const std::exception&) {  // the plan below says what is wrong
    }
    if (warming.valid()) warming.wait();
    select_rank_device(comm, opt.backend, opt.device, opt.share_gpus);
    if (trace_on())
        std::fprintf(stderr, "tessera: the inputs checked %.1f ms and the device chosen %.1f ms into the run\n", checked_ms,
                     std::chrono::duration<double, std::milli>(clock::now() - t_start).count());
    const BackendOps& ops = backend_ops(opt.backend);
    // The device's ways through the program (pages made ready beside the stages, pass 1 read
    // ahead), taken on the CPU backend too where TESSERA_HOST_FREE_IN_STAGES=1: tests without a GPU.
    const bool host_free = ops.host_free_in_stages || switch_is("TESSERA_HOST_FREE_IN_STAGES", "1");
    const int64_t device_free = opt.gpu_memory_limit > 0 ? opt.gpu_memory_limit : ops.device_free_bytes();
    const int64_t device_limit = device_free < 0 ? -1 : comm.min(device_free);
    Plan plan;
    std::unique_ptr<ScratchFile> scratch;  // --scratch, a streamed run's (section 5.1)
    agree(comm, [&] {
        plan = plan_for(device_limit);
        if (!memory) check_output_space(opt, H * W);
        // The directory is checked whether or not the run streams: a bad one is one line either way.
        if (!opt.scratch.empty() && plan.in_core()) check_scratch_dir(opt.scratch);
        if (!opt.scratch.empty() && !plan.in_core())
            scratch = std::make_unique<ScratchFile>(opt.scratch, scratch_bytes(grid, rank, plan.tile_rows));
    });
    // The plan before any work, for runs long enough to watch (a bad small input stays one line).
    if (!plan.in_core() || H * W >= (int64_t{1} << 26)) progress.begin(describe_plan(opt, plan, H, W, ops.name));
    // The guide (section 2.1), auto: from the census of the whole image (section 2.2), after every
    // check that reads nothing. In one piece the census counts the arrays the run reads (below); in
    // chunks it reads the phase first, its time the "census" entry (no line: a bad input is one).
    auto use_guide = [&](int n) {
        rep.guide_window = n > 1 ? n : 0;
        if (n <= 1) return;
        guided = std::make_unique<GuidedSource>(*in, n);
        in = guided.get();
    };
    auto take_guide = [&](const ResidueCensus& mine) {
        rep.census = {comm.sum(mine.plaquettes), comm.sum(mine.residues)};
        use_guide(auto_guide_window(rep.census));
    };
    if (opt.guide_window != kGuideAuto) {
        use_guide(opt.guide_window);
    } else if (!plan.in_core()) {
        ResidueCensus mine;
        agree(comm, [&] { mine = residue_census(*in, own); });
        take_guide(mine);
        const auto now = clock::now();
        rep.times.push_back({"census", std::chrono::duration<double>(now - t_stage).count()});
        t_stage = now;
    }
    // Every output goes to a unique temporary; rank 0 renames them all together at the end
    // (io/output_set.h). Created before any work so that a bad output path fails first.
    OutputSet outputs(opt.overwrite);
    CollectOutputs collect(outputs);
    std::unique_ptr<Hdf5Writer> out;
    if (!memory) agree(comm, [&] { out = std::make_unique<Hdf5Writer>(opt.output, mpi_comm, H, W); });
    TESSERA_INVARIANT(!memory || (memory->H == H && memory->W == W && memory->u.size() == static_cast<size_t>(H * W) &&
                                  memory->label.size() == static_cast<size_t>(H * W)),
                      "memory result arrays are not the phase's size");
    rep.rows = H;
    rep.cols = W;
    GeoRef geo{info.has_geotransform, info.geotransform, info.projection_wkt};
    geo.overviews = opt.overviews;
    const bool quicklook = !memory && !opt.quicklook.empty();
    const auto geotiffs = memory ? std::vector<std::pair<std::string, GeoTiffBand>>{} : geotiff_outputs(opt);
    const QuicklookGrid qg = quicklook ? quicklook_grid(H, W, 1024) : QuicklookGrid{};
    std::vector<QuicklookCell> cells;  // this rank's quicklook records (app/quicklook.h)
    std::vector<std::unique_ptr<ResultSink>> sinks;
    UnwrapParams params{opt.max_pair_distance, opt.min_component_size, opt.reference, opt.backend, true,
                        opt.correct_cycles, opt.far_reach};
    RegionStats st;
    auto stage_hook = [&](const char* s) {
        inject_error_for_tests(rank, s);
        stage_done(s);
    };

    if (plan.in_core()) {
        if (!arrays) make_arrays();
        auto& [phase, flags, label, cycles] = *arrays;
        RegionArrays a{H, W, buf, phase.data(), flags.data(), label.data(), opt.save_cycles ? cycles.data() : nullptr};
        // The read fills the region's arrays once the backend's region exists, so that the CUDA
        // backend uploads phase rows while the rest is read (issue 5; kernels/region.h).
        // Auto (section 2.2): the census counts the phase as read; where it takes the guide, whose
        // source fills the arrays again, the region made meanwhile is given up and made anew.
        bool census_due = opt.guide_window == kGuideAuto;
        struct GuideTaken {};
        const RegionFill read_stage = [&](const RowsReady& ready) {
            ReadTally t;
            agree(comm, [&] {
                t.ranges = in->fill(a, ready);
                inject_error_for_tests(rank, "read");
            });
            if (census_due) {
                census_due = false;
                ResidueCensus mine;
                agree(comm, [&] {
                    Lap census;
                    mine = residue_census(a, own);
                    if (trace_on()) std::fprintf(stderr, "tessera: census of the read phase %.1f ms\n", census.next_ms());
                });
                take_guide(mine);
                if (rep.guide_window > 1) throw GuideTaken{};  // on every rank: the census is global
            }
            Lap scan_lap;
            const ReadScan scan = scan_read(a, own, t.ranges);
            t.valid = scan.valid, t.jumps = scan.jumps;
            t.ref_unreliable = opt.reference && own.contains(opt.reference->first, opt.reference->second) &&
                               (flags[static_cast<size_t>(a.index(opt.reference->first, opt.reference->second))] & kUnreliable);
            rep.valid = check_read(comm, opt, t);
            if (trace_on()) std::fprintf(stderr, "tessera: scan and checks of the read %.1f ms\n", scan_lap.next_ms());
            stage_done("read");
        };
        std::vector<Residue> res;
        // While a device works the host's cores make the output's pages ready (section 7).
        const bool prepare = out && host_free;
        const auto in_core_hook = [&](const char* s) {
            stage_hook(s);
            if (prepare && std::strcmp(s, "upload") == 0) prepare_unwrap_result(*out, opt.compress_phase);
        };
        HostLocks locks;
        HostLocks* const keep_locks = switch_is("TESSERA_UNLOCK_BESIDE", "0") ? nullptr : &locks;
        auto unwrap = [&] {
            return ops.unwrap_region(a, grid, comm, params, opt.save_residues ? &res : nullptr, in_core_hook, read_stage, keep_locks);
        };
        try {
            st = unwrap();
        } catch (const GuideTaken&) {
            st = unwrap();
        }
        // The arrays' page-locking undone beside the write (0.14-0.19 s for 9.7 GB on the H200
        // host, section 7), finished before they are freed: this future goes first
        // (TESSERA_UNLOCK_BESIDE=0: by the Region, A/B).
        std::future<void> unlocking;
        if (locks)
            unlocking = std::async(std::launch::async, [l = std::move(locks)]() mutable {
                Lap unlock;
                l.reset();
                if (trace_on()) std::fprintf(stderr, "tessera: host arrays unlocked in %.1f ms, beside the write\n", unlock.next_ms());
            });
        if (guided) {
            agree(comm, [&] { guided->project(a, own); });
            stage_done("guide");
        }
        if (opt.reference) {
            // MintPy's convention (REF_Y/REF_X): u = 0 at the reference pixel, the same constant
            // subtracted from every valid pixel (the integer k keep k = 0 there).
            const auto [rr, rc] = *opt.reference;
            float u_ref = own.contains(rr, rc) ? phase[static_cast<size_t>(a.index(rr, rc))] : 0.0f;
            comm.bcast(u_ref, grid.rank_of(rr, rc));
            subtract_reference(phase.data(), a, own, u_ref);
            rep.reference_phase = u_ref;
        }
        add_region_stats(rep, st);
        const std::vector<Attribute> attrs = finish_report(rep, st, comm, opt, info, grid);
        Lap sinks_lap;  // TESSERA_TRACE: the write stage's parts
        if (trace_on())
            std::fprintf(stderr, "tessera: the region gone and the report made %.1f ms after the last stage\n",
                         std::chrono::duration<double, std::milli>(clock::now() - t_stage).count());
        // Every sink takes the same window of the result (io/result_sink.h).
        if (memory)
            sinks.push_back(memory_result_sink(*memory));
        else
            sinks.push_back(hdf5_result_sink(*out, opt.compress_phase));
        for (const auto& [path, band] : geotiffs) sinks.push_back(geotiff_result_sink(path, H, W, geo, comm, band));
        const ResultParts parts(a, own, st.label_bytes, opt, res);
        for (auto& sink : sinks) {  // the HDF5 first, complete and closed, then the GeoTIFF
            sink->write(parts.window);
            sink->finish(attrs);
        }
        if (trace_on()) std::fprintf(stderr, "tessera: sinks written and closed in %.1f ms\n", sinks_lap.next_ms());
        if (quicklook) cells = quicklook_cells(parts.window.u, parts.window.label, own, buf.cols, qg, st.label_bytes);
    } else {
        arrays.reset();
        // Chunks (section 5.1): each read three times; the checks of what the inputs claim to be
        // after the first pass; each chunk's result written as it is applied.
        // A chunk's arrays are allocated on one thread and freed on another: mapped from the system and
        // given back when freed, else glibc's arenas keep them and the peak exceeds the plan (section 5.1).
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        if (memory)
            sinks.push_back(memory_result_sink(*memory));  // takes any window, as often as it comes
        else
            sinks.push_back(hdf5_windows_sink(*out, opt.compress_phase));
        for (const auto& [path, band] : geotiffs)
            sinks.push_back(geotiff_from_hdf5_sink(*out, path, H, W, geo, comm, band));
        ReadTally tally;
        bool first_pass = true;
        std::exception_ptr read_error;  // agreed on after each pass: ranks may hold unequal chunk counts
        float u_ref = 0.0f;
        const ChunkFill fill = [&](const RegionArrays& a) {
            try {
                const InputRanges rg = in->fill(a, [](int64_t, int64_t) {});
                if (!first_pass) return;
                // The chunk's own rows: its buffer less the halo row, unless it ends the window (an
                // inner chunk's buffer ends at least a tile of 2 rows before the window does).
                const int64_t own_end = own.row0 + own.rows, buf_end = a.buf.row0 + a.buf.rows;
                const Window cw{a.buf.row0, own.col0, (buf_end >= own_end ? own_end : buf_end - 1) - a.buf.row0, own.cols};
                tally.add(rg, scan_read(a, cw, rg));
                if (opt.reference && cw.contains(opt.reference->first, opt.reference->second)) {
                    const int64_t i = a.index(opt.reference->first, opt.reference->second);
                    tally.ref_unreliable = (a.flags[i] & kUnreliable) != 0;
                    u_ref = a.phase[i] + kTwoPiF * 0.0f;  // section 4's u at k = 0, as apply computes it
                    if (guided) u_ref = guided->project_one(u_ref, opt.reference->first, opt.reference->second);
                }
            } catch (...) {
                if (!read_error) read_error = std::current_exception();
            }
        };
        auto agree_read = [&] {
            agree(comm, [&] {
                if (read_error) std::rethrow_exception(read_error);
            });
        };
        std::vector<Residue> res;
        const ChunkSink sink = [&](const RegionArrays& a, const Window& cw, int label_bytes) {
            if (cw.rows > 0 && guided) guided->project(a, cw);
            if (cw.rows > 0 && opt.reference) subtract_reference(a.phase, a, cw, u_ref);
            const ResultParts parts(a, cw, label_bytes, opt, res);
            sinks[0]->write(parts.window);
            if (quicklook && cw.rows > 0) {
                auto c = quicklook_cells(parts.window.u, parts.window.label, cw, a.buf.cols, qg, label_bytes);
                cells.insert(cells.end(), c.begin(), c.end());
            }
        };
        const double px_total = 3.0 * static_cast<double>(own.size());
        // Section 5.1: the output's pages made ready beside pass 2 where the plan has room for them,
        // on a few threads (all the host's slowed the matching and pass 2 by what pass 3 gained).
        constexpr int kPrepareThreads = 4;
        const bool prepare_early = out && host_free && plan.output_ready_early;
        ChunkRun run{fill, sink,
                     [&](const char* s) {
                         if (first_pass) {  // every chunk read once: the checks (section 7)
                             first_pass = false;
                             agree_read();
                             inject_error_for_tests(rank, "read");
                             rep.valid = check_read(comm, opt, tally);
                             if (opt.reference) {
                                 comm.bcast(u_ref, grid.rank_of(opt.reference->first, opt.reference->second));
                                 rep.reference_phase = u_ref;
                             }
                         } else {
                             agree_read();
                         }
                         stage_hook(s);
                         if (prepare_early && std::strcmp(s, "matching") == 0)
                             prepare_unwrap_result(*out, opt.compress_phase, kPrepareThreads);
                     },
                     [&](int pass, int64_t done, int64_t total) {
                         static const char* names[] = {"", "read", "cuts", "write"};
                         const double px = static_cast<double>(own.size()) * (pass - 1 + static_cast<double>(done) / total);
                         progress.chunk(names[pass], done, total, px, px_total);
                     },
                     opt.save_residues ? &res : nullptr};
        // GDAL reading through the HDF5 library must not run beside the result's HDF5 writes.
        // TESSERA_READ_AHEAD=0: each chunk filled only when it is worked on; =1: in pass 1 too, =later:
        // not in pass 1, whatever the backend's choice (A/B studies).
        run.scratch = scratch.get();
        run.host_free = host_free;
        run.keep_inputs = plan.inputs_kept;
        run.write_behind = plan.write_behind;
        run.read_ahead_first_pass = switch_is("TESSERA_READ_AHEAD", "1") ||
                                    (host_free && !switch_is("TESSERA_READ_AHEAD", "later"));
        run.read_ahead = !switch_is("TESSERA_READ_AHEAD", "0") && !driver_uses_hdf5(info.driver) &&
                         (opt.coherence.empty() || !driver_uses_hdf5(RasterReader(opt.coherence, 1).info().driver)) &&
                         (opt.mask.empty() || !driver_uses_hdf5(RasterReader(opt.mask, 1).info().driver));
        st = ops.unwrap_chunked(grid, comm, params, plan.tile_rows, opt.save_cycles, run);
        Lap lap;
        add_region_stats(rep, st);
        const std::vector<Attribute> attrs = finish_report(rep, st, comm, opt, info, grid);
        const double reported = lap.next_ms();
        for (auto& s : sinks) s->finish(attrs);  // the HDF5 complete and closed, then the GeoTIFF from it
        if (trace_on()) std::fprintf(stderr, "tessera: finish: report %.1f ms, sinks %.1f ms\n", reported, lap.next_ms());
    }
    arrays.reset();  // gone as the run in one piece ends (after the unlocking beside its write)

    if (quicklook) {
        // Each rank reduces its window to quicklook cells; rank 0 draws them.
        const auto parts = comm.gatherv(cells, 0);
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
    Lap commit_lap;
    std::string err;
    if (rank == 0) {
        try {
            inject_error_for_tests(rank, "commit");  // every output written, none in place yet
            outputs.commit();  // every output or none; a failure leaves the old files as they were
        } catch (const std::exception& e) {
            err = e.what();
        }
    }
    if (comm.max(int64_t{!err.empty()}))
        throw InputError::everywhere(rank == 0 ? err : opt.output + ": output failed");
    if (trace_on()) std::fprintf(stderr, "tessera: outputs committed in %.1f ms\n", commit_lap.next_ms());
    stage_done("write");
    rep.total_seconds = comm.max(std::chrono::duration<double>(clock::now() - t_start).count());
    return rep;
}

}  // namespace

int64_t run_tile_size(const UnwrapOptions& opt, const RasterInfo& info, int ranks) {
    return opt.tile_size_given ? opt.tile_size : tile_for_ranks(info.rows, info.cols, opt.tile_size, ranks, opt.rank_grid);
}

PlanRequest plan_request(const UnwrapOptions& opt, const RasterInfo& info, int ranks) {
    PlanRequest q;
    q.H = info.rows, q.W = info.cols, q.tile = run_tile_size(opt, info, ranks), q.ranks = ranks, q.rank_grid = opt.rank_grid;
    q.cuda = opt.backend == Backend::kCuda, q.cycles = opt.save_cycles;
    // Read per pass: the phase (8 complex), coherence, mask; written once: u, labels (+ k).
    q.input_bytes_per_pixel = (info.is_complex ? 8 : 4) + (opt.coherence.empty() ? 0 : 4) + (opt.mask.empty() ? 0 : 1);
    q.output_bytes_per_pixel = 4 + 1 + (opt.save_cycles ? 4 : 0);
    q.chunk_rows = opt.chunk_rows;
    q.scratch = !opt.scratch.empty();
    // TESSERA_REREAD=1: a streamed run reads its inputs in every pass (A/B studies, tests; section 5.1).
    q.keep_inputs = !switch_is("TESSERA_REREAD", "1");
    // TESSERA_WRITE_BEHIND=0: a streamed run writes each chunk before it works on the next (A/B).
    q.write_behind = mpi_calls_from_any_thread() && !switch_is("TESSERA_WRITE_BEHIND", "0");
    return q;
}

UnwrapReport run_unwrap(const UnwrapOptions& opt, MPI_Comm mpi_comm) { return run(opt, nullptr, nullptr, mpi_comm); }

UnwrapReport run_unwrap(const UnwrapOptions& opt, const PhaseSource* source, MPI_Comm mpi_comm) {
    return run(opt, source, nullptr, mpi_comm);
}

UnwrapReport run_unwrap(const UnwrapOptions& opt, const PhaseSource& source, MemoryResult& result, MPI_Comm mpi_comm) {
    return run(opt, &source, &result, mpi_comm);
}

}  // namespace tessera
