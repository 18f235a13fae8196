// Quicklook PNG (app/quicklook.h): written, the right size, readable by GDAL, NaN and
// label 0 black, and the distributed path (cells per window, merged) equal to one window.
#include <gtest/gtest.h>

#include <gdal_priv.h>

#include <algorithm>
#include <array>
#include <numbers>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "io/input_error.h"
#include "kernels/label_width.h"
#include "app/quicklook.h"
#include "io/png_writer.h"
#include "support/cli.h"

namespace tessera {
namespace {

struct Scene {
    int64_t H, W;
    std::vector<float> u;
    std::vector<uint32_t> lab;
};

Scene scene(int64_t H, int64_t W) {
    Scene s{H, W, std::vector<float>(static_cast<size_t>(H * W)), std::vector<uint32_t>(static_cast<size_t>(H * W))};
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t k = static_cast<size_t>(r * W + c);
            s.u[k] = static_cast<float>((r / 3) - (c / 5));  // integers: partial sums are exact
            s.lab[k] = c < W / 2 ? 1 : 2;
            if (r < H / 4 && c < W / 4) {  // a hole: NaN, label 0
                s.u[k] = std::nanf("");
                s.lab[k] = 0;
            }
        }
    return s;
}

std::vector<uint8_t> read_png(const std::string& path, int& w, int& h, int& bands) {
    GDALAllRegister();
    GDALDatasetUniquePtr ds(GDALDataset::Open(path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    if (!ds) return {};
    w = ds->GetRasterXSize();
    h = ds->GetRasterYSize();
    bands = ds->GetRasterCount();
    EXPECT_STREQ(ds->GetDriver()->GetDescription(), "PNG");
    std::vector<uint8_t> rgb(static_cast<size_t>(w * h * bands));
    EXPECT_EQ(ds->RasterIO(GF_Read, 0, 0, w, h, rgb.data(), w, h, GDT_Byte, bands, nullptr, bands,
                           static_cast<GSpacing>(w) * bands, 1, nullptr),
              CE_None);
    return rgb;
}

TEST(Quicklook, GridFitsMaxSide) {
    for (const auto& [H, W] : {std::pair<int64_t, int64_t>{300, 500}, {8192, 8192}, {10, 10}, {100000, 30}, {7, 90000}}) {
        const QuicklookGrid g = quicklook_grid(H, W, 1024);
        EXPECT_LE(g.height(), 1024);
        EXPECT_LE(g.width(), 1024);
        EXPECT_EQ(g.height(), g.panel_rows + g.bar_rows);
        EXPECT_EQ(g.width(), 3 * g.panel_cols + 2 * g.gap);
        EXPECT_EQ(g.panel_rows, (H + g.factor - 1) / g.factor);
        // f is the smallest that fits
        if (g.factor > 1) {
            const int64_t f = g.factor - 1;
            EXPECT_TRUE((H + f - 1) / f + g.bar_rows > 1024 || 3 * ((W + f - 1) / f) + 2 * g.gap > 1024)
                << H << "x" << W;
        }
    }
    EXPECT_EQ(quicklook_grid(8192, 8192).factor, 25);  // 3 * 328 + 2 * 4 <= 1024, 3 * 342 + 8 > 1024
    EXPECT_THROW(quicklook_grid(0, 5), std::invalid_argument);
    EXPECT_THROW(quicklook_grid(5, 5, 8), std::invalid_argument);
    EXPECT_THROW(quicklook_grid(5, 5, 63), std::invalid_argument);  // no room for the bars
}

TEST(Quicklook, PngWrittenAndReadable) {
    testing::TempDir dir("quicklook");
    const Scene s = scene(300, 500);
    const std::string png = dir / "q.png";
    write_quicklook(png, s.u.data(), s.lab.data(), s.H, s.W, s.W, 256);
    ASSERT_TRUE(std::filesystem::exists(png));
    EXPECT_TRUE(testing::temporaries_of(png).empty());
    const QuicklookGrid g = quicklook_grid(s.H, s.W, 256);
    int w = 0, h = 0, bands = 0;
    const std::vector<uint8_t> rgb = read_png(png, w, h, bands);
    ASSERT_FALSE(rgb.empty());
    EXPECT_EQ(bands, 3);
    EXPECT_EQ(h, g.panel_rows + g.bar_rows);
    EXPECT_EQ(w, 3 * g.panel_cols + 2 * g.gap);
    EXPECT_LE(w, 256);
    EXPECT_LE(h, 256);
    auto px = [&](int r, int c, int k) { return rgb[static_cast<size_t>((r * w + c) * 3 + k)]; };
    const int last = static_cast<int>(g.panel_rows) - 1;  // the panels' last row
    // Top-left: NaN phase and label 0 -> black in the three panels.
    for (int k = 0; k < 3; ++k)
        for (int p = 0; p < 3; ++p) EXPECT_EQ(px(0, static_cast<int>(g.panel_col0(p)), k), 0) << p;
    // Gaps grey; valid phase not black; labels 1 and 2 different colours.
    EXPECT_EQ(px(last, static_cast<int>(g.panel_cols), 0), 128);
    EXPECT_EQ(px(last, static_cast<int>(g.panel_col0(2)) - 1, 0), 128);
    EXPECT_GT(px(last, 0, 0) + px(last, 0, 1) + px(last, 0, 2), 0);
    const int l1 = static_cast<int>(g.panel_col0(2) + 2), l2 = w - 2;
    EXPECT_NE(px(last, l1, 0) * 65536 + px(last, l1, 1) * 256 + px(last, l1, 2),
              px(last, l2, 0) * 65536 + px(last, l2, 1) * 256 + px(last, l2, 2));
    // Viridis ends: the lowest phase (top right) dark purple, the highest (bottom left) yellow.
    EXPECT_LT(px(0, static_cast<int>(g.panel_cols) - 1, 1), 60);
    EXPECT_GT(px(last, 0, 0), 200);
    // Without labels: the phase and the re-wrapped phase.
    const std::string one = dir / "one.png";
    write_quicklook(one, s.u.data(), nullptr, s.H, s.W, s.W, 256);
    read_png(one, w, h, bands);
    EXPECT_EQ(w, 2 * g.panel_cols + g.gap);
}

// The colour bars follow the maps: each cell's colour in the u panel is the u bar's colour at the
// cell's mean (the bar spanning the min..max of the means, computed here from the pixels), and in
// the re-wrapped panel the re-wrapped bar's colour at (mean mod 2 pi) (the bar spanning
// -pi..pi); NaN cells black; the ranges printed (white pixels) under both bars.
TEST(Quicklook, ColourBarsFollowTheMaps) {
    testing::TempDir dir("quicklook_bars");
    const Scene s = scene(300, 500);
    const std::string png = dir / "q.png";
    write_quicklook(png, s.u.data(), s.lab.data(), s.H, s.W, s.W, 256);
    const QuicklookGrid g = quicklook_grid(s.H, s.W, 256);
    int w = 0, h = 0, bands = 0;
    const std::vector<uint8_t> rgb = read_png(png, w, h, bands);
    ASSERT_EQ(w, 3 * g.panel_cols + 2 * g.gap);
    ASSERT_EQ(h, g.panel_rows + g.bar_rows);
    auto colour = [&](int64_t r, int64_t c) {
        const uint8_t* p = &rgb[static_cast<size_t>((r * w + c) * 3)];
        return std::array<int, 3>{p[0], p[1], p[2]};
    };
    // Cell means from the pixels.
    const int64_t f = g.factor, pc = g.panel_cols;
    std::vector<double> mean(static_cast<size_t>(g.panel_rows * pc), std::nan(""));
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < g.panel_rows; ++i)
        for (int64_t j = 0; j < pc; ++j) {
            double sum = 0;
            int64_t n = 0;
            for (int64_t r = i * f; r < std::min(s.H, (i + 1) * f); ++r)
                for (int64_t c = j * f; c < std::min(s.W, (j + 1) * f); ++c)
                    if (std::isfinite(s.u[static_cast<size_t>(r * s.W + c)])) sum += s.u[static_cast<size_t>(r * s.W + c)], ++n;
            if (n == 0) continue;
            mean[static_cast<size_t>(i * pc + j)] = sum / static_cast<double>(n);
            lo = std::min(lo, sum / static_cast<double>(n));
            hi = std::max(hi, sum / static_cast<double>(n));
        }
    const int64_t bar = g.panel_rows + 3 + 4;  // a row in the middle of the bars
    auto near = [](const std::array<int, 3>& a, const std::array<int, 3>& b) {
        for (int k = 0; k < 3; ++k)
            if (std::abs(a[static_cast<size_t>(k)] - b[static_cast<size_t>(k)]) > 10) return false;
        return true;
    };
    const std::array<int, 3> black{0, 0, 0};
    int64_t checked = 0, nan_cells = 0;
    for (int64_t i = 0; i < g.panel_rows; ++i)
        for (int64_t j = 0; j < pc; ++j) {
            const double m = mean[static_cast<size_t>(i * pc + j)];
            if (std::isnan(m)) {
                ++nan_cells;
                EXPECT_EQ(colour(i, j), black);
                EXPECT_EQ(colour(i, g.panel_col0(1) + j), black);
                continue;
            }
            const auto at_u = static_cast<int64_t>(std::lround((m - lo) / (hi - lo) * static_cast<double>(pc - 1)));
            EXPECT_TRUE(near(colour(i, j), colour(bar, at_u))) << i << " " << j;
            const double wrapped = m - 2 * std::numbers::pi * std::floor((m + std::numbers::pi) / (2 * std::numbers::pi));
            const double t = (wrapped + std::numbers::pi) / (2 * std::numbers::pi);
            const auto at_w = static_cast<int64_t>(std::lround(t * static_cast<double>(pc - 1)));
            EXPECT_TRUE(near(colour(i, g.panel_col0(1) + j), colour(bar, g.panel_col0(1) + at_w))) << i << " " << j;
            ++checked;
        }
    EXPECT_GT(checked, 1000);
    EXPECT_GT(nan_cells, 10);
    // The bars' ends are the maps' ends: viridis dark purple to yellow.
    EXPECT_LT(colour(bar, 0)[1], 60);
    EXPECT_GT(colour(bar, pc - 1)[0], 200);
    // The ranges as text: white pixels under the left and right halves of the u bar and under
    // the re-wrapped bar; none in the panels.
    auto white_in = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        int64_t n = 0;
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c) n += colour(r, c) == std::array<int, 3>{255, 255, 255};
        return n;
    };
    const int64_t text = g.panel_rows + 14;
    EXPECT_GT(white_in(text, text + 7, 0, pc / 2), 10);
    EXPECT_GT(white_in(text, text + 7, pc / 2, pc), 10);
    EXPECT_GT(white_in(text, text + 7, g.panel_col0(1), g.panel_col0(1) + pc), 10);
    EXPECT_EQ(white_in(0, g.panel_rows, 0, w), 0);
}

