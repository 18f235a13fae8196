// The command line end to end: synthetic scenes through GDAL and HDF5, tile-size
// invariance of the files, bad input (section 7), `info`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "io/geotiff_writer.h"
#include "support/cli.h"

namespace tessera {
namespace {

using testing::read_dataset;
using testing::run_tessera;
using testing::TempDir;

class CliCase : public ::testing::TestWithParam<std::string> {};

TEST_P(CliCase, FilesBitIdenticalForEveryTileSize) {
    TempDir dir("cli_" + GetParam());
    const auto s = run_tessera("synth --case " + GetParam() + " --size 230x201 --seed 4 " + dir.path().string());
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const std::string in = dir / (GetParam() + "_wrapped.tif"), coh = dir / (GetParam() + "_coherence.tif");
    std::vector<float> u0;
    std::vector<int32_t> k0;
    std::vector<uint32_t> l0;
    for (const char* tile : {"1000000", "37", "64", "256"}) {
        const std::string out = dir / (std::string("t") + tile + ".h5");
        const auto r = run_tessera("unwrap -q --save-cycles --tile-size " + std::string(tile) + " --coherence " + coh +
                                   " " + in + " " + out);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto u = read_dataset<float>(out, "unwrapped_phase");
        const auto k = read_dataset<int32_t>(out, "cycles");
        const auto l = read_dataset<uint32_t>(out, "connected_components");
        ASSERT_EQ(u.size(), 230u * 201u);
        if (u0.empty()) {
            u0 = u, k0 = k, l0 = l;
            continue;
        }
        EXPECT_EQ(std::memcmp(u.data(), u0.data(), u.size() * sizeof(float)), 0) << "tile " << tile;
        EXPECT_EQ(k, k0) << "tile " << tile;
        EXPECT_EQ(l, l0) << "tile " << tile;
    }
}

INSTANTIATE_TEST_SUITE_P(AllCases, CliCase, ::testing::Values("bowl", "topo", "holes", "fringes"));

TEST(Cli, InfoDescribesTheResult) {
    TempDir dir("info");
    ASSERT_EQ(run_tessera("synth --case topo --size 64x80 --seed 2 " + dir.path().string()).exit_code, 0);
    const std::string out = dir / "r.h5";
    ASSERT_EQ(run_tessera("unwrap -q --save-residues --save-cuts " + (dir / "topo_wrapped.tif") + " " + out).exit_code, 0);
    const auto info = run_tessera("info " + out);
    ASSERT_EQ(info.exit_code, 0) << info.err;
    for (const char* want : {"unwrapped_phase", "connected_components", "residues", "branch_cuts", "tile_size",
                             "conflicts", "time_matching", "geotransform"})
        EXPECT_NE(info.out.find(want), std::string::npos) << want << " missing from:\n" << info.out;
    // The residue raster agrees with the counts in the attributes.
    const auto q = read_dataset<int8_t>(out, "residues");
    int64_t total = 0;
    for (int8_t v : q) total += std::abs(v);
    EXPECT_NE(info.out.find("residues = " + std::to_string(total)), std::string::npos) << info.out;
}

// ---- bad input: one line naming the file, non-zero exit, no output left behind ----
class BadInput : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(run_tessera("synth --case bowl --size 40x50 --seed 1 " + dir.path().string()).exit_code, 0);
        good = dir / "bowl_wrapped.tif";
    }
    void expect_clean_failure(const std::string& args, const std::string& names, const std::string& out) {
        const auto r = run_tessera(args);
        EXPECT_NE(r.exit_code, 0) << args;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "want exactly one line, got:\n" << r.err;
        EXPECT_NE(r.err.find(names), std::string::npos) << "error should name " << names << ":\n" << r.err;
        EXPECT_FALSE(std::filesystem::exists(out)) << out;
        EXPECT_TRUE(testing::temporaries_of(out).empty()) << out << ".tmp*";
    }
    TempDir dir{"bad"};
    std::string good;
};

TEST_F(BadInput, MissingFile) {
    expect_clean_failure("unwrap " + (dir / "nope.tif") + " " + (dir / "o.h5"), "nope.tif", dir / "o.h5");
}
TEST_F(BadInput, NotARaster) {
    std::ofstream(dir / "text.tif") << "this is not an image\n";
    expect_clean_failure("unwrap " + (dir / "text.tif") + " " + (dir / "o.h5"), "text.tif", dir / "o.h5");
}
TEST_F(BadInput, BandOutOfRange) {
    expect_clean_failure("unwrap --band 3 " + good + " " + (dir / "o.h5"), "band", dir / "o.h5");
}
TEST_F(BadInput, CoherenceOfAnotherSize) {
    ASSERT_EQ(run_tessera("synth --case bowl --size 41x50 --seed 1 " + (dir / "other")).exit_code, 0);
    const std::string coh = dir / "other/bowl_coherence.tif";
    expect_clean_failure("unwrap --coherence " + coh + " " + good + " " + (dir / "o.h5"), coh, dir / "o.h5");
}
TEST_F(BadInput, MaskOfAnotherSize) {
    ASSERT_EQ(run_tessera("synth --case bowl --size 40x49 --seed 1 " + (dir / "other")).exit_code, 0);
    const std::string mask = dir / "other/bowl_coherence.tif";
    expect_clean_failure("unwrap --mask " + mask + " " + good + " " + (dir / "o.h5"), mask, dir / "o.h5");
}
TEST_F(BadInput, SmallerThanTwoByTwo) {
    const std::vector<float> row(7, 0.5f);
    write_geotiff_f32(dir / "row.tif", 1, 7, row.data(), GeoRef{}, std::nullopt);
    expect_clean_failure("unwrap " + (dir / "row.tif") + " " + (dir / "o.h5"), "row.tif", dir / "o.h5");
}
TEST_F(BadInput, AllNodata) {
    const std::vector<float> nan(6 * 5, std::numeric_limits<float>::quiet_NaN());
    write_geotiff_f32(dir / "nan.tif", 6, 5, nan.data(), GeoRef{}, std::numeric_limits<double>::quiet_NaN());
    expect_clean_failure("unwrap " + (dir / "nan.tif") + " " + (dir / "o.h5"), "nan.tif", dir / "o.h5");
}
TEST_F(BadInput, NotAPhase) {
    std::vector<float> big(6 * 5, 1000.0f);
    write_geotiff_f32(dir / "big.tif", 6, 5, big.data(), GeoRef{}, std::nullopt);
    expect_clean_failure("unwrap " + (dir / "big.tif") + " " + (dir / "o.h5"), "big.tif", dir / "o.h5");
}
TEST_F(BadInput, OutputDirectoryMissing) {
    const std::string out = dir / "missing/o.h5";
    expect_clean_failure("unwrap " + good + " " + out, "missing", out);
}
TEST_F(BadInput, OutputDirectoryNotWritable) {
    // Root may write anywhere, so use a parent that is a regular file.
    std::ofstream(dir / "afile") << "x";
    const std::string out = dir / "afile/o.h5";
    expect_clean_failure("unwrap " + good + " " + out, "afile", out);
}
TEST_F(BadInput, GeotiffDirectoryMissing) {
    const std::string out = dir / "o.h5";
    expect_clean_failure("unwrap --geotiff " + (dir / "missing/o.tif") + " " + good + " " + out, "missing", out);
}
TEST_F(BadInput, ReferenceOutsideTheImage) {
    expect_clean_failure("unwrap --reference 40 3 " + good + " " + (dir / "o.h5"), "reference", dir / "o.h5");
}

}  // namespace
}  // namespace tessera
