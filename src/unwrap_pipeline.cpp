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
#include "kernels/cpu/kernels.h"
#include "kernels/union_find.h"
#include "partition/matching.h"
#include "partition/offset_solve.h"
#include "partition/tile_grid.h"
#include "src/progress.h"

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

    const TileGrid grid(H, W, opt.tile_size);
    const int64_t T = grid.count();
    rep.tiles = T;

    // --- residues (section 2), per tile ---
    std::vector<std::vector<Residue>> tile_res(static_cast<size_t>(T));
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) cpu::find_residues(a, grid.window(t), tile_res[static_cast<size_t>(t)]);
    std::vector<Residue> res;
    for (auto& v : tile_res) res.insert(res.end(), v.begin(), v.end());
    tile_res = {};
    std::sort(res.begin(), res.end(), [](const Residue& x, const Residue& y) { return x.id < y.id; });
    rep.residues = static_cast<int64_t>(res.size());
    stage_done("residues");

    // --- branch cuts: exact greedy matching (section 3) ---
    MatchStats ms;
    const std::vector<Cut> cuts = match_residues(res, grid, opt.max_pair_distance, ms);
    rep.rounds = ms.rounds;
    rep.leftovers = ms.leftovers;
    rep.pairs = ms.phase_a_pairs + ms.phase_b_pairs;
    rep.ground_cuts = ms.phase_a_ground + ms.phase_b_ground;
    stage_done("matching");

    // --- rasterise: each tile blocks the edges it owns ---
    std::vector<std::vector<int32_t>> tile_cuts(static_cast<size_t>(T));
    for (int32_t i = 0; i < static_cast<int32_t>(cuts.size()); ++i) {
        const Cut& c = cuts[static_cast<size_t>(i)];
        int64_t r0 = std::min(c.ra, c.rb), r1 = std::max(c.ra, c.rb) + 1;
        int64_t c0 = std::min(c.ca, c.cb), c1 = std::max(c.ca, c.cb) + 1;
        switch (c.side) {
            case kTop: r0 = 0; break;
            case kBottom: r1 = H - 1; break;
            case kLeft: c0 = 0; break;
            case kRight: c1 = W - 1; break;
            case kNotGround: break;
        }
        r1 = std::min(r1, H - 1);
        c1 = std::min(c1, W - 1);
        for (int64_t ti = r0 / grid.tile; ti <= r1 / grid.tile; ++ti)
            for (int64_t tj = c0 / grid.tile; tj <= c1 / grid.tile; ++tj)
                tile_cuts[static_cast<size_t>(ti * grid.tcols + tj)].push_back(i);
    }
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) cpu::block_invalid_edges(a, grid.window(t));
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) cpu::rasterise_cuts(a, grid.window(t), cuts, tile_cuts[static_cast<size_t>(t)]);
    tile_cuts = {};
    stage_done("rasterise");

    // --- weighted union-find per tile (section 4) ---
    std::vector<int64_t> node_off(static_cast<size_t>(T + 1), 0);
    for (int64_t t = 0; t < T; ++t) node_off[static_cast<size_t>(t + 1)] = node_off[static_cast<size_t>(t)] + grid.window(t).size();
    std::vector<uint64_t> nodes(static_cast<size_t>(node_off.back()));
    std::vector<std::vector<ComponentRecord>> tile_recs(static_cast<size_t>(T));
    int64_t conflicts = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : conflicts)
    for (int64_t t = 0; t < T; ++t) {
        const Window w = grid.window(t);
        uint64_t* nd = nodes.data() + node_off[static_cast<size_t>(t)];
        conflicts += cpu::tile_union_find(a, w, nd);
        // The tile's components: roots in ascending order, with their valid-pixel counts.
        auto& recs = tile_recs[static_cast<size_t>(t)];
        std::vector<uint32_t> count(static_cast<size_t>(w.size()), 0);
        for (int64_t i = 0; i < w.rows; ++i)
            for (int64_t j = 0; j < w.cols; ++j)
                if (!(flags[static_cast<size_t>(a.index(w.row0 + i, w.col0 + j))] & kInvalid))
                    ++count[uf::parent(nd[i * w.cols + j])];
        for (int64_t l = 0; l < w.size(); ++l)
            if (count[static_cast<size_t>(l)] > 0)
                recs.push_back({(w.row0 + l / w.cols) * W + w.col0 + l % w.cols, count[static_cast<size_t>(l)]});
    }
    stage_done("union_find");

    // --- cross-tile constraints and the offset solve (section 4) ---
    auto node_of = [&](int64_t r, int64_t c) {
        const int64_t t = grid.tile_of(r, c);
        const Window w = grid.window(t);
        const uint64_t nd = nodes[static_cast<size_t>(node_off[static_cast<size_t>(t)] + (r - w.row0) * w.cols + (c - w.col0))];
        const int64_t l = uf::parent(nd);
        return std::pair<int64_t, int32_t>{(w.row0 + l / w.cols) * W + w.col0 + l % w.cols, uf::potential(nd)};
    };
    std::vector<std::vector<Constraint>> tile_cons(static_cast<size_t>(T));
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < T; ++t) {
        const Window w = grid.window(t);
        auto& cons = tile_cons[static_cast<size_t>(t)];
        auto add = [&](int64_t ra, int64_t ca, int64_t rb, int64_t cb) {
            const auto [ga, ka] = node_of(ra, ca);
            const auto [gb, kb] = node_of(rb, cb);
            // k(b) - k(a) = -n(a->b)  =>  K(gb) - K(ga) = -n - kb + ka.
            const int32_t n = wrap_count(phase[static_cast<size_t>(a.index(ra, ca))], phase[static_cast<size_t>(a.index(rb, cb))]);
            const Constraint c{ga, gb, -n - kb + ka};
            if (cons.empty() || !(cons.back() == c)) cons.push_back(c);
        };
        const int64_t cr = w.col0 + w.cols - 1, br = w.row0 + w.rows - 1;
        if (cr + 1 < W)
            for (int64_t r = w.row0; r <= br; ++r)
                if (!(flags[static_cast<size_t>(a.index(r, cr))] & kBlockRight)) add(r, cr, r, cr + 1);
        if (br + 1 < H)
            for (int64_t c = w.col0; c <= cr; ++c)
                if (!(flags[static_cast<size_t>(a.index(br, c))] & kBlockDown)) add(br, c, br + 1, c);
    }
    std::vector<ComponentRecord> recs;
    std::vector<Constraint> cons;
    for (auto& v : tile_recs) recs.insert(recs.end(), v.begin(), v.end());
    for (auto& v : tile_cons) cons.insert(cons.end(), v.begin(), v.end());
    tile_cons = {};
    std::sort(recs.begin(), recs.end(), [](const ComponentRecord& x, const ComponentRecord& y) { return x.root < y.root; });
    OffsetSolution sol = solve_offsets(recs, cons, opt.min_component_size);
    conflicts += sol.conflicts;
    rep.components = sol.components;
    rep.labelled = sol.labelled;
    rep.largest = sol.largest;
    rep.conflicts = conflicts;
    auto rec_index = [&](int64_t root) {
        return std::lower_bound(recs.begin(), recs.end(), root,
                                [](const ComponentRecord& x, int64_t v) { return x.root < v; }) - recs.begin();
    };
    if (opt.reference) {
        // --reference: shift that pixel's component so k = 0 there (section 4).
        const auto [g, k] = node_of(opt.reference->first, opt.reference->second);
        const size_t ri = static_cast<size_t>(rec_index(g));
        const int64_t groot = sol.global_root[ri];
        const int32_t kref = k + sol.offset[ri];
        for (size_t i = 0; i < recs.size(); ++i)
            if (sol.global_root[i] == groot) sol.offset[i] -= kref;
    }
    stage_done("offset_solve");

    // --- apply offsets and labels, u = phi + 2 pi k ---
