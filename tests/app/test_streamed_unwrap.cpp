// `tessera unwrap --memory-limit` (issue 16; docs/ARCHITECTURE.md section 5.1): a scene whose
// window does not fit the limit is taken in chunks, and every output -- each HDF5 dataset, the
// GeoTIFF, the quicklook -- is the in-core run's bit for bit, for two chunk heights; the peak
// resident memory of the streamed run, measured here from the outside, stays within 10 % of
// the limit, while the run in one piece exceeds it. `tessera plan` shows the same layout.
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "io/raster_reader.h"
#include "support/cli.h"

extern char** environ;

namespace tessera {
namespace {

using testing::read_dataset;
using testing::run_tessera;

struct Measured {
    int exit_code = -1;
    int64_t peak_bytes = 0;  // the child's peak resident memory
};

// Runs tessera with `args` (split on spaces) as a child of this test alone and returns its
// exit code and peak RSS (wait4's rusage of that child).
Measured run_measured(const std::string& args) {
    std::vector<std::string> words{TESSERA_EXE};
    std::istringstream is(args);
    for (std::string w; is >> w;) words.push_back(w);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    Measured m;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) return m;
    posix_spawn_file_actions_destroy(&fa);
    int st = 0;
    struct rusage ru {};
    if (wait4(pid, &st, 0, &ru) != pid) return m;
    m.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    m.peak_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
    return m;
}

template <class T>
void expect_same_bits(const std::string& a, const std::string& b, const std::string& name) {
    const auto x = read_dataset<T>(a, name), y = read_dataset<T>(b, name);
    ASSERT_EQ(x.size(), y.size()) << name;
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(T)), 0) << name << ": " << a << " vs " << b;
}

std::vector<float> geotiff_pixels(const std::string& path) {
    RasterReader r(path, 1);
    std::vector<float> v(static_cast<size_t>(r.info().rows * r.info().cols));
    r.read_float(Window{0, 0, r.info().rows, r.info().cols}, v.data(), r.info().cols);
    return v;
}

TEST(StreamedUnwrap, ChunksGiveTheInCoreBitsWithinTheMemoryLimit) {
    testing::TempDir dir("streamed");
    ASSERT_EQ(run_tessera("synth --case holes --size 2560x2048 --seed 21 " + dir.path().string()).exit_code, 0);
    const std::string in = dir / "holes_wrapped.tif", coh = dir / "holes_coherence.tif";
    const std::string common = "unwrap -q --tile-size 128 --coherence " + coh +
                               " --min-coherence 0.3 --save-cycles --save-residues --save-cuts --reference 1700 900 " + in;
    auto outs = [&](const std::string& tag) {
        return " " + (dir / (tag + ".h5")) + " --geotiff " + (dir / (tag + ".tif")) + " --quicklook " + (dir / (tag + ".png"));
    };
    const Measured whole = run_measured(common + outs("whole"));
    ASSERT_EQ(whole.exit_code, 0);
    const int64_t limits[] = {int64_t{160} << 20, int64_t{200} << 20};
    for (const int64_t limit : limits) {
        const std::string tag = "lim" + std::to_string(limit >> 20);
        // The layout this limit gives: chunks, not one piece (the plan command says what the run does).
        const auto plan = run_tessera("plan --tile-size 128 --coherence " + coh + " --memory-limit " +
                                      std::to_string(limit) + " " + in);
        ASSERT_EQ(plan.exit_code, 0) << plan.err;
        EXPECT_NE(plan.out.find("chunks of"), std::string::npos) << plan.out;
        const Measured m = run_measured(common + outs(tag) + " --memory-limit " + std::to_string(limit));
        ASSERT_EQ(m.exit_code, 0) << tag;
        EXPECT_GT(whole.peak_bytes, limit) << "the scene must not fit the limit in one piece";
        EXPECT_LE(m.peak_bytes, limit + limit / 10) << tag << ": peak " << m.peak_bytes << " B";
        const std::string a = dir / "whole.h5", b = dir / (tag + ".h5");
        expect_same_bits<float>(a, b, "unwrapped_phase");
        expect_same_bits<uint32_t>(a, b, "connected_components");
        expect_same_bits<int32_t>(a, b, "cycles");
        expect_same_bits<int8_t>(a, b, "residues");
        expect_same_bits<uint8_t>(a, b, "branch_cuts");
        const auto ga = geotiff_pixels(dir / "whole.tif"), gb = geotiff_pixels(dir / (tag + ".tif"));
        ASSERT_EQ(ga.size(), gb.size());
        EXPECT_EQ(std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float)), 0) << tag << ".tif";
        EXPECT_EQ(testing::slurp(dir / "whole.png"), testing::slurp(dir / (tag + ".png"))) << tag << ".png";
    }
}

TEST(StreamedUnwrap, ALimitThatHoldsNoRowOfTilesIsOneLineAndNoOutput) {
    testing::TempDir dir("streamed_small");
    ASSERT_EQ(run_tessera("synth --case topo --size 600x500 --seed 3 " + dir.path().string()).exit_code, 0);
    const std::string in = dir / "topo_wrapped.tif", out = dir / "r.h5";
    const auto r = run_tessera("unwrap -q --memory-limit 2M " + in + " " + out);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(in), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--memory-limit"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_TRUE(testing::temporaries_of(out).empty());
    const auto bad = run_tessera("unwrap -q --memory-limit lots " + in + " " + out);
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("--memory-limit lots"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace tessera
