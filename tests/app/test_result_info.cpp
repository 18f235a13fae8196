// `tessera info` (issue 17 item 7): the labelled fraction, the components by size and the run's
// parameters of a result, checked against the same numbers computed here from the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "app/synth.h"
#include "io/geotiff_writer.h"
#include "support/cli.h"

namespace tessera {
namespace {

using testing::read_dataset;
using testing::run_tessera;
using testing::TempDir;

std::string percent(int64_t part, int64_t whole) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return b;
}

// A mask cuts two islands out of the topography: one of 36 pixels, below --min-component-size 50
// (label 0 but a finite phase, so the labelled fraction is below 1), one of 64 (its own component).
TEST(ResultInfo, ReportsTheLabelledFractionAndComponentsFromTheFile) {
    TempDir dir("result_info");
    const int64_t rows = 120, cols = 160;
    const SynthScene s = make_scene("topo", rows, cols, 4);
    std::vector<float> mask(static_cast<size_t>(rows * cols), 1.0f);
    for (const auto& [r0, c0, side] : {std::array<int64_t, 3>{20, 20, 6}, std::array<int64_t, 3>{60, 90, 8}})
        for (int64_t r = r0 - 1; r <= r0 + side; ++r)
            for (int64_t c = c0 - 1; c <= c0 + side; ++c)
                if (r == r0 - 1 || r == r0 + side || c == c0 - 1 || c == c0 + side)
                    mask[static_cast<size_t>(r * cols + c)] = 0.0f;  // the ring around the island
    GeoRef geo;
    write_geotiff_f32(dir / "ifg.tif", rows, cols, s.wrapped.data(), geo, std::nullopt);
    write_geotiff_f32(dir / "mask.tif", rows, cols, mask.data(), geo, std::nullopt);
    const std::string out = dir / "r.h5";
    ASSERT_EQ(run_tessera("unwrap -q " + dir / "ifg.tif " + out + " --mask " + dir / "mask.tif" +
                          " --min-component-size 50 --tile-size 64")
                  .exit_code,
              0);
    const auto u = read_dataset<float>(out, "unwrapped_phase");
    const auto l = read_dataset<uint32_t>(out, "connected_components");
    int64_t finite = 0, labelled = 0;
    std::map<uint32_t, int64_t> size;
    for (size_t i = 0; i < u.size(); ++i)
        if (std::isfinite(u[i])) {
            ++finite;
            if (l[i] != 0) ++labelled, ++size[l[i]];
        }
    ASSERT_LT(labelled, finite) << "the test needs dropped components";
    ASSERT_EQ(size.size(), 2u);
    const auto info = run_tessera("info " + out);
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const std::string line = "labelled " + std::to_string(labelled) + " of " + std::to_string(finite) +
                             " pixels with a finite unwrapped phase (" + percent(labelled, finite) + ") in " +
                             std::to_string(size.size()) + " components";
    EXPECT_NE(info.out.find(line), std::string::npos) << line << "\n" << info.out;
    // Labels are 1..N by size descending: the largest are 1, 2, ...
    for (uint32_t k = 1; k <= std::min<uint32_t>(3, static_cast<uint32_t>(size.size())); ++k) {
        const std::string item = " " + std::to_string(k) + ": " + std::to_string(size[k]) + " (" +
                                 percent(size[k], labelled) + ")";
        EXPECT_NE(info.out.find(item), std::string::npos) << item << "\n" << info.out;
    }
    for (const char* want : {"min_component_size = 50", "mask_band = 1", "tile_size = 64", "coherence_band = 0",
                             "time_matching", "conflicts = 0"})
        EXPECT_NE(info.out.find(want), std::string::npos) << want << "\n" << info.out;
    // One screen.
    EXPECT_LE(std::count(info.out.begin(), info.out.end(), '\n'), 24) << info.out;
}

}  // namespace
}  // namespace tessera
