// The CUDA backend against the CPU backend, bit for bit (ARCHITECTURE.md section 1): per
// stage through the Region interface (residues, cut bits, components, strips, apply) on
// random phase with invalid and low-coherence pixels, multi-charge residues and rounding
// ties, on whole images and on own windows with a halo; then end to end through
// unwrap_image / unwrap_region on the synthetic scenes, several tile sizes, across ranks.
// Every test skips, saying why, when no CUDA device is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/region.h"
#include "kernels/label_width.h"
#include "kernels/cuda/region.h"
#include "kernels/types.h"
#include "partition/comm.h"
#include "partition/matching.h"
#include "partition/offset_solve.h"
#include "partition/rank_grid.h"
#include "app/synth.h"
#include "pipeline/unwrap_region.h"
#include "pipeline/unwrap_stages.h"
#include "support/open_edges.h"
#include "support/gpu_skip.h"

namespace tessera {
namespace {

constexpr float kPi = std::numbers::pi_v<float>;

// ---------------------------------------------------------------------------------------
// Inputs

struct Image {
    int64_t H = 0, W = 0;
    std::vector<float> phase;    // 0 at invalid pixels (the contract)
    std::vector<uint8_t> flags;  // kInvalid, kLowCoherence
};

enum class Kind {
    kNoise,    // uniform in [-4 pi, 4 pi]: many residues, charges up to |q| = 4 and more
    kFringes,  // wrapped smooth surface plus noise: big components, k far from 0
    kTies,     // multiples of pi/2 and their float neighbours: rint ties and near-ties
};

Image random_image(int64_t H, int64_t W, uint64_t seed, Kind kind, double p_invalid, double p_low) {
    Image im{H, W, std::vector<float>(static_cast<size_t>(H * W)), std::vector<uint8_t>(static_cast<size_t>(H * W))};
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    std::normal_distribution<double> noise(0.0, 0.7);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t i = static_cast<size_t>(r * W + c);
            float v = 0;
            switch (kind) {
                case Kind::kNoise:
                    v = static_cast<float>((2 * u01(rng) - 1) * 4 * std::numbers::pi);
                    break;
                case Kind::kFringes: {
                    const double t = 0.21 * r + 0.13 * c + 3e-4 * ((r - H / 3.0) * (r - H / 3.0) + (c - W / 2.0) * (c - W / 2.0)) +
                                     noise(rng);
                    v = static_cast<float>(t - 2 * std::numbers::pi * std::floor(t / (2 * std::numbers::pi) + 0.5));
                    break;
                }
                case Kind::kTies: {
                    const int m = static_cast<int>(u01(rng) * 17) - 8;  // -8..8 quarter turns
                    v = static_cast<float>(m) * (kPi / 2);
                    const double z = u01(rng);
                    const int k = static_cast<int>(z * 7) - 3;  // -3..3 ulps
                    for (int j = 0; j < std::abs(k); ++j) v = std::nextafter(v, k > 0 ? 1e9f : -1e9f);
                    break;
                }
            }
            const double z = u01(rng);
            if (z < p_invalid) {
                im.flags[i] = kInvalid;
                v = 0.0f;
            } else if (z < p_invalid + p_low) {
                im.flags[i] = kLowCoherence;
            }
            im.phase[i] = v;
        }
    // A nodata block, so that whole components are cut off.
    if (p_invalid > 0 && H > 8 && W > 8) {
        const int64_t r0 = H / 4, c0 = W / 3, rr = std::max<int64_t>(2, H / 5), cc = std::max<int64_t>(2, W / 7);
        for (int64_t r = r0; r < std::min(H, r0 + rr); ++r)
            for (int64_t c = c0; c < std::min(W, c0 + cc); ++c) {
                im.flags[static_cast<size_t>(r * W + c)] = kInvalid;
                im.phase[static_cast<size_t>(r * W + c)] = 0.0f;
            }
    }
    return im;
}

// Host arrays over `buf` (copied from the image), as a rank holds them.
struct Arrays {
    std::vector<float> phase;
    std::vector<uint8_t> flags;
    std::vector<uint32_t> label;
    std::vector<int32_t> cycles;
    RegionArrays a;
};

Arrays make_arrays(const Image& im, const Window& buf, bool with_cycles = true) {
    Arrays x;
    const size_t n = static_cast<size_t>(buf.size());
    x.phase.resize(n);
    x.flags.resize(n);
    x.label.assign(n, 0xdeadbeefu);
    x.cycles.assign(n, 0x7eadbeef);
    for (int64_t r = 0; r < buf.rows; ++r)
        for (int64_t c = 0; c < buf.cols; ++c) {
            const size_t s = static_cast<size_t>((buf.row0 + r) * im.W + buf.col0 + c), d = static_cast<size_t>(r * buf.cols + c);
            x.phase[d] = im.phase[s];
            x.flags[d] = im.flags[s];
        }
    x.a = RegionArrays{im.H, im.W, buf, x.phase.data(), x.flags.data(), x.label.data(),
                       with_cycles ? x.cycles.data() : nullptr};
    return x;
}

Window halo_of(const Window& own, int64_t H, int64_t W) {
    Window b = own;
    if (b.row0 + b.rows < H) ++b.rows;
    if (b.col0 + b.cols < W) ++b.cols;
    return b;
}

bool same_bytes(const void* a, const void* b, size_t n) { return std::memcmp(a, b, n) == 0; }

// Index of the first differing element, for messages.
template <class T>
std::string first_difference(const std::vector<T>& x, const std::vector<T>& y, int64_t cols) {
    for (size_t i = 0; i < std::min(x.size(), y.size()); ++i)
        if (std::memcmp(&x[i], &y[i], sizeof(T)) != 0)
            return "first difference at buffer pixel (" + std::to_string(static_cast<int64_t>(i) / cols) + ", " +
                   std::to_string(static_cast<int64_t>(i) % cols) + ")";
    return x.size() == y.size() ? "no difference" : "sizes differ";
}

size_t record_of(const std::vector<ComponentRecord>& recs, int64_t root) {
    return static_cast<size_t>(std::lower_bound(recs.begin(), recs.end(), root,
                                                [](const ComponentRecord& x, int64_t v) { return x.root < v; }) -
                               recs.begin());
}

// The whole image's residues (CPU) and the global greedy cuts.
std::vector<Cut> image_cuts(const Image& im, int64_t tile, int64_t* n_residues = nullptr) {
    Arrays x = make_arrays(im, Window{0, 0, im.H, im.W});
    const TileGrid tg(im.H, im.W, tile);
    cpu::Region region(x.a, Window{0, 0, im.H, im.W}, tg);
    const auto res = region.find_residues();
    if (n_residues) *n_residues = static_cast<int64_t>(res.size());
    RankGrid grid;
    grid.tiles = tg;
    Comm self(MPI_COMM_SELF);
    MatchStats ms;
    return match_residues(res, grid, 64, self, ms);
}

// ---------------------------------------------------------------------------------------
// Per-stage comparison through the Region interface

struct StageCase {
    Image im;
    Window own;
    int64_t tile;
    int64_t min_size = 5;
    bool expect_residues = true;
    bool expect_cycles = false;
};

void compare_stages(const StageCase& sc) {
    const Image& im = sc.im;
    const Window own = sc.own, buf = halo_of(own, im.H, im.W);
    const TileGrid grid(im.H, im.W, sc.tile);
    SCOPED_TRACE("image " + std::to_string(im.H) + "x" + std::to_string(im.W) + ", own rows " +
                 std::to_string(own.row0) + "+" + std::to_string(own.rows) + " cols " + std::to_string(own.col0) + "+" +
                 std::to_string(own.cols) + ", tile " + std::to_string(sc.tile));
    Arrays xc = make_arrays(im, buf), xg = make_arrays(im, buf);
    cpu::Region cr(xc.a, own, grid);
    cuda::Region gr(xg.a, own, grid);

    // 1. Residues: identical lists (ids, plaquettes, signs), sorted by id.
    const auto rc = cr.find_residues();
    const auto rg = gr.find_residues();
    ASSERT_EQ(rc.size(), rg.size());
    for (size_t i = 0; i < rc.size(); ++i) {
        ASSERT_EQ(rc[i].id, rg[i].id) << "residue " << i;
        ASSERT_EQ(rc[i].r, rg[i].r) << "residue " << i;
        ASSERT_EQ(rc[i].c, rg[i].c) << "residue " << i;
        ASSERT_EQ(rc[i].sign, rg[i].sign) << "residue " << i;
    }
    if (sc.expect_residues) {
        EXPECT_GT(rc.size(), 0u) << "the case exercises no residue";
    }

    // 2. Cut bits: the same flag bytes over the whole buffer after place_cuts.
    const std::vector<Cut> cuts = image_cuts(im, sc.tile);
    cr.place_cuts(cuts);
    gr.place_cuts(cuts);
    gr.finish();  // copies the flags alone
    ASSERT_TRUE(same_bytes(xc.flags.data(), xg.flags.data(), xc.flags.size()))
        << "flags differ after place_cuts: " << first_difference(xc.flags, xg.flags, buf.cols);

    // 3. Components: the same global components after the local solves (conservativeness
    // itself is checked from input and output: tests/support/open_edges.h).
    const RegionComponents cc = cr.union_find(), cg = gr.union_find();
    EXPECT_EQ(cc.conflicts, cg.conflicts);
    EXPECT_TRUE(cg.constraints.empty());
    ASSERT_TRUE(std::is_sorted(cg.records.begin(), cg.records.end(),
                               [](const ComponentRecord& a, const ComponentRecord& b) { return a.root < b.root; }));
    const OffsetSolution sc_ = solve_offsets(cc.records, cc.constraints, sc.min_size);
    const OffsetSolution sg = solve_offsets(cg.records, cg.constraints, sc.min_size);
    EXPECT_EQ(sc_.conflicts, sg.conflicts);
    EXPECT_EQ(sc_.components, sg.components);
    EXPECT_EQ(sc_.labelled, sg.labelled);
    EXPECT_EQ(sc_.largest, sg.largest);
    EXPECT_EQ(sg.components, static_cast<int64_t>(cg.records.size())) << "GPU records are whole components";
    // One tile covering own: the CPU's tile components are the region's, record for record.
    if (own.row0 % sc.tile == 0 && own.col0 % sc.tile == 0 && own.rows <= sc.tile && own.cols <= sc.tile) {
        ASSERT_EQ(cc.records.size(), cg.records.size());
        for (size_t i = 0; i < cc.records.size(); ++i) {
            EXPECT_EQ(cc.records[i].root, cg.records[i].root) << "record " << i;
            EXPECT_EQ(cc.records[i].size, cg.records[i].size) << "record " << i;
        }
    }

    // 4. Strips and nodes: flags and phase equal; valid pixels in the same region component
    //    with the same k relative to its smallest pixel.
    std::vector<Window> strips = {{own.row0, own.col0, 1, own.cols},
                                  {own.row0, own.col0, own.rows, 1},
                                  {own.row0 + own.rows - 1, own.col0, 1, own.cols},
                                  {own.row0, own.col0 + own.cols - 1, own.rows, 1}};
    if (own.size() <= 40000) strips.push_back(own);
    int64_t nonzero_k = 0;
    for (const Window& w : strips) {
        const std::vector<PixelState> pc = cr.strip(w), pg = gr.strip(w);
        ASSERT_EQ(pc.size(), pg.size());
        for (size_t i = 0; i < pc.size(); ++i) {
            const int64_t r = w.row0 + static_cast<int64_t>(i) / w.cols, c = w.col0 + static_cast<int64_t>(i) % w.cols;
            ASSERT_EQ(pc[i].flags, pg[i].flags) << "pixel (" << r << ", " << c << ")";
            ASSERT_TRUE(same_bytes(&pc[i].phase, &pg[i].phase, sizeof(float))) << "pixel (" << r << ", " << c << ")";
            if (pc[i].flags & kUnreliable) continue;  // no component (ARCHITECTURE / README)
            const size_t ri = record_of(cc.records, pc[i].root);
            ASSERT_LT(ri, cc.records.size());
            ASSERT_EQ(cc.records[ri].root, pc[i].root);
            const size_t gi = record_of(cg.records, pg[i].root);
            ASSERT_LT(gi, cg.records.size());
            ASSERT_EQ(cg.records[gi].root, pg[i].root) << "pixel (" << r << ", " << c << ") has no GPU record";
            EXPECT_EQ(sc_.global_root[ri], pg[i].root) << "pixel (" << r << ", " << c << ")";
            EXPECT_EQ(pc[i].k + sc_.offset[ri], pg[i].k) << "pixel (" << r << ", " << c << ")";
            nonzero_k += pg[i].k != 0;
        }
    }
    // node() agrees with strip() (the driver's --reference path uses both).
    for (int64_t r : {own.row0, own.row0 + own.rows / 2, own.row0 + own.rows - 1})
        for (int64_t c : {own.col0, own.col0 + own.cols / 3, own.col0 + own.cols - 1}) {
            const NodeValue nv = gr.node(r, c);
            const PixelState ps = gr.strip({r, c, 1, 1}).at(0);
            EXPECT_EQ(nv.root, ps.root);
            EXPECT_EQ(nv.k, ps.k);
        }

    // 5. Apply and finish: the same u, labels, cycles and flags, byte for byte.
    cr.apply(ComponentAssignment{cc.records, sc_.offset, sc_.label});
    gr.apply(ComponentAssignment{cg.records, sg.offset, sg.label});
    cr.finish();
    gr.finish();
    EXPECT_TRUE(same_bytes(xc.phase.data(), xg.phase.data(), xc.phase.size() * sizeof(float)))
        << "unwrapped phase differs: " << first_difference(xc.phase, xg.phase, buf.cols);
    EXPECT_EQ(xc.label, xg.label) << first_difference(xc.label, xg.label, buf.cols);
    EXPECT_EQ(xc.cycles, xg.cycles) << first_difference(xc.cycles, xg.cycles, buf.cols);
    EXPECT_TRUE(same_bytes(xc.flags.data(), xg.flags.data(), xc.flags.size()))
        << "flags differ after finish: " << first_difference(xc.flags, xg.flags, buf.cols);
    // The halo is not the region's: untouched.
    for (int64_t r = buf.row0; r < buf.row0 + buf.rows; ++r)
        for (int64_t c = buf.col0; c < buf.col0 + buf.cols; ++c)
            if (!own.contains(r, c)) {
                const size_t i = static_cast<size_t>(xg.a.index(r, c));
                ASSERT_EQ(xg.label[i], 0xdeadbeefu) << "halo pixel (" << r << ", " << c << ") written";
                ASSERT_EQ(xg.cycles[i], 0x7eadbeef) << "halo pixel (" << r << ", " << c << ") written";
            }
    if (sc.expect_cycles) {
        EXPECT_GT(nonzero_k, 0) << "the case exercises no k != 0";
    }
}

TEST(CudaRegion, StagesMatchCpuOnWholeImages) {
    SKIP_WITHOUT_GPU();
    struct Size {
        int64_t H, W;
    };
    uint64_t seed = 1;
    for (const Size sz : {Size{2, 2}, Size{2, 3}, Size{3, 2}, Size{2, 517}, Size{517, 2}, Size{37, 301}, Size{64, 64},
                          Size{129, 257}, Size{300, 263}}) {
        for (Kind kind : {Kind::kNoise, Kind::kFringes, Kind::kTies}) {
            for (int64_t tile : {int64_t{1} << 20, int64_t{7}, int64_t{32}, int64_t{64}}) {
                StageCase sc;
                sc.im = random_image(sz.H, sz.W, seed++, kind, 0.05, 0.1);
                sc.own = Window{0, 0, sz.H, sz.W};
                sc.tile = tile;
                sc.expect_residues = sz.H * sz.W >= 64 && kind != Kind::kFringes;
                sc.expect_cycles = sz.H * sz.W >= 1000 && kind == Kind::kFringes;
                compare_stages(sc);
                if (HasFatalFailure()) return;
            }
        }
    }
}

TEST(CudaRegion, StagesMatchCpuOnOwnWindowsWithHalo) {
    SKIP_WITHOUT_GPU();
    uint64_t seed = 100;
    for (Kind kind : {Kind::kNoise, Kind::kFringes, Kind::kTies}) {
        const Image im = random_image(301, 277, seed++, kind, 0.04, 0.1);
        const int64_t t = 32;
        // Interior (halo below and right), top-left corner, bottom-right corner (no halo),
        // a one-tile region, a full-width band.
        for (const Window own : {Window{64, 32, 128, 96}, Window{0, 0, 96, 64}, Window{256, 224, 301 - 256, 277 - 224},
                                 Window{96, 128, 32, 32}, Window{160, 0, 64, 277}}) {
            StageCase sc{im, own, t, 3, kind != Kind::kFringes, kind == Kind::kFringes};
            compare_stages(sc);
            if (HasFatalFailure()) return;
        }
    }
}

TEST(CudaRegion, MultiChargeResiduesExpandLikeTheCpu) {
    SKIP_WITHOUT_GPU();
    // |q| >= 2 in one plaquette needs rounding ties on all four edges: draw the corners from
    // multiples of pi/2 moved by up to 3 ulps until 10 such plaquettes have been seen.
    Image im{2, 2, {0.0f, 0.0f, 0.0f, 0.0f}, {0, 0, 0, 0}};
    std::mt19937_64 rng(7);
    int found = 0;
    for (int trial = 0; trial < 2000000 && found < 10; ++trial) {
        for (float& v : im.phase) {
            v = static_cast<float>(static_cast<int>(rng() % 17) - 8) * (kPi / 2);
            const int k = static_cast<int>(rng() % 7) - 3;
            for (int i = 0; i < std::abs(k); ++i) v = std::nextafter(v, k > 0 ? 1e9f : -1e9f);
        }
        auto wc = [](float a, float b) { return wrap_count(a, b); };
        const int q = wc(im.phase[0], im.phase[2]) + wc(im.phase[2], im.phase[3]) - wc(im.phase[0], im.phase[1]) -
                      wc(im.phase[1], im.phase[3]);
        if (std::abs(q) < 2) continue;
        ++found;
        StageCase sc{im, Window{0, 0, 2, 2}, 1 << 20, 1, true};
        compare_stages(sc);
        if (HasFatalFailure()) return;
        Arrays x = make_arrays(im, Window{0, 0, 2, 2});
        cuda::Region gr(x.a, Window{0, 0, 2, 2}, TileGrid(2, 2, 64));
        const auto res = gr.find_residues();
        ASSERT_EQ(res.size(), static_cast<size_t>(std::abs(q)));
        for (size_t s = 0; s < res.size(); ++s) {
            EXPECT_EQ(res[s].id, residue_id(0, 0, 2, static_cast<int64_t>(s)));
            EXPECT_EQ(res[s].sign, q > 0 ? 1 : -1);
        }
    }
    EXPECT_EQ(found, 10) << "too few multi-charge plaquettes were generated";
}

// Deep union-find trees: a serpentine corridor (one component of ~n/2 pixels whose rows
// join only at alternating ends) and dense noise with many small components.
TEST(CudaRegion, SerpentineAndFragmentedComponents) {
    SKIP_WITHOUT_GPU();
    for (int variant = 0; variant < 3; ++variant) {
        const int64_t H = 515, W = 1029;
        Image im = random_image(H, W, 900 + variant, variant == 2 ? Kind::kNoise : Kind::kFringes, 0, 0);
        if (variant < 2) {
            for (int64_t r = 1; r < H; r += 2)
                for (int64_t c = 0; c < W; ++c) {
                    const bool gap = ((r / 2) % 2 == 0) ? c == W - 1 - variant : c == variant;
                    if (!gap) {
                        im.flags[static_cast<size_t>(r * W + c)] = kInvalid;
                        im.phase[static_cast<size_t>(r * W + c)] = 0.0f;
                    }
                }
        } else {
            std::mt19937_64 rng(5);
            for (size_t i = 0; i < im.phase.size(); ++i)
                if (rng() % 100 < 35) im.flags[i] = kInvalid, im.phase[i] = 0.0f;
        }
        for (int64_t tile : {int64_t{64}, int64_t{1} << 20}) {
            StageCase sc{im, Window{0, 0, H, W}, tile, 1, variant == 2, variant < 2};
            compare_stages(sc);
            if (HasFatalFailure()) return;
        }
    }
}

TEST(CudaRegion, RejectsBadWindows) {
    SKIP_WITHOUT_GPU();
    // 2^32 pixels in own: union-find words hold 32-bit own-local indices. Rejected before
    // any host or device memory is touched.
    RegionArrays big{int64_t{1} << 17, int64_t{1} << 15, Window{0, 0, int64_t{1} << 17, int64_t{1} << 15}};
    EXPECT_THROW({ cuda::Region r(big, big.buf, TileGrid(big.H, big.W, 512)); }, std::invalid_argument);
    Image im = random_image(16, 16, 3, Kind::kNoise, 0, 0);
    Arrays x = make_arrays(im, Window{0, 0, 8, 8});
    // Own outside the buffer, and a buffer without the halo the image needs.
    EXPECT_THROW({ cuda::Region r(x.a, Window{0, 0, 9, 8}, TileGrid(16, 16, 8)); }, std::invalid_argument);
    EXPECT_THROW({ cuda::Region r(x.a, Window{0, 0, 8, 8}, TileGrid(16, 16, 8)); }, std::invalid_argument);
    EXPECT_NO_THROW({ cuda::Region r(x.a, Window{0, 0, 7, 7}, TileGrid(16, 16, 7)); });
}

// ---------------------------------------------------------------------------------------
// End to end: unwrap_image with Backend::kCuda vs Backend::kCpu

struct Result {
    std::vector<float> u;
    std::vector<uint32_t> label;
    std::vector<int32_t> k;
    std::vector<uint8_t> flags;
    RegionStats stats;
};

// Flags from the scene: invalid where nodata or zero coherence; low coherence below `low`.
void scene_inputs(const SynthScene& s, float low, std::vector<float>& phase, std::vector<uint8_t>& flags) {
    const size_t n = s.wrapped.size();
    phase.resize(n);
    flags.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const bool ok = std::isfinite(s.wrapped[i]) && s.coherence[i] > 0.0f;
        phase[i] = ok ? s.wrapped[i] : 0.0f;
        flags[i] = ok ? (s.coherence[i] < low ? kLowCoherence : 0) : kInvalid;
    }
}

