// Batches (issue items 4 and 5): input lists and glob patterns, output names, errors
// before any work, and results of a batch equal to one-by-one runs bit for bit
// (`tessera unwrap` of wrapped phases, `tessera hologram`, `tessera unwrap --from-hologram`).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/raster_reader.h"
#include "app/batch.h"
#include "app/hologram_command.h"
#include "app/synth.h"
#include "support/cli.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::read_dataset;
using testing::TempDir;

void touch(const std::string& path) { std::ofstream(path) << "x"; }

std::vector<std::string> names(const std::vector<std::string>& paths) {
    std::vector<std::string> r;
    for (const auto& p : paths) r.push_back(fs::path(p).filename().string());
    return r;
}

void write_f32(const std::string& path, int64_t rows, int64_t cols, const std::vector<float>& v) {
    GeoRef geo;
    geo.compress = false;
    write_geotiff_f32(path, rows, cols, v.data(), geo, std::numeric_limits<double>::quiet_NaN());
}

std::vector<float> read_f32(const std::string& path) {
    RasterReader r(path, 1);
    std::vector<float> v(static_cast<size_t>(r.info().rows * r.info().cols));
    r.read_float(Window{0, 0, r.info().rows, r.info().cols}, v.data(), r.info().cols);
    return v;
}

FrameBatchOptions from_holograms(const HologramParams& hp) {
    FrameBatchOptions f;
    f.from_hologram = true;
    f.hologram = hp;
    return f;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// An off-axis hologram of a bump of `bump` radians (needs unwrapping above 2 pi):
// I = |exp(-i 2 pi (fx c + fy r)) + exp(i phi)|^2 + small deterministic noise.
std::vector<float> hologram(int64_t H, int64_t W, double bump, uint64_t seed) {
    constexpr double pi = std::numbers::pi;
    std::vector<float> I(static_cast<size_t>(H * W));
    uint64_t s = seed;
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const double dr = static_cast<double>(r) - 0.5 * static_cast<double>(H);
            const double dc = static_cast<double>(c) - 0.45 * static_cast<double>(W);
            const double phi = bump * std::exp(-(dr * dr + dc * dc) / (2.0 * 18.0 * 18.0));
            const std::complex<double> R = std::polar(1.0, -2 * pi * (0.25 * static_cast<double>(c) +
                                                                     0.2 * static_cast<double>(r)));
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            const double u = static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5;
            I[static_cast<size_t>(r * W + c)] = static_cast<float>(std::norm(R + std::polar(1.0, phi)) + 0.2 * u);
        }
    return I;
}

TEST(Batch, ExpandInputsKeepsOrderAndDropsRepeats) {
    TempDir dir("batch_glob");
    for (const char* f : {"f2.tif", "f10.tif", "f1.tif", "g.tif", "h[1].tif"}) touch(dir / f);
    const auto v = expand_inputs({dir / "g.tif", dir / "f*.tif", dir / "f1.tif", dir.path().string() + "/./g.tif",
                                  dir / "missing.tif", dir / "h[1].tif"});
    // The pattern expands sorted; repeats (also ./ spellings) dropped; a plain name is kept
    // even if missing (it is reported when opened); a name with [ ] that exists is a file.
    EXPECT_EQ(names(v), (std::vector<std::string>{"g.tif", "f1.tif", "f10.tif", "f2.tif", "missing.tif", "h[1].tif"}));
}