#pragma omp parallel
    {
        std::vector<cpu::RootRecord> root_rec;
#pragma omp for schedule(dynamic)
        for (int64_t t = 0; t < T; ++t) {
            const Window w = grid.window(t);
            root_rec.resize(static_cast<size_t>(w.size()));
            size_t ri = static_cast<size_t>(rec_index(tile_recs[static_cast<size_t>(t)].empty() ? 0 : tile_recs[static_cast<size_t>(t)][0].root));
            for (const ComponentRecord& cr : tile_recs[static_cast<size_t>(t)]) {
                while (recs[ri].root != cr.root) ++ri;
                const int64_t r = cr.root / W, c = cr.root % W;
                root_rec[static_cast<size_t>((r - w.row0) * w.cols + (c - w.col0))] = {sol.offset[ri], sol.label[ri]};
            }
            cpu::apply_offsets(a, w, nodes.data() + node_off[static_cast<size_t>(t)], root_rec.data());
        }
    }
    nodes = {};
    tile_recs = {};
    stage_done("apply");

    // --- outputs (section 7) ---
    const double nan = std::nan("");
    out.write_f32("unwrapped_phase", own, phase.data(), W,
                  {{"units", std::string("radians")},
                   {"description", std::string("unwrapped phase u = phi + 2 pi k; NaN where invalid")},
                   {"_FillValue", nan}});
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
        {"max_pair_distance", opt.max_pair_distance},
        {"min_component_size", opt.min_component_size},
        {"min_coherence", opt.min_coherence},
        {"reference_row", opt.reference ? opt.reference->first : int64_t{-1}},
        {"reference_col", opt.reference ? opt.reference->second : int64_t{-1}},
        {"ranks", int64_t{1}},
        {"threads", int64_t{omp_get_max_threads()}},
        {"tiles", T},
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