Result unwrap_scene(const SynthScene& s, const UnwrapParams& p, int64_t tile, float low, bool cycles) {
    Result out;
    scene_inputs(s, low, out.u, out.flags);
    out.label.assign(out.u.size(), 0);
    out.k.assign(out.u.size(), 0);
    RegionArrays a{s.rows, s.cols, Window{0, 0, s.rows, s.cols}, out.u.data(), out.flags.data(), out.label.data(),
                   cycles ? out.k.data() : nullptr};
    out.stats = unwrap_image(a, tile, p);
    return out;
}

// `same_partition`: the same ranks, so that even the count of shared residues must agree.
void expect_same_stats(const RegionStats& a, const RegionStats& b, bool same_partition = true) {
    EXPECT_EQ(a.tiles, b.tiles);
    EXPECT_EQ(a.residues, b.residues);
    EXPECT_EQ(a.lake_joins, b.lake_joins);
    if (same_partition) EXPECT_EQ(a.shared, b.shared);
    EXPECT_EQ(a.pairs, b.pairs);
    EXPECT_EQ(a.ground_cuts, b.ground_cuts);
    EXPECT_EQ(a.components, b.components);
    EXPECT_EQ(a.labelled, b.labelled);
    EXPECT_EQ(a.largest, b.largest);
    EXPECT_EQ(a.conflicts, b.conflicts);
}