TEST(Batch, PatternMatchingNothingIsAnError) {
    TempDir dir("batch_nomatch");
    touch(dir / "a.tif");
    try {
        expand_inputs({dir / "a.tif", dir / "*.h5"});
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_TRUE(e.is_everywhere());
        EXPECT_NE(std::string(e.what()).find(dir / "*.h5"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no file matches"), std::string::npos) << e.what();
    }
    EXPECT_THROW(expand_inputs({}), InputError);
}

TEST(Batch, OutputNames) {
    EXPECT_EQ(batch_outputs({"/x/a.tif"}, "/tmp/r.h5", ".h5"), (std::vector<std::string>{"/tmp/r.h5"}));
    EXPECT_EQ(batch_outputs({"/x/a.tif", "/y/b.vrt"}, "/o", ".h5"), (std::vector<std::string>{"/o/a.h5", "/o/b.h5"}));
    EXPECT_THROW(batch_outputs({"/x/a.tif", "/y/a.tif"}, "/o", ".h5"), InputError);
    const auto h = hologram_outputs({"/x/a.tif", "/y/b.tif"}, "/o");
    EXPECT_EQ(h[1], (std::pair<std::string, std::string>{"/o/b_phase.tif", "/o/b_amplitude.tif"}));
    const auto one = hologram_outputs({"/x/a.tif"}, "/o/p.tif");
    EXPECT_EQ(one[0], (std::pair<std::string, std::string>{"/o/p.tif", "/o/p_amplitude.tif"}));
}

// Three frames (one with a nodata river) unwrapped as a batch, into a directory, give
// the bits of three one-by-one run_unwrap calls.
TEST(Batch, UnwrapBatchEqualsOneByOne) {
    TempDir dir("batch_unwrap");
    std::vector<std::string> inputs;
    const char* cases[] = {"topo", "holes", "fringes"};
    for (int i = 0; i < 3; ++i) {
        const SynthScene s = make_scene(cases[i], 70 + 10 * i, 90, 11 + static_cast<uint64_t>(i));
        inputs.push_back(dir / ("frame" + std::to_string(i) + ".tif"));
        write_f32(inputs.back(), s.rows, s.cols, s.wrapped);
    }
    UnwrapOptions base;
    base.save_cycles = true;
    base.quiet = true;
    base.tile_size = 32;
    std::vector<UnwrapFrameReport> reps;
    const std::string out = dir / "out";
    ASSERT_EQ(run_unwrap_batch(expand_inputs({dir / "frame*.tif"}), base, out, FrameBatchOptions{}, MPI_COMM_WORLD,
                               &reps),
              0);
    ASSERT_EQ(reps.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        UnwrapOptions one = base;
        one.input = inputs[static_cast<size_t>(i)];
        one.output = dir / ("single" + std::to_string(i) + ".h5");
        one.tile_size = 512;  // the result does not depend on it
        run_unwrap(one, MPI_COMM_WORLD);
        const std::string b = out + "/frame" + std::to_string(i) + ".h5";
        EXPECT_EQ(reps[static_cast<size_t>(i)].output, b);
        EXPECT_EQ(reps[static_cast<size_t>(i)].rows, 70 + 10 * i);
        EXPECT_TRUE(same_bits(read_dataset<float>(b, "unwrapped_phase"),
                              read_dataset<float>(one.output, "unwrapped_phase")))
            << "frame " << i;
        EXPECT_EQ(read_dataset<int32_t>(b, "cycles"), read_dataset<int32_t>(one.output, "cycles")) << "frame " << i;
        EXPECT_EQ(read_dataset<uint32_t>(b, "connected_components"),
                  read_dataset<uint32_t>(one.output, "connected_components"))
            << "frame " << i;
    }
}

// `tessera hologram` on three frames (a batch into a directory) equals one-by-one runs;
// `tessera unwrap --from-hologram` on the batch equals hologram-then-unwrap one by one,
// and leaves no temporary file.
TEST(Batch, HologramBatchesEqualOneByOne) {
    TempDir dir("batch_holo");
    const int64_t H = 128, W = 160;
    std::vector<std::string> inputs;
    for (int i = 0; i < 3; ++i) {
        inputs.push_back(dir / ("holo" + std::to_string(i) + ".tif"));
        write_f32(inputs.back(), H, W, hologram(H, W, 8.0 + 4.0 * i, 5 + static_cast<uint64_t>(i)));
    }
    HologramRunOptions ho;
    ho.inputs = {dir / "holo*.tif"};
    ho.output = dir / "phase";
    ho.save_field = true;
    ho.quiet = true;
    ho.params.window = SidebandWindow::kHann;
    const HologramRunReport rep = run_hologram(ho, MPI_COMM_WORLD);
    ASSERT_EQ(rep.frames.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        // Carrier (0.2, 0.25) cycles/pixel = (25.6, 40) bins from the centre (64, 80).
        EXPECT_EQ(rep.frames[static_cast<size_t>(i)].carrier.row, 64 + 26);
        EXPECT_EQ(rep.frames[static_cast<size_t>(i)].carrier.col, 80 + 40);
        HologramRunOptions one = ho;
        one.inputs = {inputs[static_cast<size_t>(i)]};
        one.output = dir / ("single" + std::to_string(i) + ".tif");
        run_hologram(one, MPI_COMM_WORLD);
        const std::string stem = dir / ("phase/holo" + std::to_string(i));
        EXPECT_TRUE(same_bits(read_f32(stem + "_phase.tif"), read_f32(one.output))) << "frame " << i;
        EXPECT_TRUE(same_bits(read_f32(stem + "_amplitude.tif"),
                              read_f32(dir / ("single" + std::to_string(i) + "_amplitude.tif"))))
            << "frame " << i;
    }

    UnwrapOptions base;
    base.quiet = true;
    base.min_component_size = 10;
    HologramParams hp;
    hp.window = SidebandWindow::kHann;
    const std::string out = dir / "unw";
    ASSERT_EQ(run_unwrap_batch(inputs, base, out, from_holograms(hp)), 0);
    for (int i = 0; i < 3; ++i) {
        UnwrapOptions one = base;
        one.input = dir / ("single" + std::to_string(i) + ".tif");
        one.output = dir / ("single" + std::to_string(i) + ".h5");
        run_unwrap(one, MPI_COMM_WORLD);
        const std::string b = out + "/holo" + std::to_string(i) + ".h5";
        const auto u = read_dataset<float>(b, "unwrapped_phase");
        EXPECT_TRUE(same_bits(u, read_dataset<float>(one.output, "unwrapped_phase"))) << "frame " << i;
        EXPECT_EQ(read_dataset<uint32_t>(b, "connected_components"),
                  read_dataset<uint32_t>(one.output, "connected_components"));
        // The bump (8-16 rad) really was unwrapped: the centre is well above 2 pi over the corner.
        EXPECT_GT(u[static_cast<size_t>(64 * W + 72)] - u[0], 7.0) << "frame " << i;
    }
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(out)) left.push_back(e.path().filename().string());
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, (std::vector<std::string>{"holo0.h5", "holo1.h5", "holo2.h5"}));

    // One hologram, OUT a file: the same bits again.
    ASSERT_EQ(run_unwrap_batch({inputs[1]}, base, dir / "one.h5", from_holograms(hp)), 0);
    EXPECT_TRUE(same_bits(read_dataset<float>(dir / "one.h5", "unwrapped_phase"),
                          read_dataset<float>(dir / "single1.h5", "unwrapped_phase")));
}