TEST(Quicklook, WindowsMergeToTheSamePicture) {
    const Scene s = scene(211, 187);
    const QuicklookGrid g = quicklook_grid(s.H, s.W, 64);
    ASSERT_GT(g.factor, 1);
    const std::vector<QuicklookCell> whole =
        quicklook_cells(s.u.data(), s.lab.data(), Window{0, 0, s.H, s.W}, s.W, g);
    // Windows cut through cells (the rank grid does not know the factor).
    const std::vector<Window> windows = {{0, 0, 100, 90}, {0, 90, 100, 97}, {100, 0, 111, 31}, {100, 31, 111, 156}};
    std::vector<std::vector<QuicklookCell>> per_rank;
    for (const Window& w : windows)
        per_rank.push_back(
            quicklook_cells(s.u.data() + w.row0 * s.W + w.col0, s.lab.data() + w.row0 * s.W + w.col0, w, s.W, g));
    std::vector<QuicklookCell> merged;
    for (const auto& v : per_rank) merged.insert(merged.end(), v.begin(), v.end());
    EXPECT_EQ(render_quicklook(g, merged, true), render_quicklook(g, whole, true));
    testing::TempDir dir("quicklook2");
    write_quicklook_cells(dir / "m.png", g, per_rank);
    EXPECT_TRUE(std::filesystem::exists(dir / "m.png"));
}