void expect_same_result(const Result& c, const Result& g, int64_t cols) {
    expect_same_stats(c.stats, g.stats);
    EXPECT_TRUE(same_bytes(c.u.data(), g.u.data(), c.u.size() * sizeof(float)))
        << "unwrapped phase differs: " << first_difference(c.u, g.u, cols);
    EXPECT_EQ(c.label, g.label) << "labels differ: " << first_difference(c.label, g.label, cols);
    EXPECT_EQ(c.k, g.k) << "cycles differ: " << first_difference(c.k, g.k, cols);
    EXPECT_EQ(c.flags, g.flags) << "cut bits differ: " << first_difference(c.flags, g.flags, cols);
}

struct SceneCase {
    std::string name;
    int64_t rows, cols;
};

class CudaVsCpu : public ::testing::TestWithParam<SceneCase> {};

TEST_P(CudaVsCpu, UnwrapImageIsBitIdentical) {
    SKIP_WITHOUT_GPU();
    const SceneCase sc = GetParam();
    const SynthScene s = make_scene(sc.name, sc.rows, sc.cols, 7);
    UnwrapParams pc, pg;
    pg.backend = Backend::kCuda;
    for (int64_t tile : {int64_t{37}, int64_t{64}, int64_t{256}, int64_t{1} << 20}) {
        SCOPED_TRACE("tile " + std::to_string(tile));
        const Result c = unwrap_scene(s, pc, tile, 0.0f, true);
        const Result g = unwrap_scene(s, pg, tile, 0.0f, true);
        expect_same_result(c, g, sc.cols);
        // The case must exercise something: residues (bowl has none), cycles, components.
        if (sc.name != "bowl") {
            EXPECT_GT(c.stats.residues, 0);
        }
        EXPECT_GT(c.stats.labelled, 0);
        EXPECT_TRUE(std::any_of(g.k.begin(), g.k.end(), [](int32_t k) { return k != 0; }));
    }
}