// A missing frame is found before any work: one line naming it, on every rank, no output.
TEST(Batch, MissingFrameFailsBeforeAnyWork) {
    TempDir dir("batch_missing");
    const SynthScene s = make_scene("bowl", 40, 50, 3);
    write_f32(dir / "a.tif", s.rows, s.cols, s.wrapped);
    UnwrapOptions base;
    base.quiet = true;
    try {
        run_unwrap_batch({dir / "a.tif", dir / "b.tif"}, base, dir / "out", FrameBatchOptions{});
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_TRUE(e.is_everywhere());
        EXPECT_NE(std::string(e.what()).find(dir / "b.tif"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir / "out/a.h5"));
    // --geotiff names one file: refused with several inputs.
    base.geotiff = dir / "x.tif";
    EXPECT_THROW(run_unwrap_batch({dir / "a.tif", dir / "a2.tif"}, base, dir / "out", FrameBatchOptions{}),
                 InputError);
}

// A frame that fails only when processed (all nodata) does not stop the others; the
// batch then fails with one line naming it.
TEST(Batch, FailedFrameIsReportedAfterTheOthers) {
    TempDir dir("batch_fail");
    const SynthScene s = make_scene("bowl", 40, 50, 3);
    write_f32(dir / "a.tif", s.rows, s.cols, s.wrapped);
    write_f32(dir / "b.tif", s.rows, s.cols, std::vector<float>(s.wrapped.size(), std::nanf("")));
    write_f32(dir / "c.tif", s.rows, s.cols, s.wrapped);
    UnwrapOptions base;
    base.quiet = true;
    try {
        run_unwrap_batch(expand_inputs({dir / "*.tif"}), base, dir / "out", FrameBatchOptions{});
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_TRUE(e.is_everywhere());
        EXPECT_NE(std::string(e.what()).find(dir / "b.tif"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no valid pixels"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::exists(dir / "out/a.h5"));
    EXPECT_FALSE(fs::exists(dir / "out/b.h5"));
    EXPECT_TRUE(fs::exists(dir / "out/c.h5"));
}

// A hologram batch with a reference of another size fails before any work, naming the frame.
TEST(Batch, HologramReferenceOfAnotherSize) {
    TempDir dir("batch_ref");
    write_f32(dir / "h.tif", 64, 64, hologram(64, 64, 1.0, 1));
    write_f32(dir / "ref.tif", 64, 80, hologram(64, 80, 0.0, 2));
    HologramRunOptions o;
    o.inputs = {dir / "h.tif"};
    o.output = dir / "p.tif";
    o.reference = dir / "ref.tif";
    o.quiet = true;
    try {
        run_hologram(o, MPI_COMM_WORLD);
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("differs from the reference"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(dir / "h.tif"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir / "p.tif"));
    o.reference.clear();
    o.inputs = {dir / "nothing*.tif"};
    EXPECT_THROW(run_hologram(o, MPI_COMM_WORLD), InputError);
}

}  // namespace
}  // namespace tessera