// Labels stored 1 or 2 bytes wide (kernels/label_width.h) draw what their 4-byte values draw,
// through a window of a larger array.
TEST(Quicklook, NarrowLabelsDrawTheSamePicture) {
    Scene s = scene(211, 187);
    for (size_t k = 0; k < s.lab.size(); ++k)
        if (s.lab[k]) s.lab[k] = static_cast<uint32_t>(1 + (k * 7) % 300);  // up to 300: two bytes
    const QuicklookGrid g = quicklook_grid(s.H, s.W, 64);
    const Window w{20, 10, 150, 160};
    const int64_t o = w.row0 * s.W + w.col0;
    const auto want = render_quicklook(g, quicklook_cells(s.u.data() + o, s.lab.data() + o, w, s.W, g), true);
    for (int bytes : {1, 2}) {
        std::vector<unsigned char> narrow(s.lab.size() * static_cast<size_t>(bytes));
        for (size_t k = 0; k < s.lab.size(); ++k)
            set_label(narrow.data(), bytes, static_cast<int64_t>(k), bytes == 1 ? s.lab[k] % 256 : s.lab[k]);
        std::vector<uint32_t> expect = s.lab;
        if (bytes == 1)
            for (uint32_t& l : expect) l %= 256;
        const auto ref = render_quicklook(g, quicklook_cells(s.u.data() + o, expect.data() + o, w, s.W, g), true);
        const auto got = render_quicklook(
            g, quicklook_cells(s.u.data() + o, narrow.data() + o * bytes, w, s.W, g, bytes), true);
        EXPECT_EQ(got, ref) << bytes << " bytes";
        if (bytes == 2) {
            EXPECT_EQ(got, want);
        }
    }
}