// The coherence below which a tenth of the valid pixels lie.
float coherence_decile(const SynthScene& s) {
    std::vector<float> v;
    for (size_t i = 0; i < s.coherence.size(); ++i)
        if (std::isfinite(s.wrapped[i]) && s.coherence[i] > 0.0f) v.push_back(s.coherence[i]);
    if (v.empty()) return 0.0f;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 10), v.end());
    return v[v.size() / 10];
}

TEST_P(CudaVsCpu, LowCoherenceSmallComponentsReferenceAndNoCycles) {
    SKIP_WITHOUT_GPU();
    const SceneCase sc = GetParam();
    const SynthScene s = make_scene(sc.name, sc.rows, sc.cols, 11);
    const float thr = coherence_decile(s);
    UnwrapParams p;
    p.min_component_size = 1;
    p.max_pair_distance = 8;
    for (bool reference : {false, true}) {
        SCOPED_TRACE(reference ? "with --reference" : "without --reference");
        if (reference) {
            // A reliable pixel (valid, not below the coherence threshold) away from the corner,
            // so that its component gets shifted. (An unreliable reference pixel has no
            // component: the driver must reject it, see the report.)
            int64_t i = sc.rows * 2 / 3 * sc.cols + sc.cols / 3;
            auto reliable = [&](int64_t j) {
                const size_t u = static_cast<size_t>(j);
                return std::isfinite(s.wrapped[u]) && s.coherence[u] > 0.0f && !(s.coherence[u] < thr);
            };
            while (i < sc.rows * sc.cols && !reliable(i)) ++i;
            ASSERT_LT(i, sc.rows * sc.cols);
            p.reference = std::pair<int64_t, int64_t>{i / sc.cols, i % sc.cols};
        }
        p.backend = Backend::kCpu;
        const Result c = unwrap_scene(s, p, 64, thr, true);
        p.backend = Backend::kCuda;
        const Result g = unwrap_scene(s, p, 64, thr, true);
        expect_same_result(c, g, sc.cols);
        const Result g2 = unwrap_scene(s, p, 50, thr, false);  // no cycles array
        EXPECT_TRUE(same_bytes(c.u.data(), g2.u.data(), c.u.size() * sizeof(float)));
        EXPECT_EQ(c.label, g2.label);
        EXPECT_TRUE(std::all_of(g2.k.begin(), g2.k.end(), [](int32_t k) { return k == 0; })) << "cycles written";
        if (reference) {
            EXPECT_EQ(g.k[static_cast<size_t>(p.reference->first * sc.cols + p.reference->second)], 0);
        }
        // Low-coherence pixels are not integrated through: NaN, label 0, k 0.
        int64_t low = 0;
        for (size_t i = 0; i < g.flags.size(); ++i)
            if (g.flags[i] & kLowCoherence && !(g.flags[i] & kInvalid)) {
                ++low;
                ASSERT_EQ(g.label[i], 0u);
                ASSERT_TRUE(std::isnan(g.u[i]));
                ASSERT_EQ(g.k[i], 0);
            }
        EXPECT_GT(low, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Synth, CudaVsCpu,
                         ::testing::Values(SceneCase{"bowl", 300, 263}, SceneCase{"topo", 300, 263},
                                           SceneCase{"holes", 300, 263}, SceneCase{"fringes", 300, 263},
                                           SceneCase{"bowl", 1024, 1024}, SceneCase{"topo", 1024, 1024},
                                           SceneCase{"holes", 1024, 1024}, SceneCase{"fringes", 1024, 1024},
                                           SceneCase{"holes", 2048, 2048}),  // the device's cut rule
                         [](const auto& info) {
                             return info.param.name + "_" + std::to_string(info.param.rows) + "x" +
                                    std::to_string(info.param.cols);
                         });

// One rank, the whole image: p on a copy of im's arrays (and the residue list, if asked).
Result unwrap_random(const Image& im, const UnwrapParams& p, int64_t tile, std::vector<Residue>* residues = nullptr) {
    Result r;
    r.u = im.phase;
    r.flags = im.flags;
    r.label.assign(im.phase.size(), 0);
    r.k.assign(im.phase.size(), 0);
    RegionArrays a{im.H, im.W, Window{0, 0, im.H, im.W}, r.u.data(), r.flags.data(), r.label.data(), r.k.data()};
    Comm self(MPI_COMM_SELF);
    RankGrid grid;
    grid.tiles = TileGrid(im.H, im.W, tile);
    r.stats = unwrap_region(a, grid, self, p, residues, [](const char*) {});
    return r;
}

TEST(CudaVsCpuRandom, UnwrapImageOnNoiseAndTies) {
    SKIP_WITHOUT_GPU();
    uint64_t seed = 500;
    for (Kind kind : {Kind::kNoise, Kind::kTies, Kind::kFringes}) {
        const Image im = random_image(123, 211, seed++, kind, 0.03, 0.05);
        for (int64_t tile : {int64_t{16}, int64_t{1} << 20}) {
            UnwrapParams p;
            p.min_component_size = 3;
            const Result c = unwrap_random(im, p, tile);
            p.backend = Backend::kCuda;
            const Result g = unwrap_random(im, p, tile);
            SCOPED_TRACE("kind " + std::to_string(static_cast<int>(kind)) + " tile " + std::to_string(tile));
            expect_same_result(c, g, im.W);
            EXPECT_GT(c.stats.residues, 0);
        }
    }
}

// One rank: the residue list the device reports must be the CPU's, and the result the same for
// every cut radius (short radii leave clusters to the ground, long ones join far residues).
TEST(CudaVsCpuRandom, OneRankResiduesAndEveryCutRadius) {
    SKIP_WITHOUT_GPU();
    uint64_t seed = 900;
    for (Kind kind : {Kind::kNoise, Kind::kTies}) {
        const Image im = random_image(97, 131, seed++, kind, 0.02, 0.05);
        for (int64_t D : {int64_t{1}, int64_t{3}, int64_t{16}, int64_t{64}}) {
            std::vector<Residue> res_c, res_g;
            UnwrapParams p;
            p.min_component_size = 2;
            p.max_pair_distance = D;
            const Result c = unwrap_random(im, p, 32, &res_c);
            p.backend = Backend::kCuda;
            const Result g = unwrap_random(im, p, 32, &res_g);
            SCOPED_TRACE("kind " + std::to_string(static_cast<int>(kind)) + " D " + std::to_string(D));
            expect_same_result(c, g, im.W);
            ASSERT_EQ(res_c.size(), res_g.size());
            for (size_t i = 0; i < res_c.size(); ++i) {
                const Residue &x = res_c[i], &y = res_g[i];
                ASSERT_TRUE(x.id == y.id && x.r == y.r && x.c == y.c && x.sign == y.sign) << "residue " << i << " differs";
            }
            EXPECT_GT(c.stats.residues, 100);
        }
    }
}

// Labels stored 1, 2 or 4 bytes wide, as few as hold the largest (UnwrapParams::narrow_labels;
// kernels/label_width.h): each width must give the CPU's narrow labels byte for byte, and the
// values of its 4-byte ones. Few labels (fringes), thousands and over 65535 (noise broken up
// by low-coherence pixels).
TEST(CudaVsCpuRandom, LabelsOfEveryWidthComeDownWhole) {
    SKIP_WITHOUT_GPU();
    struct Case {
        int64_t H, W;
        Kind kind;
        double p_low;
        int64_t min_labelled, max_labelled;
    };
    for (const Case& c : {Case{300, 263, Kind::kFringes, 0.05, 1, 255}, Case{300, 300, Kind::kNoise, 0.3, 256, 65535},
                          Case{1024, 1024, Kind::kNoise, 0.45, 65536, int64_t{1} << 32}}) {
        const Image im = random_image(c.H, c.W, 4242, c.kind, 0.05, c.p_low);
        UnwrapParams p;
        p.min_component_size = 1;
        const Result wide = unwrap_random(im, p, 64);
        p.narrow_labels = true;
        const Result cpu = unwrap_random(im, p, 64);
        p.backend = Backend::kCuda;
        const Result gpu = unwrap_random(im, p, 64);
        SCOPED_TRACE(std::to_string(cpu.stats.labelled) + " labels");
        EXPECT_GE(cpu.stats.labelled, c.min_labelled);
        EXPECT_LE(cpu.stats.labelled, c.max_labelled);
        const int lb = cpu.stats.label_bytes;
        EXPECT_EQ(lb, label_bytes_for(static_cast<uint64_t>(cpu.stats.labelled)));
        EXPECT_EQ(gpu.stats.label_bytes, lb);
        expect_same_result(cpu, gpu, im.W);  // the whole arrays, narrow labels and untouched rest
        int64_t bad = 0;
        for (size_t i = 0; i < wide.label.size(); ++i) bad += label_at(gpu.label.data(), lb, static_cast<int64_t>(i)) != wide.label[i];
        EXPECT_EQ(bad, 0) << "narrow labels are not the 4-byte ones";
    }
}

// Label rows that hold one label cross the bus as one word and are filled on the host
// (uniform_label_rows); the others are copied in runs. Stripes of two rows, each its own
// component, between low-coherence rows (label 0), and a low-coherence column through the
// lower stripes (rows of two labels): 1-byte labels (80 stripes) and 2-byte (300). The host
// arrays start as 0xab bytes, so a row neither filled nor copied shows.
TEST(CudaVsCpuRandom, RowsOfOneLabelAreFilledOthersCopied) {
    SKIP_WITHOUT_GPU();
    for (int64_t stripes : {int64_t{80}, int64_t{300}}) {
        Image im = random_image(3 * stripes, 67, 77, Kind::kFringes, 0.0, 0.0);
        for (int64_t r = 0; r < im.H; ++r)
            for (int64_t c = 0; c < im.W; ++c)
                if (r % 3 == 2 || (r > im.H / 2 && c == 40)) im.flags[static_cast<size_t>(r * im.W + c)] = kLowCoherence;
        Result res[2];
        for (int b = 0; b < 2; ++b) {
            Result& r = res[b];
            r.u = im.phase;
            r.flags = im.flags;
            r.label.assign(im.phase.size(), 0xababababu);
            r.k.assign(im.phase.size(), 0);
            RegionArrays a{im.H, im.W, Window{0, 0, im.H, im.W}, r.u.data(), r.flags.data(), r.label.data(), r.k.data()};
            UnwrapParams p;
            p.min_component_size = 1;
            p.narrow_labels = true;
            p.backend = b ? Backend::kCuda : Backend::kCpu;
            r.stats = unwrap_image(a, 64, p);
        }
        SCOPED_TRACE(std::to_string(res[0].stats.labelled) + " labels");
        EXPECT_EQ(res[0].stats.label_bytes, stripes > 255 ? 2 : 1);
        EXPECT_GE(res[0].stats.labelled, stripes);
        expect_same_result(res[0], res[1], im.W);
    }
}

// A filled region (RegionFill: the CUDA backend uploads rows as the filler reports them): rows
// filled and reported from several threads in shuffled bands, some filled but never reported
// (they go up when the filler returns), must give the plain path's result on both backends.
TEST(CudaVsCpuRandom, FilledRegionTakesRowsAsTheyCome) {
    SKIP_WITHOUT_GPU();
    const Image im = random_image(301, 277, 31, Kind::kFringes, 0.03, 0.05);
    UnwrapParams p;
    p.min_component_size = 3;
    const Result expected = unwrap_random(im, p, 32);
    for (Backend b : {Backend::kCpu, Backend::kCuda}) {
        p.backend = b;
        Result r;
        r.u.assign(im.phase.size(), -1.0f);  // not the phase: the fill must bring it
        r.flags.assign(im.flags.size(), 0);
        r.label.assign(im.phase.size(), 0);
        r.k.assign(im.phase.size(), 0);
        RegionArrays a{im.H, im.W, Window{0, 0, im.H, im.W}, r.u.data(), r.flags.data(), r.label.data(), r.k.data()};
        std::vector<int64_t> bands;
        for (int64_t r0 = 0; r0 < im.H; r0 += 7) bands.push_back(r0);
        std::shuffle(bands.begin(), bands.end(), std::mt19937_64(5));
        int64_t reported = 0;
        const RegionFill fill = [&](const RowsReady& ready) {
            std::atomic<size_t> next{0};
            std::atomic<int64_t> count{0};
            auto worker = [&] {
                for (size_t j; (j = next++) < bands.size();) {
                    const int64_t r0 = bands[j], n = std::min<int64_t>(7, im.H - r0);
                    const size_t o = static_cast<size_t>(r0 * im.W), e = o + static_cast<size_t>(n * im.W);
                    std::copy(im.phase.begin() + static_cast<std::ptrdiff_t>(o), im.phase.begin() + static_cast<std::ptrdiff_t>(e), r.u.begin() + static_cast<std::ptrdiff_t>(o));
                    std::copy(im.flags.begin() + static_cast<std::ptrdiff_t>(o), im.flags.begin() + static_cast<std::ptrdiff_t>(e), r.flags.begin() + static_cast<std::ptrdiff_t>(o));
                    if (j % 5 != 0) {
                        ready(r0, n);
                        count += n;
                    }
                }
            };
            std::vector<std::thread> pool;
            for (int t = 0; t < 4; ++t) pool.emplace_back(worker);
            for (std::thread& t : pool) t.join();
            reported = count;
        };
        Comm self(MPI_COMM_SELF);
        RankGrid grid;
        grid.tiles = TileGrid(im.H, im.W, 32);
        r.stats = unwrap_region(a, grid, self, p, nullptr, [](const char*) {}, fill);
        SCOPED_TRACE(b == Backend::kCuda ? "cuda" : "cpu");
        EXPECT_GT(reported, 0);
        EXPECT_LT(reported, im.H);
        expect_same_result(expected, r, im.W);
    }
}

// A device-resident caller hands the Region its phase to work in (DeviceInput::in_place): the
// result must be the host-input Region's, and u must land in the caller's buffer.
TEST(CudaVsCpuRandom, DeviceInputInPlaceEqualsHostInput) {
    SKIP_WITHOUT_GPU();
    const Image im = random_image(150, 173, 77, Kind::kFringes, 0.03, 0.05);
    const size_t n = im.phase.size();
    Result h, d;
    for (Result* r : {&h, &d}) {
        r->u = im.phase;
        r->flags = im.flags;
        r->label.assign(n, 0);
        r->k.assign(n, 0);
    }
    UnwrapParams p;
    p.min_component_size = 3;
    p.backend = Backend::kCuda;
    RegionArrays ah{im.H, im.W, Window{0, 0, im.H, im.W}, h.u.data(), h.flags.data(), h.label.data(), h.k.data()};
    h.stats = unwrap_image(ah, 32, p);

    float* d_phase = nullptr;
    uint8_t* d_flags = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_phase), n * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_flags), n), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_phase, im.phase.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_flags, im.flags.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    RegionArrays ad{im.H, im.W, Window{0, 0, im.H, im.W}, d.u.data(), d.flags.data(), d.label.data(), d.k.data()};
    RankGrid grid;
    grid.tiles = TileGrid(im.H, im.W, 32);
    Comm alone = Comm::alone();
    {
        cuda::Region region(ad, grid.own(0), grid.tiles, cuda::Region::DeviceInput{d_phase, d_flags, nullptr, true});
        d.stats = run_unwrap_stages(region, grid, alone, p, nullptr, [](const char*) {});
        region.finish();
    }
    std::vector<float> u_dev(n);
    ASSERT_EQ(cudaMemcpy(u_dev.data(), d_phase, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d_phase);
    cudaFree(d_flags);
    expect_same_result(h, d, im.W);
    EXPECT_TRUE(same_bytes(u_dev.data(), h.u.data(), n * sizeof(float))) << "u did not land in the caller's buffer";
    EXPECT_GT(h.stats.residues, 0);
}

