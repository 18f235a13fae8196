// `tessera unwrap --memory-limit` (issue 16; docs/ARCHITECTURE.md section 5.1): a scene whose
// window does not fit the limit is taken in chunks, and every output -- each HDF5 dataset, the
// GeoTIFF, the quicklook -- is the in-core run's bit for bit, for two chunk heights; the peak
// resident memory of the streamed run, measured here from the outside, stays within 10 % of
// the limit, while the run in one piece exceeds it. `tessera plan` shows the same layout. With
// --scratch DIR (the third pass from a scratch file, not the inputs) the same bits, within the same
// limit, and DIR as it was after the run, after a failure and after a kill; a bad DIR is one line.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
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

// Starts tessera with `args` (split on spaces) as a child of this test, stdout and stderr to /dev/null.
pid_t spawn_tessera(const std::string& args) {
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
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

// Runs tessera with `args` (split on spaces) as a child of this test alone and returns its
// exit code and peak RSS (wait4's rusage of that child).
Measured run_measured(const std::string& args) {
    Measured m;
    const pid_t pid = spawn_tessera(args);
    if (pid < 0) return m;
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

void expect_same_results(const std::string& a, const std::string& b) {
    expect_same_bits<float>(a, b, "unwrapped_phase");
    expect_same_bits<uint32_t>(a, b, "connected_components");
    expect_same_bits<int32_t>(a, b, "cycles");
    expect_same_bits<int8_t>(a, b, "residues");
    expect_same_bits<uint8_t>(a, b, "branch_cuts");
    // What the file says of the run (the valid pixels counted once per chunk, not per buffer).
    for (const char* n : {"valid_pixels", "residues", "pair_cuts", "ground_cuts", "lake_joins", "lake_steps", "components",
                          "labelled_components", "largest_component", "conflicts"})
        EXPECT_EQ(testing::root_attribute<int64_t>(a, n, H5T_NATIVE_INT64),
                  testing::root_attribute<int64_t>(b, n, H5T_NATIVE_INT64))
            << n << ": " << a << " vs " << b;
}

// The names in a directory (dot files too).
std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
    return out;
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
    // 120M: the inputs read in every pass; 160M: read once and kept beside smaller chunks.
    const int64_t limits[] = {int64_t{120} << 20, int64_t{160} << 20};
    for (const int64_t limit : limits) {
        const std::string tag = "lim" + std::to_string(limit >> 20);
        // The layout this limit gives: chunks, not one piece (the plan command says what the run does).
        const auto plan = run_tessera("plan --tile-size 128 --coherence " + coh + " --memory-limit " +
                                      std::to_string(limit) + " " + in);
        ASSERT_EQ(plan.exit_code, 0) << plan.err;
        EXPECT_NE(plan.out.find("chunks of"), std::string::npos) << plan.out;
        EXPECT_EQ(plan.out.find("read once") != std::string::npos, limit == limits[1]) << plan.out;
        EXPECT_NE(plan.out.find("census       --guide-window auto"), std::string::npos) << plan.out;  // section 2.2
        EXPECT_NE(plan.out.find("plaquette rows, read first"), std::string::npos) << plan.out;
        const Measured m = run_measured(common + outs(tag) + " --memory-limit " + std::to_string(limit));
        ASSERT_EQ(m.exit_code, 0) << tag;
        EXPECT_GT(whole.peak_bytes, limit) << "the scene must not fit the limit in one piece";
        EXPECT_LE(m.peak_bytes, limit + limit / 10) << tag << ": peak " << m.peak_bytes << " B";
        const std::string a = dir / "whole.h5", b = dir / (tag + ".h5");
        expect_same_results(a, b);
        const auto ga = geotiff_pixels(dir / "whole.tif"), gb = geotiff_pixels(dir / (tag + ".tif"));
        ASSERT_EQ(ga.size(), gb.size());
        EXPECT_EQ(std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float)), 0) << tag << ".tif";
        EXPECT_EQ(testing::slurp(dir / "whole.png"), testing::slurp(dir / (tag + ".png"))) << tag << ".png";
        // The third pass from a scratch file: the same bits within the same limit, and the
        // scratch directory (holding a file of the user's) as it was.
        const std::string scratch = dir / "scratch";
        std::filesystem::create_directories(scratch);
        { std::FILE* f = std::fopen((dir / "scratch/mine.txt").c_str(), "w"); std::fputs("mine", f); std::fclose(f); }
        const Measured s = run_measured(common + outs(tag + "s") + " --memory-limit " + std::to_string(limit) +
                                        " --scratch " + scratch);
        ASSERT_EQ(s.exit_code, 0) << tag << " --scratch";
        EXPECT_LE(s.peak_bytes, limit + limit / 10) << tag << " --scratch: peak " << s.peak_bytes << " B";
        expect_same_results(a, dir / (tag + "s.h5"));
        EXPECT_EQ(testing::slurp(dir / (tag + ".tif")), testing::slurp(dir / (tag + "s.tif"))) << tag << "s.tif";
        EXPECT_EQ(entries(scratch), std::vector<std::string>{"mine.txt"});
        EXPECT_EQ(testing::slurp(dir / "scratch/mine.txt"), "mine");
    }
    const auto plan = run_tessera("plan --tile-size 128 --memory-limit 160M --scratch /nowhere " + in);
    EXPECT_NE(plan.out.find("the third over the scratch"), std::string::npos) << plan.out;
    EXPECT_NE(plan.out.find("scratch      "), std::string::npos) << plan.out;
}

