// Under mpirun -np 1..4: cycles, labels and the unwrapped phase bit-identical to the
// one-rank run for every rank grid and tile size (ARCHITECTURE.md section 1).
#include <gdal_priv.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "io/gdal_session.h"
#include "io/geotiff_writer.h"
#include "kernels/cpu/region.h"
#include "partition/lake_exchange.h"
#include "partition/rank_grid.h"
#include "pipeline/chunked_stages.h"
#include "pipeline/unwrap_region.h"
#include "app/synth.h"
#include "pipeline/unwrap_pipeline.h"
#include "support/cli.h"
#include "support/scene_input.h"

namespace tessera {
namespace {

using testing::read_dataset;

int rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}
int size() {
    int s = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

// A folder every rank sees (rank 0 makes it, the name is shared).
std::string shared_dir(const std::string& tag) {
    std::string d = "/tmp/tessera_mpi_" + tag + "_" + std::to_string(size());
    if (rank() == 0) {
        std::filesystem::remove_all(d);
        std::filesystem::create_directories(d);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return d;
}

// Rank 0's verdict for everyone, so that every rank's test passes or fails alike.
bool agreed(bool ok_on_root) {
    int v = ok_on_root ? 1 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return v != 0;
}

UnwrapOptions options(const std::string& in, const std::string& out, int64_t tile) {
    UnwrapOptions o;
    o.input = in;
    o.output = out;
    o.tile_size = tile;
    o.save_cycles = true;
    o.quiet = true;
    o.overwrite = true;  // one output path per scene, written for every grid and tile size
    return o;
}

// Runs on all ranks with `grid`, and on rank 0 alone; compares the files bit for bit.
void expect_same_as_one_rank(UnwrapOptions o, const std::string& grid, UnwrapReport* report = nullptr) {
    const std::string many = o.output;
    o.rank_grid = grid;
    const UnwrapReport rep = run_unwrap(o, MPI_COMM_WORLD);
    if (report) *report = rep;
    std::string why;
    if (rank() == 0) {
        UnwrapOptions one = o;
        one.rank_grid.clear();
        one.output = many + ".one.h5";
        run_unwrap(one, MPI_COMM_SELF);
        const auto u1 = read_dataset<float>(one.output, "unwrapped_phase");
        const auto un = read_dataset<float>(many, "unwrapped_phase");
        if (u1.size() != un.size() || std::memcmp(u1.data(), un.data(), u1.size() * sizeof(float)) != 0)
            why += " unwrapped_phase";
        if (read_dataset<int32_t>(one.output, "cycles") != read_dataset<int32_t>(many, "cycles")) why += " cycles";
        if (read_dataset<uint32_t>(one.output, "connected_components") !=
            read_dataset<uint32_t>(many, "connected_components"))
            why += " connected_components";
    }
    EXPECT_TRUE(agreed(why.empty())) << "differs from one rank (" << o.input << ", grid '" << grid << "', tile "
                                     << o.tile_size << "):" << why;
    // Conservativeness itself is checked from input and output in tests/src (open_edges.h):
    // the files here are bit-identical to the one-rank run's.
}

std::vector<std::string> grids() {
    switch (size()) {
        case 2: return {"1x2", "2x1"};
        case 3: return {"1x3", "3x1"};
        case 4: return {"1x4", "4x1", "2x2"};
        default: return {""};
    }
}

class MpiSynth : public ::testing::TestWithParam<std::string> {};

TEST_P(MpiSynth, BitIdenticalToOneRank) {
    const std::string dir = shared_dir(GetParam());
    if (rank() == 0) write_scene(make_scene(GetParam(), 300, 263, 9), dir);
    MPI_Barrier(MPI_COMM_WORLD);
    struct Config {
        int64_t tile;
        double min_coherence;  // > 0: decorrelated pixels are lakes (ground), many cross ranks
        int64_t radius;        // 40: most clusters reach a rank border and are shared
    };
    for (const std::string& g : grids())
        for (const Config& c : {Config{37, 0.0, 16}, Config{64, 0.3, 16}, Config{50, 0.3, 40}}) {
            UnwrapOptions o = options(dir + "/" + GetParam() + "_wrapped.tif", dir + "/out.h5", c.tile);
            o.coherence = dir + "/" + GetParam() + "_coherence.tif";
            o.min_coherence = c.min_coherence;
            o.max_pair_distance = c.radius;
            expect_same_as_one_rank(o, g);
        }
    // The classes' cells made coarser (a table of at most 64 cells, partition/matching.cpp), radius 1:
    // still closed under candidate edges, the same bits.
    setenv("TESSERA_CLASS_TABLE", "64", 1);
    for (const std::string& g : grids()) {
        UnwrapOptions o = options(dir + "/" + GetParam() + "_wrapped.tif", dir + "/out.h5", 50);
        o.coherence = dir + "/" + GetParam() + "_coherence.tif";
        o.min_coherence = 0.3;
        o.max_pair_distance = 1;
        expect_same_as_one_rank(o, g);
    }
    unsetenv("TESSERA_CLASS_TABLE");
}

// Masked lakes in a smooth scene, one across the middle of every rank grid (2x2: all four
// ranks hold a piece of it), one on a rank border, one touching the image border.
TEST(Mpi, LakesAcrossRanksStayOneComponent) {
    const std::string dir = shared_dir("lakes");
    const int64_t H = 260, W = 300;
    if (rank() == 0) {
        SynthScene s = make_scene("bowl", H, W, 4);
        std::vector<float> mask(static_cast<size_t>(H * W), 1.0f);
        for (int64_t r = 0; r < H; ++r)
            for (int64_t c = 0; c < W; ++c)
                if (std::hypot(r - 130.0, c - 150.0) < 45 || std::hypot(r - 64.0, c - 40.0) < 20 ||
                    std::hypot(r - 250.0, c - 260.0) < 25)
                    mask[static_cast<size_t>(r * W + c)] = 0.0f;
        write_geotiff_f32(dir + "/bowl.tif", H, W, s.wrapped.data(), GeoRef{}, std::nullopt);
        write_geotiff_f32(dir + "/mask.tif", H, W, mask.data(), GeoRef{}, std::nullopt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (const std::string& g : grids()) {
        UnwrapOptions o = options(dir + "/bowl.tif", dir + "/out.h5", 32);
        o.mask = dir + "/mask.tif";
        UnwrapReport rep;
        expect_same_as_one_rank(o, g, &rep);
        EXPECT_EQ(rep.labelled, 1) << "grid " << g;
        EXPECT_GT(rep.lake_joins, 0) << "grid " << g;
    }
}

// This rank's lakes (GlobalLakes, collective) from the whole image's phase and flags, copied
// into the rank's buffer (own window and halo) as a region would hold them.
GlobalLakes rank_lakes(const std::vector<float>& phase, const std::vector<uint8_t>& flags, const RankGrid& grid, Comm& comm) {
    const int64_t H = grid.tiles.H, W = grid.tiles.W;
    const Window buf = grid.buffer(rank());
    std::vector<float> ph(static_cast<size_t>(buf.size()));
    std::vector<uint8_t> fl(static_cast<size_t>(buf.size()));
    for (int64_t r = 0; r < buf.rows; ++r)
        for (int64_t c = 0; c < buf.cols; ++c) {
            const size_t from = static_cast<size_t>((buf.row0 + r) * W + buf.col0 + c), to = static_cast<size_t>(r * buf.cols + c);
            ph[to] = phase[from], fl[to] = flags[from];
        }
    const RegionArrays a{H, W, buf, ph.data(), fl.data(), nullptr, nullptr};
    return GlobalLakes(a, grid, comm);
}

// f(r, c) for every plaquette whose top-left pixel is in `own`.
template <class F>
void each_own_plaquette(const Window& own, int64_t H, int64_t W, F f) {
    for (int64_t r = own.row0; r < own.row0 + own.rows && r + 1 < H; ++r)
        for (int64_t c = own.col0; c < own.col0 + own.cols && c + 1 < W; ++c) f(r, c);
}

// GlobalLakes::corners (one run search a row) gives what at() and reaches_out() give for each of
// a plaquette's four pixels, on every rank's window and its halo, for every rank grid.
TEST(Mpi, LakeCornersEqualTheirPixelsLookups) {
    const SynthScene s = make_scene("holes", 263, 300, 13);
    const int64_t H = s.rows, W = s.cols;
    const auto [ih, iw, phase, flags] = testing::scene_input(s, 0.3f);
    Comm comm(MPI_COMM_WORLD);
    for (const std::string& spec : grids()) {
        const RankGrid grid = make_rank_grid(TileGrid(H, W, 32), size(), spec, "scene");
        const GlobalLakes lakes = rank_lakes(phase, flags, grid, comm);
        int64_t on_lakes = 0, mismatches = 0;
        each_own_plaquette(grid.own(rank()), H, W, [&](int64_t r, int64_t c) {
            int64_t l[4];
            bool o[4];
            lakes.corners(r, c, l, o);
            for (int j = 0; j < 4; ++j) {
                const int64_t lr = r + j / 2, lc = c + j % 2, expect = lakes.at(lr, lc);
                if (l[j] != expect || (expect != kNoLake && o[j] != lakes.reaches_out(lr, lc))) ++mismatches;
                on_lakes += expect != kNoLake;
            }
        });
        EXPECT_EQ(mismatches, 0) << "grid " << spec << " rank " << rank();
        EXPECT_GT(comm.sum(on_lakes), 1000) << "grid " << spec;  // the scene has lakes to look up
    }
}

// GlobalLakes::ring (section 3.1's eight pixels one dual step from a plaquette, up to two pixels
// past the own window, from what the neighbours publish) gives the lakes of the whole image
// labelled in one piece, for every plaquette of every rank's window and every rank grid.
TEST(Mpi, LakeRingEqualsTheWholeImagesLakes) {
    const SynthScene s = make_scene("holes", 263, 300, 13);
    const int64_t H = s.rows, W = s.cols;
    auto [ih, iw, phase, flags] = testing::scene_input(s, 0.3f);
    const Window all{0, 0, H, W};
    Comm alone = Comm::alone();
    const RegionArrays whole{H, W, all, phase.data(), flags.data(), nullptr, nullptr};
    const GlobalLakes ref(whole, make_rank_grid(TileGrid(H, W, 32), 1, "", "scene"), alone);
    Comm comm(MPI_COMM_WORLD);
    for (const std::string& spec : grids()) {
        const RankGrid grid = make_rank_grid(TileGrid(H, W, 32), size(), spec, "scene");
        const Window own = grid.own(rank());
        const GlobalLakes lakes = rank_lakes(phase, flags, grid, comm);
        int64_t outside = 0, mismatches = 0;
        each_own_plaquette(own, H, W, [&](int64_t r, int64_t c) {
            int64_t l[8];
            lakes.ring(r, c, l);
            const int64_t at[8][2] = {{r - 1, c}, {r - 1, c + 1}, {r + 2, c}, {r + 2, c + 1},
                                      {r, c - 1}, {r + 1, c - 1}, {r, c + 2}, {r + 1, c + 2}};
            for (int j = 0; j < 8; ++j) {
                const int64_t pr = at[j][0], pc = at[j][1];
                if (pr < 0 || pc < 0 || pr >= H || pc >= W) continue;
                const int64_t expect = ref.at(pr, pc);
                mismatches += l[j] != expect;
                outside += expect != kNoLake && !own.contains(pr, pc);
            }
        });
        EXPECT_EQ(mismatches, 0) << "grid " << spec << " rank " << rank();
        if (size() > 1) {
            EXPECT_GT(comm.sum(outside), 50) << "grid " << spec;  // lakes past the windows looked up
        }
    }
}

// Every rank's region in chunks (pipeline/chunked_stages.h), gathered: bit for bit the one-rank
// run of the whole image in one piece, for every rank grid and chunk height.
TEST(Mpi, ChunkedRegionsBitIdenticalToOneRankInOnePiece) {
    const SynthScene s = make_scene("holes", 263, 300, 13);
    const int64_t H = s.rows, W = s.cols, n = H * W;
    const auto [ih, iw, phase, flags] = testing::scene_input(s, 0.3f);
    UnwrapParams p;
    p.min_component_size = 10;
    std::vector<float> u1 = phase;
    std::vector<uint32_t> l1(static_cast<size_t>(n));
    std::vector<int32_t> k1(static_cast<size_t>(n));
    {
        std::vector<uint8_t> f = flags;
        RegionArrays a{H, W, Window{0, 0, H, W}, u1.data(), f.data(), l1.data(), k1.data()};
        unwrap_image(a, 32, p);
    }
    Comm comm(MPI_COMM_WORLD);
    for (const std::string& spec : grids())
        for (int64_t tile_rows : {1, 3}) {
            const RankGrid grid = make_rank_grid(TileGrid(H, W, 32), size(), spec, "scene");
            std::vector<float> u(static_cast<size_t>(n), 0.0f);
            std::vector<uint32_t> l(static_cast<size_t>(n), 0);
            std::vector<int32_t> k(static_cast<size_t>(n), 0);
            const ChunkFill fill = [&](const RegionArrays& a) {
                for (int64_t r = a.buf.row0; r < a.buf.row0 + a.buf.rows; ++r)
                    for (int64_t c = a.buf.col0; c < a.buf.col0 + a.buf.cols; ++c) {
                        a.phase[a.index(r, c)] = phase[static_cast<size_t>(r * W + c)];
                        a.flags[a.index(r, c)] = flags[static_cast<size_t>(r * W + c)];
                    }
            };
            const ChunkSink sink = [&](const RegionArrays& a, const Window& own, int) {
                for (int64_t r = own.row0; r < own.row0 + own.rows; ++r)
                    for (int64_t c = own.col0; c < own.col0 + own.cols; ++c) {
                        u[static_cast<size_t>(r * W + c)] = a.phase[a.index(r, c)];
                        l[static_cast<size_t>(r * W + c)] = static_cast<const uint32_t*>(a.label)[a.index(r, c)];
                        k[static_cast<size_t>(r * W + c)] = a.cycles[a.index(r, c)];
                    }
            };
            unwrap_chunked<cpu::Region>(grid, comm, p, tile_rows, true, ChunkRun{fill, sink});
            // Each pixel was written by its owner alone: the others hold zeros, so a sum gathers it.
            MPI_Allreduce(MPI_IN_PLACE, l.data(), static_cast<int>(n), MPI_UINT32_T, MPI_SUM, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, k.data(), static_cast<int>(n), MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
            std::vector<uint32_t> ub(static_cast<size_t>(n));
            std::memcpy(ub.data(), u.data(), ub.size() * sizeof(float));
            MPI_Allreduce(MPI_IN_PLACE, ub.data(), static_cast<int>(n), MPI_UINT32_T, MPI_BOR, MPI_COMM_WORLD);
            std::memcpy(u.data(), ub.data(), ub.size() * sizeof(float));
            const bool same = std::memcmp(u.data(), u1.data(), u.size() * sizeof(float)) == 0 && l == l1 && k == k1;
            EXPECT_TRUE(agreed(same)) << "grid '" << spec << "', chunks of " << tile_rows << " tile rows";
        }
}

// --geotiff is written from the result in memory (partition/strip_gather.h): its pixels are
// the HDF5's unwrapped phase, bit for bit, for every rank grid.
TEST(Mpi, GeotiffFromMemoryIsTheResultsPhase) {
    const std::string dir = shared_dir("geotiff");
    if (rank() == 0) write_scene(make_scene("holes", 300, 263, 21), dir);
    MPI_Barrier(MPI_COMM_WORLD);
    for (const std::string& g : grids()) {
        UnwrapOptions o = options(dir + "/holes_wrapped.tif", dir + "/out.h5", 37);
        o.geotiff = dir + "/out.tif";
        o.rank_grid = g;
        run_unwrap(o, MPI_COMM_WORLD);
        std::string why;
        if (rank() == 0) {
            register_gdal_once();
            GDALDatasetUniquePtr ds(GDALDataset::Open(o.geotiff.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
            const auto u = read_dataset<float>(o.output, "unwrapped_phase");
            std::vector<float> t(u.size());
            if (!ds || ds->GetRasterXSize() != 263 || ds->GetRasterYSize() != 300 ||
                ds->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, 263, 300, t.data(), 263, 300, GDT_Float32, 0, 0) != CE_None)
                why = "unreadable";
            else if (std::memcmp(t.data(), u.data(), u.size() * sizeof(float)) != 0)
                why = "pixels differ from /unwrapped_phase";
        }
        EXPECT_TRUE(agreed(why.empty())) << "grid '" << g << "': " << why;
    }
}

INSTANTIATE_TEST_SUITE_P(AllCases, MpiSynth, ::testing::Values("bowl", "topo", "holes", "fringes"));

TEST(Mpi, GhigliaPrittLongsWithMask) {
    const std::string src = std::string(TESSERA_SHARED_DIR) + "/bench_real_gp/longs.152x458.";
    const std::string raw = testing::slurp(src + "phase"), m = testing::slurp(src + "mask");
    if (raw.empty()) GTEST_SKIP() << "no " << src << "phase (../shared missing)";
    const std::string dir = shared_dir("longs");
    if (rank() == 0) {
        std::vector<float> phase(raw.size()), mask(raw.size());
        for (size_t i = 0; i < raw.size(); ++i) {
            phase[i] = static_cast<float>(static_cast<uint8_t>(raw[i]) * (2.0 * std::numbers::pi / 256.0));
            mask[i] = static_cast<uint8_t>(m[i]) ? 1.0f : 0.0f;
        }
        write_geotiff_f32(dir + "/phase.tif", 458, 152, phase.data(), GeoRef{}, std::nullopt);
        write_geotiff_f32(dir + "/mask.tif", 458, 152, mask.data(), GeoRef{}, std::nullopt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (const std::string& g : grids()) {
        UnwrapOptions o = options(dir + "/phase.tif", dir + "/out.h5", 32);
        o.mask = dir + "/mask.tif";
        expect_same_as_one_rank(o, g);
    }
}

// An n x n wrapped phase of a +1 vortex at plaquette (row_plus, n / 2) and a -1 at (row_minus,
// n / 2), written by rank 0 and seen by all.
void write_vortex_pair(const std::string& path, int64_t n, int64_t row_plus, int64_t row_minus) {
    if (rank() == 0) {
        std::vector<float> phi(static_cast<size_t>(n * n));
        const double c0 = static_cast<double>(n / 2) + 0.5;
        for (int64_t r = 0; r < n; ++r)
            for (int64_t c = 0; c < n; ++c) {
                const double v = std::atan2(r - (row_plus + 0.5), c - c0) - std::atan2(r - (row_minus + 0.5), c - c0);
                phi[static_cast<size_t>(r * n + c)] = static_cast<float>(std::remainder(v, 2 * std::numbers::pi));
            }
        write_geotiff_f32(path, n, n, phi.data(), GeoRef{}, std::nullopt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

// A +/- vortex pair 210 rows apart, closer to each other than to any side: with a cut radius
// of 256 one cut joins them across rank 2 on a 4x1 grid (tile rows 0 | 1 | 2 | 3-4 of 200:
// ranks own rows 0-199, 200-399, 400-599, 600-999), decided as a shared cluster.
TEST(Mpi, ClusterPartnerTwoRanksAway) {
    const std::string dir = shared_dir("vortex");
    const int64_t n = 1000;
    write_vortex_pair(dir + "/vortex.tif", n, 395, 605);
    UnwrapOptions o = options(dir + "/vortex.tif", dir + "/out.h5", 200);
    o.max_pair_distance = 256;
    UnwrapReport rep;
    expect_same_as_one_rank(o, size() == 4 ? "4x1" : "", &rep);
    EXPECT_EQ(rep.residues, 2);
    EXPECT_EQ(rep.shared, size() > 1 ? 2 : 0) << "the pair is decided on every rank";
    EXPECT_EQ(rep.pairs, 1);
    EXPECT_EQ(rep.ground_cuts, 0);
    if (size() == 4) {
        RankGrid g = make_rank_grid(TileGrid(n, n, 200), 4, "4x1", "");
        EXPECT_EQ(g.rank_of(395, 500), 1);
        EXPECT_EQ(g.rank_of(605, 500), 3);
    }
}

// A +/- vortex pair 140 rows apart (L1), each more than R + 2 = 42 from every rank border of
// the 4x1 grid (ranks own rows 0-199, 200-399, 400-599, 600-999) and 331 from the nearest side:
// with R = 40 the rule cuts each to a side in its rank alone; section 3.6's far reach (4R =
// 160) joins them with one cut across the rank border instead, the same on any grid.
TEST(Mpi, FarReachAcrossRanks) {
    const std::string dir = shared_dir("far");
    write_vortex_pair(dir + "/vortex.tif", 1000, 330, 470);
    UnwrapOptions o = options(dir + "/vortex.tif", dir + "/out.h5", 200);
    o.max_pair_distance = 40;
    UnwrapReport rep;
    expect_same_as_one_rank(o, size() == 4 ? "4x1" : "", &rep);
    EXPECT_EQ(rep.residues, 2);
    if (size() == 4) EXPECT_EQ(rep.shared, 0) << "each residue is decided by its rank alone";
    EXPECT_EQ(rep.pairs, 1);
    EXPECT_EQ(rep.ground_cuts, 0);
    o.far_reach = false;  // --no-far-reach: each to its side, as the rule alone cuts them
    expect_same_as_one_rank(o, size() == 4 ? "4x1" : "", &rep);
    EXPECT_EQ(rep.pairs, 0);
    EXPECT_EQ(rep.ground_cuts, 2);
}

// The top quarter is nodata, so on a 4x1 grid rank 0 holds no valid pixel; the
// component spans the other ranks and one cut family crosses every border.
TEST(Mpi, RankWithOnlyNodataAndComponentsAcrossRanks) {
    const std::string dir = shared_dir("nodata");
    const int64_t n = 400;
    if (rank() == 0) {
        SynthScene s = make_scene("topo", n, n, 5);
        for (int64_t i = 0; i < n * n / 4; ++i) s.wrapped[static_cast<size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
        write_geotiff_f32(dir + "/top_nan.tif", n, n, s.wrapped.data(), GeoRef{},
                          std::numeric_limits<double>::quiet_NaN());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    UnwrapOptions o = options(dir + "/top_nan.tif", dir + "/out.h5", 50);
    expect_same_as_one_rank(o, size() == 4 ? "4x1" : "");
    if (rank() == 0) {
        const auto lab = read_dataset<uint32_t>(o.output, "connected_components");
        const RankGrid g = make_rank_grid(TileGrid(n, n, 50), size(), size() == 4 ? "4x1" : "", "");
        std::vector<int> seen(static_cast<size_t>(size()), 0);
        for (int64_t i = 0; i < n * n; ++i)
            if (lab[static_cast<size_t>(i)] == 1) seen[static_cast<size_t>(g.rank_of(i / n, i % n))] = 1;
        for (int r = (size() == 4 ? 1 : 0); r < size(); ++r) EXPECT_TRUE(seen[r]) << "label 1 misses rank " << r;
        if (size() == 4) {
            EXPECT_FALSE(seen[0]);
        }
    }
}

}  // namespace
}  // namespace tessera