// ---------------------------------------------------------------------------------------
// Across ranks: every rank's own window equals the single-process CPU result. Run it under
// mpirun -np 2, 3, 4 (tests/gpu/run_on_device.sh does); with one rank it is the 1x1 grid.

// Every rank's own window of `s` on the CUDA backend against the single-process CPU result.
void expect_ranks_match_cpu(const std::string& name, const SynthScene& s, int64_t tile) {
    Comm world(MPI_COMM_WORLD);
    const int N = world.size(), rank = world.rank();
    {
        UnwrapParams p;
        p.min_component_size = 20;
        const Result ref = unwrap_scene(s, p, tile, 0.3f, true);
        std::vector<std::pair<int, int>> shapes = {{N, 1}, {1, N}};
        if (N == 4) shapes.push_back({2, 2});
        if (N == 1) shapes.resize(1);
        for (const auto& [P, Q] : shapes) {
            SCOPED_TRACE(name + " on a " + std::to_string(P) + "x" + std::to_string(Q) + " rank grid, rank " +
                         std::to_string(rank));
            RankGrid grid;
            grid.tiles = TileGrid(s.rows, s.cols, tile);
            grid.P = P;
            grid.Q = Q;
            const Window own = grid.own(rank), buf = grid.buffer(rank);
            std::vector<float> phase_all;
            std::vector<uint8_t> flags_all;
            scene_inputs(s, 0.3f, phase_all, flags_all);
            Image im{s.rows, s.cols, phase_all, flags_all};
            Arrays x = make_arrays(im, buf);
            p.backend = Backend::kCuda;
            const RegionStats st = unwrap_region(x.a, grid, world, p, nullptr, [](const char*) {});
            expect_same_stats(ref.stats, st, N == 1);
            int64_t bad_u = 0, bad_l = 0, bad_k = 0;
            for (int64_t r = own.row0; r < own.row0 + own.rows; ++r)
                for (int64_t c = own.col0; c < own.col0 + own.cols; ++c) {
                    const size_t g = static_cast<size_t>(r * s.cols + c), l = static_cast<size_t>(x.a.index(r, c));
                    bad_u += !same_bytes(&ref.u[g], &x.phase[l], sizeof(float));
                    bad_l += ref.label[g] != x.label[l];
                    bad_k += ref.k[g] != x.cycles[l];
                }
            EXPECT_EQ(bad_u, 0);
            EXPECT_EQ(bad_l, 0);
            EXPECT_EQ(bad_k, 0);
        }
    }
}

