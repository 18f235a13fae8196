#include "src/unwrap_pipeline.h"

#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "io/geotiff_writer.h"
#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/raster_reader.h"
#include "src/progress.h"
#include "src/unwrap_region.h"

namespace tessera {

namespace {

constexpr int64_t kRowBlock = 256;                       // rows per coherence/mask read
constexpr float kMaxAbsPhase = 64.0f * std::numbers::pi_v<float>;  // section 2 bounds |q|

// Inputs folded into phase (0 at invalid) and flags (kInvalid, kLowCoherence).
void read_inputs(const UnwrapOptions& opt, const RasterReader& in, const RegionArrays& a, const Window& own) {
    std::vector<uint8_t> valid(static_cast<size_t>(a.buf.size()));
    in.read_phase(own, a.phase, valid.data(), a.buf.cols);
    float worst = 0;
#pragma omp parallel for reduction(max : worst)
    for (int64_t i = 0; i < a.buf.size(); ++i) {
        a.flags[i] = valid[static_cast<size_t>(i)] ? 0 : kInvalid;
        worst = std::max(worst, std::fabs(a.phase[i]));
    }
    valid = {};
    if (worst > kMaxAbsPhase)
        throw InputError(opt.input, "values up to " + std::to_string(worst) +
                                        " rad: not a wrapped phase (expected |phase| <= 64 pi)");
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
}

void check_same_size(const std::string& path, const RasterInfo& info, const RasterInfo& ref) {
    if (info.rows != ref.rows || info.cols != ref.cols)
        throw InputError(path, "size " + std::to_string(info.cols) + "x" + std::to_string(info.rows) +
                                   " (cols x rows) differs from the phase's " + std::to_string(ref.cols) + "x" +
                                   std::to_string(ref.rows));
}

}  // namespace

UnwrapReport run_unwrap(const UnwrapOptions& opt) {
    using clock = std::chrono::steady_clock;
    const auto t_start = clock::now();
    UnwrapReport rep;
    Progress progress(opt.quiet);
    auto t_stage = clock::now();
    auto stage_done = [&](const char* name) {
        const auto now = clock::now();
        const double s = std::chrono::duration<double>(now - t_stage).count();
        rep.times.push_back({name, s});
        progress.stage(name, s);
        t_stage = now;
    };

    // --- inputs and their checks (section 7) ---
    RasterReader in(opt.input, opt.band);
    const RasterInfo& info = in.info();
    const int64_t H = info.rows, W = info.cols;
    if (H < 2 || W < 2)
        throw InputError(opt.input, "image is " + std::to_string(W) + "x" + std::to_string(H) +
                                        " (cols x rows); at least 2x2 is needed");
    if (!opt.coherence.empty()) check_same_size(opt.coherence, RasterReader(opt.coherence, 1).info(), info);
    if (!opt.mask.empty()) check_same_size(opt.mask, RasterReader(opt.mask, 1).info(), info);
    if (opt.reference && (opt.reference->first < 0 || opt.reference->first >= H || opt.reference->second < 0 ||
                          opt.reference->second >= W))
        throw InputError(opt.input, "reference pixel (" + std::to_string(opt.reference->first) + ", " +
                                        std::to_string(opt.reference->second) + ") is outside the image");
    if (opt.tile_size < 2) throw InputError(opt.input, "--tile-size must be at least 2");
    if (opt.max_pair_distance < 1) throw InputError(opt.input, "--max-pair-distance must be at least 1");
    if (!opt.geotiff.empty()) check_output_directory(opt.geotiff);
    // Created first so that a bad output path fails before any work; removed unless committed.
    Hdf5Writer out(opt.output, MPI_COMM_WORLD, H, W);
    rep.rows = H;
    rep.cols = W;

    const Window own{0, 0, H, W};
    std::vector<float> phase(static_cast<size_t>(own.size()));
    std::vector<uint8_t> flags(static_cast<size_t>(own.size()));
    std::vector<uint32_t> label(static_cast<size_t>(own.size()));
    std::vector<int32_t> cycles(opt.save_cycles ? static_cast<size_t>(own.size()) : 0);
    RegionArrays a{H, W, own, phase.data(), flags.data(), label.data(), opt.save_cycles ? cycles.data() : nullptr};
    read_inputs(opt, in, a, own);
    int64_t valid = 0;
#pragma omp parallel for reduction(+ : valid)
    for (int64_t i = 0; i < own.size(); ++i) valid += !(flags[static_cast<size_t>(i)] & kInvalid);
    if (valid == 0) throw InputError(opt.input, "no valid pixels (all nodata or masked)");
    if (opt.reference && (flags[static_cast<size_t>(a.index(opt.reference->first, opt.reference->second))] & kInvalid))
        throw InputError(opt.input, "reference pixel is invalid (nodata or masked)");
    rep.valid = valid;
    stage_done("read");

    UnwrapParams params{opt.tile_size, opt.max_pair_distance, opt.min_component_size, opt.reference};
    std::vector<Residue> res;
    const RegionStats st = unwrap_region(a, params, opt.save_residues ? &res : nullptr, stage_done);
    rep.tiles = st.tiles;
    rep.residues = st.residues;
    rep.rounds = st.rounds;
    rep.leftovers = st.leftovers;
    rep.pairs = st.pairs;
    rep.ground_cuts = st.ground_cuts;
    rep.components = st.components;
    rep.labelled = st.labelled;
    rep.largest = st.largest;
    rep.conflicts = st.conflicts;

    // --- outputs (section 7) ---
    const double nan = std::nan("");
    // A noisy float phase deflates about 1.3x at ~45 MB/s per core (README): off by default.
    out.set_deflate(opt.compress_phase);
    out.write_f32("unwrapped_phase", own, phase.data(), W,
                  {{"units", std::string("radians")},
                   {"description", std::string("unwrapped phase u = phi + 2 pi k; NaN where invalid")},
                   {"_FillValue", nan}});
    out.set_deflate(1);
    out.write_u32("connected_components", own, label.data(), W,
                  {{"description", std::string("connected component 1..N by size descending; 0 = invalid or "
                                               "unreliable")}});
    if (opt.save_cycles)
        out.write_i32("cycles", own, cycles.data(), W,
                      {{"description", std::string("integer cycles k: u = phi + 2 pi k (0 where invalid)")}});
    if (opt.save_residues) {
        std::vector<int8_t> q(static_cast<size_t>(own.size()), 0);
        for (const Residue& x : res) q[static_cast<size_t>(a.index(x.r, x.c))] += static_cast<int8_t>(x.sign);
        out.write_i8("residues", own, q.data(), W,
                     {{"description", std::string("residue charge of plaquette (r,c), corners (r,c)..(r+1,c+1)")}});
    }
    if (opt.save_cuts) {
        std::vector<uint8_t> b(static_cast<size_t>(own.size()));
        for (size_t i = 0; i < b.size(); ++i) b[i] = flags[i] & (kBlockRight | kBlockDown);
        out.write_u8("branch_cuts", own, b.data(), W,
                     {{"description", std::string("blocked edges: bit 0 right edge, bit 1 down edge (cuts and "
                                                 "edges touching invalid pixels)")}});
    }
    rep.total_seconds = std::chrono::duration<double>(clock::now() - t_start).count();
    std::vector<Attribute> attrs = {
        {"software", std::string("tessera ") + TESSERA_VERSION},
        {"algorithm", std::string("residues + exact greedy branch cuts + weighted union-find (ARCHITECTURE.md)")},
        {"input", opt.input},
        {"coherence", opt.coherence},
        {"mask", opt.mask},
        {"band", int64_t{opt.band}},
        {"rows", H},
        {"cols", W},
        {"tile_size", opt.tile_size},
        {"compress_phase", int64_t{opt.compress_phase}},
        {"max_pair_distance", opt.max_pair_distance},
        {"min_component_size", opt.min_component_size},
        {"min_coherence", opt.min_coherence},
        {"reference_row", opt.reference ? opt.reference->first : int64_t{-1}},
        {"reference_col", opt.reference ? opt.reference->second : int64_t{-1}},
        {"ranks", int64_t{1}},
        {"threads", int64_t{omp_get_max_threads()}},
        {"tiles", rep.tiles},
        {"valid_pixels", rep.valid},
        {"residues", rep.residues},
        {"matching_rounds", rep.rounds},
        {"phase_b_leftovers", rep.leftovers},
        {"pair_cuts", rep.pairs},
        {"ground_cuts", rep.ground_cuts},
        {"components", rep.components},
        {"labelled_components", rep.labelled},
        {"largest_component", rep.largest},
        {"conflicts", rep.conflicts},
        {"geotransform", std::vector<double>(info.geotransform.begin(), info.geotransform.end())},
        {"has_geotransform", int64_t{info.has_geotransform}},
        {"projection", info.projection_wkt},
        {"nodata", nan},
    };
    for (const StageTime& st : rep.times) attrs.push_back({"time_" + st.stage, st.seconds});
    out.write_attributes(attrs);
    if (!opt.geotiff.empty())
        write_geotiff_f32(opt.geotiff, H, W, phase.data(),
                          GeoRef{info.has_geotransform, info.geotransform, info.projection_wkt}, nan);
    try {
        out.commit();
    } catch (...) {
        if (!opt.geotiff.empty()) std::remove(opt.geotiff.c_str());
        throw;
    }
    stage_done("write");
    rep.total_seconds = std::chrono::duration<double>(clock::now() - t_start).count();
    return rep;
}

}  // namespace tessera
