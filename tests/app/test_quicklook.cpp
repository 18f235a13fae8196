// Quicklook PNG (app/quicklook.h): written, the right size, readable by GDAL, NaN and
// label 0 black, and the distributed path (cells per window, merged) equal to one window.
#include <gtest/gtest.h>

#include <gdal_priv.h>

#include <algorithm>
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
        EXPECT_LE(g.panel_rows, 1024);
        EXPECT_LE(g.width(), 1024);
        EXPECT_EQ(g.panel_rows, (H + g.factor - 1) / g.factor);
        // f is the smallest that fits
        if (g.factor > 1) {
            const int64_t f = g.factor - 1;
            EXPECT_TRUE((H + f - 1) / f > 1024 || 2 * ((W + f - 1) / f) + g.gap > 1024) << H << "x" << W;
        }
    }
    EXPECT_EQ(quicklook_grid(8192, 8192).factor, 17);  // 2 * 482 + 4 <= 1024
    EXPECT_THROW(quicklook_grid(0, 5), std::invalid_argument);
    EXPECT_THROW(quicklook_grid(5, 5, 8), std::invalid_argument);
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
    EXPECT_EQ(h, g.panel_rows);
    EXPECT_EQ(w, 2 * g.panel_cols + g.gap);
    EXPECT_LE(w, 256);
    EXPECT_LE(h, 256);
    auto px = [&](int r, int c, int k) { return rgb[static_cast<size_t>((r * w + c) * 3 + k)]; };
    // Top-left: NaN phase and label 0 -> black in both panels.
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(px(0, 0, k), 0);
        EXPECT_EQ(px(0, static_cast<int>(g.panel_cols + g.gap), k), 0);
    }
    // Gap grey; valid phase not black; labels 1 and 2 different colours.
    EXPECT_EQ(px(h - 1, static_cast<int>(g.panel_cols), 0), 128);
    EXPECT_GT(px(h - 1, 0, 0) + px(h - 1, 0, 1) + px(h - 1, 0, 2), 0);
    const int l1 = static_cast<int>(g.panel_cols + g.gap + 2), l2 = w - 2;
    EXPECT_NE(px(h - 1, l1, 0) * 65536 + px(h - 1, l1, 1) * 256 + px(h - 1, l1, 2),
              px(h - 1, l2, 0) * 65536 + px(h - 1, l2, 1) * 256 + px(h - 1, l2, 2));
    // Viridis ends: the lowest phase (top right) dark purple, the highest (bottom left) yellow.
    EXPECT_LT(px(0, static_cast<int>(g.panel_cols) - 1, 1), 60);
    EXPECT_GT(px(h - 1, 0, 0), 200);
    // Without labels: one panel.
    const std::string one = dir / "one.png";
    write_quicklook(one, s.u.data(), nullptr, s.H, s.W, s.W, 256);
    read_png(one, w, h, bands);
    EXPECT_EQ(w, g.panel_cols);
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
}

}  // namespace
}  // namespace tessera