TEST(CudaDistributed, RanksMatchTheSingleProcessCpu) {
    SKIP_WITHOUT_GPU();
    for (const std::string name : {"topo", "holes"}) expect_ranks_match_cpu(name, make_scene(name, 300, 263, 5), 37);
}

// Sets large enough for the device's form of the cut rule (cuda::Region::cut_clusters) on every
// rank: its cuts, with lakes from the coherence, give the CPU backend's result.
TEST(CudaDistributed, DeviceCutRuleMatchesTheSingleProcessCpu) {
    SKIP_WITHOUT_GPU();
    Comm world(MPI_COMM_WORLD);
    const SynthScene s = make_scene("holes", 4096, 4096, 9);
    std::vector<float> phase;
    std::vector<uint8_t> flags;
    scene_inputs(s, 0.3f, phase, flags);
    const Image im{s.rows, s.cols, phase, flags};
    Arrays x = make_arrays(im, Window{0, 0, s.rows, s.cols});
    cpu::Region whole(x.a, Window{0, 0, s.rows, s.cols}, TileGrid(s.rows, s.cols, 256));
    const size_t n = whole.find_residues().size();
    ASSERT_GE(n / static_cast<size_t>(world.size()), cuda::Region::kDeviceRuleFrom) << n << " residues: too few";
    expect_ranks_match_cpu("holes", s, 256);
}

