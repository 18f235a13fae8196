// The one error path (app/error_report.h, ARCHITECTURE.md section 7), through the executable:
// exit codes, exactly one line, what it names, nothing left behind; for every command kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "support/cli.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::run_tessera;
using testing::TempDir;

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class ErrorReport : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(run_tessera("synth --case topo --size 96x96 --seed 3 " + dir.path().string()).exit_code, 0);
        in = dir / "topo_wrapped.tif";
    }
    TempDir dir{"error_report"};
    std::string in;
};

TEST_F(ErrorReport, BrokenInvariantIsOneLineNamingWhatAndWhereExit3) {
    const std::string out = dir / "out.h5";
    const auto r = run_tessera("unwrap -q " + in + " " + out, "TESSERA_INJECT_ERROR=0:matching:invariant ");
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("tessera: error: internal error: injected broken invariant at stage matching (", 0), 0u)
        << r.err;
    EXPECT_NE(r.err.find("pipeline/unwrap_pipeline.cpp:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("please report this input)"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_TRUE(testing::temporaries_of(out).empty());
}

TEST_F(ErrorReport, FailureMidRunIsExit3AndInputErrorsExit2) {
    const std::string out = dir / "out.h5";
    auto r = run_tessera("unwrap -q " + in + " " + out, "TESSERA_INJECT_ERROR=0:union_find ");
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("injected error on rank 0 at stage union_find"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    r = run_tessera("unwrap -q " + (dir / "missing.tif") + " " + out);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("missing.tif"), std::string::npos) << r.err;
}

// The commands parsed by their own subcommand (background, clahe) end through the same path
// after the parse, not inside it: one line, exit 2, no output.
TEST_F(ErrorReport, BackgroundAndClaheReportThroughTheSamePath) {
    for (const std::string cmd : {"background", "clahe"}) {
        const std::string out = dir / (cmd + ".tif");
        const auto r = run_tessera(cmd + " -q " + (dir / "missing.tif") + " " + out);
        EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.err;
        EXPECT_EQ(lines(r.err), 1) << cmd << ": " << r.err;
        EXPECT_EQ(r.err.rfind("tessera: error: ", 0), 0u) << cmd << ": " << r.err;
        EXPECT_NE(r.err.find("missing.tif"), std::string::npos) << cmd << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << cmd;
    }
}

}  // namespace
}  // namespace tessera