TEST(Quicklook, SixteenBitPngAndErrors) {
    testing::TempDir dir("png16");
    std::vector<uint16_t> v(30 * 20);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i * 100);
    write_png(dir / "g.png", 30, 20, 1, 16, v.data());
    GDALAllRegister();
    GDALDatasetUniquePtr ds(GDALDataset::Open((dir / "g.png").c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
    ASSERT_TRUE(ds);
    EXPECT_EQ(ds->GetRasterBand(1)->GetRasterDataType(), GDT_UInt16);
    std::vector<uint16_t> back(v.size());
    ASSERT_EQ(ds->GetRasterBand(1)->RasterIO(GF_Read, 0, 0, 20, 30, back.data(), 20, 30, GDT_UInt16, 0, 0, nullptr),
              CE_None);
    EXPECT_EQ(back, v);
    EXPECT_THROW(write_png(dir / "missing/x.png", 30, 20, 1, 16, v.data()), InputError);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// `--quicklook x.jpg` would be PNG bytes under a JPEG name: refused in one line, before any work.
TEST(Quicklook, ANameThatIsNotPngIsRefused) {
    testing::TempDir dir("quicklook_name");
    ASSERT_EQ(testing::run_tessera("synth --case bowl --size 64x64 --seed 1 " + dir.path().string()).exit_code, 0);
    const std::string in = dir / "bowl_wrapped.tif", out = dir / "o.h5", jpg = dir / "q.jpg";
    const auto r = testing::run_tessera("unwrap -q --quicklook " + jpg + " " + in + " " + out);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(jpg + ": --quicklook writes a PNG"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_FALSE(std::filesystem::exists(jpg));
    EXPECT_EQ(testing::run_tessera("unwrap -q --quicklook " + (dir / "q.PNG") + " " + in + " " + out).exit_code, 0);
    EXPECT_TRUE(std::filesystem::exists(dir / "q.PNG"));
    // The run's picture: three 64-pixel panels, 4-pixel gaps, the bars under them.
    int w = 0, h = 0, bands = 0;
    read_png(dir / "q.PNG", w, h, bands);
    EXPECT_EQ(w, 3 * 64 + 2 * 4);
    EXPECT_EQ(h, 64 + quicklook_grid(64, 64).bar_rows);
}

}  // namespace
}  // namespace tessera