// ---------------------------------------------------------------------------------------
// Section 8's budget (resident device memory between stages, at most 24 B per pixel) and
// timings for the record.

TEST(CudaRegion, DeviceMemoryWithinBudgetAndTimings) {
    SKIP_WITHOUT_GPU();
    const int64_t H = 4096, W = 4096, n = H * W;
    const SynthScene s = make_scene("topo", H, W, 3);
    std::vector<float> phase;
    std::vector<uint8_t> flags;
    scene_inputs(s, 0.0f, phase, flags);
    std::vector<uint32_t> label(static_cast<size_t>(n));
    std::vector<int32_t> cycles(static_cast<size_t>(n));
    RegionArrays a{H, W, Window{0, 0, H, W}, phase.data(), flags.data(), label.data(), cycles.data()};
    const TileGrid tg(H, W, 512);
    RankGrid grid;
    grid.tiles = tg;
    Comm self(MPI_COMM_SELF);

    // Regions allocate from the device's stream-ordered pool, which keeps what earlier tests
    // freed: empty it first, so that what the pool holds from here on is this test's.
    int dev = 0;
    cudaMemPool_t pool = nullptr;
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, dev), cudaSuccess);
    ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
    size_t free0 = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
    int64_t worst = 0;
    int label_bytes = 4;
    auto used = [&](const char* when) {
        size_t f = 0, t = 0;
        EXPECT_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
        const int64_t u = static_cast<int64_t>(free0) - static_cast<int64_t>(f);
        worst = std::max(worst, u);
        std::printf("[ memory   ] after %-12s %8.2f B/pixel resident\n", when, static_cast<double>(u) / n);
    };
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    auto lap = [&](const char* what) {
        const auto t1 = clock::now();
        std::printf("[ timing   ] cuda %-12s %8.2f ms\n", what, std::chrono::duration<double, std::milli>(t1 - t0).count());
        t0 = t1;
    };
    {
        cuda::Region region(a, Window{0, 0, H, W}, tg);
        lap("upload");
        used("upload");
        const auto res = region.find_residues();
        lap("residues");
        used("residues");
        MatchStats ms;
        const std::vector<Cut> cuts = match_residues(res, grid, 16, self, ms);
        lap("matching");
        region.place_cuts(cuts);
        lap("rasterise");
        const RegionComponents comps = region.union_find();
        lap("union_find");
        used("union_find");
        const OffsetSolution sol = solve_offsets(comps.records, comps.constraints, 100);
        t0 = clock::now();
        label_bytes = label_bytes_for(sol.label.empty() ? 0 : *std::max_element(sol.label.begin(), sol.label.end()));
        region.apply(ComponentAssignment{comps.records, sol.offset, sol.label, label_bytes});
        lap("apply");
        used("apply");
        region.finish();
        lap("finish");
        std::printf("[ info     ] %lld residues, %zu cuts, %zu components\n", static_cast<long long>(res.size()),
                    cuts.size(), comps.records.size());
    }
    {  // conservative, from the input and the output alone
        std::vector<float> phi;
        std::vector<uint8_t> unused;
        scene_inputs(s, 0.0f, phi, unused);
        const testing::OpenEdgeCheck c = testing::check_open_edges(phi, phase, flags, H, W);
        EXPECT_EQ(c.disagree, 0);
        EXPECT_EQ(c.incongruent, 0);
        EXPECT_GT(c.checked, n);
    }
    // 2 MiB granularity and the CUDA context's own pools make a little slack.
    EXPECT_LE(worst, 24 * n + (int64_t{64} << 20)) << "more than 24 B/pixel resident on the device";
    // Labels take as few bytes as hold the largest (kernels/label_width.h).
    EXPECT_GE(worst, (17 + label_bytes) * n) << "the measurement saw less than phase, flags, nodes, labels, cycles: not measuring";

    // The whole pipeline, both backends, for the record.
    for (Backend b : {Backend::kCpu, Backend::kCuda}) {
        scene_inputs(s, 0.0f, phase, flags);
        UnwrapParams p;
        p.backend = b;
        const auto s0 = clock::now();
        const RegionStats st = unwrap_image(a, 512, p);
        std::printf("[ timing   ] unwrap_image %s 4096x4096: %.1f ms (%lld residues)\n",
                    b == Backend::kCpu ? "cpu " : "cuda", std::chrono::duration<double, std::milli>(clock::now() - s0).count(),
                    static_cast<long long>(st.residues));
    }
}

}  // namespace
}  // namespace tessera