// The file a running tessera holds open in `dir` (unlinked: "DIR/name (deleted)"), as /proc shows it.
std::string open_scratch(pid_t pid, const std::string& dir) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
        const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
        if (target.rfind(dir + "/", 0) == 0) return e.path().string();
    }
    return {};
}

TEST(StreamedUnwrap, ScratchIsWrittenAndNothingIsLeftAfterAFailureOrAKill) {
    testing::TempDir dir("streamed_scratch");
    ASSERT_EQ(run_tessera("synth --case topo --size 600x500 --seed 3 " + dir.path().string()).exit_code, 0);
    const std::string in = dir / "topo_wrapped.tif", out = dir / "r.h5", scratch = dir / "scratch";
    std::filesystem::create_directories(scratch);
    const std::string run = "unwrap -q --tile-size 64 --chunk-rows 128 --scratch " + scratch + " " + in + " " + out;
    // An error on rank 0 after the second pass (the scratch written): one line, no output, DIR empty.
    const auto failed = run_tessera(run, "TESSERA_INJECT_ERROR=0:union_find ");
    EXPECT_NE(failed.exit_code, 0);
    EXPECT_EQ(std::count(failed.err.begin(), failed.err.end(), '\n'), 1) << failed.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_TRUE(testing::temporaries_of(out).empty());
    EXPECT_TRUE(entries(scratch).empty());
    // While the run stands after the second pass, its scratch is open in DIR and begins with the
    // first chunk's phase as the input holds it (128 rows and the halo row, every pixel valid);
    // killed there, it leaves nothing in DIR (it has no name from the start).
    std::vector<float> first(129 * 500);
    RasterReader(in, 1).read_float(Window{0, 0, 129, 500}, first.data(), 500);
    ASSERT_EQ(setenv("TESSERA_INJECT_ERROR", "0:union_find:sleep", 1), 0);
    const pid_t pid = spawn_tessera(run + " --overwrite");
    unsetenv("TESSERA_INJECT_ERROR");
    ASSERT_GT(pid, 0);
    std::string seen, data;
    for (int i = 0; i < 300 && data.empty(); ++i) {  // up to 30 s
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        seen = open_scratch(pid, scratch);
        if (seen.empty()) continue;
        const std::string s = testing::slurp(seen);
        if (s.size() >= size_t{600} * 500 * 13 && std::memcmp(s.data(), first.data(), first.size() * sizeof(float)) == 0)
            data = s;
    }
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    EXPECT_FALSE(seen.empty()) << "no scratch file open in " << scratch;
    EXPECT_FALSE(data.empty()) << "the scratch never held the first chunk's phase";
    EXPECT_TRUE(entries(scratch).empty());
}

TEST(StreamedUnwrap, ABadScratchDirectoryIsOneLineAndNoOutput) {
    testing::TempDir dir("streamed_bad_scratch");
    ASSERT_EQ(run_tessera("synth --case topo --size 600x500 --seed 3 " + dir.path().string()).exit_code, 0);
    const std::string in = dir / "topo_wrapped.tif", out = dir / "r.h5";
    { std::FILE* f = std::fopen((dir / "file").c_str(), "w"); std::fclose(f); }
    // Missing, a file, a directory no one may create files in (/proc: even root); streamed or not.
    for (const std::string bad : {dir / "missing", dir / "file", std::string("/proc")}) {
        for (const std::string chunks : {" --chunk-rows 128", ""}) {
            const auto r = run_tessera("unwrap -q --tile-size 64" + chunks + " --scratch " + bad + " " + in + " " + out);
            EXPECT_NE(r.exit_code, 0) << bad << chunks;
            EXPECT_NE(r.err.find(bad + ": --scratch"), std::string::npos) << r.err;
            EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
            EXPECT_FALSE(std::filesystem::exists(out));
            EXPECT_TRUE(testing::temporaries_of(out).empty());
        }
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "missing"));
    EXPECT_EQ(std::filesystem::file_size(dir / "file"), 0u);
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
