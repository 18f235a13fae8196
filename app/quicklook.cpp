// Quicklook PNG (app/quicklook.h).
#include "app/quicklook.h"

#include "app/bitmap_font.h"
#include "io/png_writer.h"


#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/input_error.h"
#include "io/output_set.h"
#include "io/output_path.h"
#include "kernels/label_width.h"

namespace tessera {

namespace {


using RGB = std::array<uint8_t, 3>;

// Viridis sampled at 0, 1/8, ..., 1 (matplotlib), interpolated linearly.
constexpr std::array<RGB, 9> kViridis = {{{68, 1, 84},
                                          {71, 44, 122},
                                          {59, 81, 139},
                                          {44, 113, 142},
                                          {33, 144, 141},
                                          {39, 173, 129},
                                          {92, 200, 99},
                                          {170, 220, 50},
                                          {253, 231, 37}}};

// Categorical (Tableau 20 order): label L > 0 gets kPalette[(L - 1) % 20]; 0 is black.
constexpr std::array<RGB, 20> kPalette = {{{31, 119, 180},  {255, 127, 14},  {44, 160, 44},   {214, 39, 40},
                                           {148, 103, 189}, {140, 86, 75},   {227, 119, 194}, {127, 127, 127},
                                           {188, 189, 34},  {23, 190, 207},  {174, 199, 232}, {255, 187, 120},
                                           {152, 223, 138}, {255, 152, 150}, {197, 176, 213}, {196, 156, 148},
                                           {247, 182, 210}, {199, 199, 199}, {219, 219, 141}, {158, 218, 229}}};

// The hue wheel at full saturation, lightened a little so that no colour is near black (NaN).
RGB hue_wheel(double t) {
    const double h = 6.0 * (t - std::floor(t));
    const int i = std::min(static_cast<int>(h), 5);
    const double f = h - i;
    const double v = 235.0, lo = 40.0, up = lo + (v - lo) * f, down = v - (v - lo) * f;
    const double rgb[6][3] = {{v, up, lo}, {down, v, lo}, {lo, v, up}, {lo, down, v}, {up, lo, v}, {v, lo, down}};
    return {static_cast<uint8_t>(std::lround(rgb[i][0])), static_cast<uint8_t>(std::lround(rgb[i][1])),
            static_cast<uint8_t>(std::lround(rgb[i][2]))};
}

// "%.4g rad"; "none" when there is no finite value.
std::string radians(double v) {
    if (!std::isfinite(v)) return "none";
    char b[32];
    std::snprintf(b, sizeof b, "%.4g rad", v);
    return b;
}

RGB viridis(double t) {
    t = std::clamp(t, 0.0, 1.0) * 8.0;
    const int i = std::min(static_cast<int>(t), 7);
    const double f = t - i;
    RGB o;
    for (int k = 0; k < 3; ++k)
        o[static_cast<size_t>(k)] = static_cast<uint8_t>(std::lround(
            kViridis[static_cast<size_t>(i)][static_cast<size_t>(k)] * (1.0 - f) +
            kViridis[static_cast<size_t>(i + 1)][static_cast<size_t>(k)] * f));
    return o;
}


}  // namespace

std::array<uint8_t, 3> phase_colour(double t) { return viridis(t); }
std::array<uint8_t, 3> rewrapped_colour(double t) { return hue_wheel(t); }

QuicklookGrid quicklook_grid(int64_t rows, int64_t cols, int max_side) {
    if (rows < 1 || cols < 1) throw std::invalid_argument("quicklook: empty image");
    if (max_side < 64) throw std::invalid_argument("quicklook: max_side must be at least 64");
    QuicklookGrid g;
    g.rows = rows;
    g.cols = cols;
    const int64_t m = max_side, mr = m - g.bar_rows, mc = m - 2 * g.gap;  // room for the panels
    int64_t f = std::max<int64_t>({1, (rows + mr - 1) / mr, (3 * cols + mc - 1) / mc});
    for (;; ++f) {
        const int64_t pr = (rows + f - 1) / f, pc = (cols + f - 1) / f;
        if (pr <= mr && 3 * pc <= mc) break;
    }
    g.factor = f;
    g.panel_rows = (rows + f - 1) / f;
    g.panel_cols = (cols + f - 1) / f;
    return g;
}

std::vector<QuicklookCell> quicklook_cells(const float* u, const void* labels, const Window& own,
                                           int64_t stride, const QuicklookGrid& g, int label_bytes) {
    std::vector<QuicklookCell> out;
    if (own.rows <= 0 || own.cols <= 0) return out;
    const int64_t f = g.factor;
    const int64_t pi0 = own.row0 / f, pi1 = (own.row0 + own.rows - 1) / f;
    const int64_t pj0 = own.col0 / f, pj1 = (own.col0 + own.cols - 1) / f;
    const int64_t ni = pi1 - pi0 + 1, nj = pj1 - pj0 + 1;
    out.resize(static_cast<size_t>(ni * nj));
#pragma omp parallel for schedule(static) if (own.size() >= (int64_t{1} << 16))
    for (int64_t k = 0; k < ni * nj; ++k) {
        const int64_t pi = pi0 + k / nj, pj = pj0 + k % nj;
        QuicklookCell& cell = out[static_cast<size_t>(k)];
        cell.cell = pi * g.panel_cols + pj;
        const int64_t cr0 = pi * f, cr1 = std::min(cr0 + f, g.rows);
        const int64_t cc0 = pj * f, cc1 = std::min(cc0 + f, g.cols);
        const int64_t r0 = std::max(cr0, own.row0), r1 = std::min(cr1, own.row0 + own.rows);
        const int64_t c0 = std::max(cc0, own.col0), c1 = std::min(cc1, own.col0 + own.cols);
        double sum = 0;
        int64_t count = 0;
        for (int64_t r = r0; r < r1; ++r) {
            const float* row = u + (r - own.row0) * stride;
            for (int64_t c = c0; c < c1; ++c) {
                const float v = row[c - own.col0];
                if (std::isfinite(v)) {
                    sum += v;
                    ++count;
                }
            }
        }
        cell.sum = sum;
        cell.count = count;
        const int64_t sr = cr0 + (cr1 - cr0 - 1) / 2, sc = cc0 + (cc1 - cc0 - 1) / 2;
        if (labels != nullptr && own.contains(sr, sc)) {
            cell.has_label = 1;
            cell.label = label_at(labels, label_bytes, (sr - own.row0) * stride + (sc - own.col0));
        }
    }
    return out;
}

std::vector<uint8_t> render_quicklook(const QuicklookGrid& g, const std::vector<QuicklookCell>& cells,
                                      bool with_labels) {
    const int64_t n = g.cells();
    std::vector<double> sum(static_cast<size_t>(n), 0.0);
    std::vector<int64_t> count(static_cast<size_t>(n), 0);
    std::vector<uint32_t> label(static_cast<size_t>(n), 0);
    for (const QuicklookCell& c : cells) {
        if (c.cell < 0 || c.cell >= n) throw std::invalid_argument("quicklook: cell index out of range");
        sum[static_cast<size_t>(c.cell)] += c.sum;
        count[static_cast<size_t>(c.cell)] += c.count;
        if (c.has_label) label[static_cast<size_t>(c.cell)] = c.label;
    }
    std::vector<double> mean(static_cast<size_t>(n), std::numeric_limits<double>::quiet_NaN());
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t k = 0; k < n; ++k)
        if (count[static_cast<size_t>(k)] > 0) {
            const double m = sum[static_cast<size_t>(k)] / static_cast<double>(count[static_cast<size_t>(k)]);
            mean[static_cast<size_t>(k)] = m;
            lo = std::min(lo, m);
            hi = std::max(hi, m);
        }
    const int64_t W = g.width(with_labels), H = g.height();
    std::vector<uint8_t> rgb(static_cast<size_t>(W * H * 3), 0);
    auto put = [&](int64_t r, int64_t c, const RGB& v) {
        uint8_t* p = rgb.data() + (r * W + c) * 3;
        p[0] = v[0];
        p[1] = v[1];
        p[2] = v[2];
    };
    constexpr double pi = 3.14159265358979323846;
    const double span = hi > lo ? hi - lo : 0.0;
    const int64_t x_wrap = g.panel_col0(1), x_lab = g.panel_col0(2);
    for (int64_t r = 0; r < g.panel_rows; ++r) {
        for (int64_t c = 0; c < g.panel_cols; ++c) {
            const double m = mean[static_cast<size_t>(r * g.panel_cols + c)];
            if (std::isnan(m)) continue;  // black
            put(r, c, viridis(span > 0 ? (m - lo) / span : 0.5));
            put(r, x_wrap + c, hue_wheel((m + pi) / (2 * pi)));  // the wheel's period is 2 pi: u mod 2 pi
        }
        for (int64_t p = 1; p < g.panels(with_labels); ++p)
            for (int64_t c = 0; c < g.gap; ++c) put(r, g.panel_col0(static_cast<int>(p)) - g.gap + c, RGB{128, 128, 128});
        if (!with_labels) continue;
        for (int64_t c = 0; c < g.panel_cols; ++c) {
            const uint32_t l = label[static_cast<size_t>(r * g.panel_cols + c)];
            if (l != 0) put(r, x_lab + c, kPalette[(l - 1) % kPalette.size()]);
        }
    }
    // The colour bars: column c of a panel's bar shows t = c / (panel_cols - 1), and under it the
    // values of its ends in radians.
    const double last = static_cast<double>(std::max<int64_t>(g.panel_cols - 1, 1));
    for (int64_t r = g.bar_row0(); r < g.bar_row0() + 8; ++r)
        for (int64_t c = 0; c < g.panel_cols; ++c) {
            if (span > 0) put(r, c, viridis(static_cast<double>(c) / last));
            put(r, x_wrap + c, hue_wheel(static_cast<double>(c) / last * (1.0 - 1e-9)));  // -pi .. just below pi
        }
    const RGB white{255, 255, 255};
    constexpr int64_t kMargin = 3;  // right-aligned text stays clear of the next panel's
    const std::string u_lo = radians(lo), u_hi = radians(hi);
    draw_text(rgb.data(), W, H, g.text_row0(), 0, u_lo, white);
    if (span > 0)
        draw_text(rgb.data(), W, H, g.text_row0(),
                  std::max(g.panel_cols - text_width(u_hi) - kMargin, text_width(u_lo) + kGlyphAdvance), u_hi, white);
    draw_text(rgb.data(), W, H, g.text_row0(), x_wrap, "-pi", white);
    draw_text(rgb.data(), W, H, g.text_row0(), std::max(x_wrap + g.panel_cols - text_width("pi rad") - kMargin, x_wrap + 4 * kGlyphAdvance),
              "pi rad", white);
    return rgb;
}

void write_quicklook_cells(const std::string& png, const QuicklookGrid& g, const std::vector<QuicklookCell>& cells,
                           bool with_labels) {
    const std::vector<uint8_t> rgb = render_quicklook(g, cells, with_labels);
    write_png(png, g.height(), g.width(with_labels), 3, 8, rgb.data());
}

void write_quicklook_cells(const std::string& png, const QuicklookGrid& g,
                           const std::vector<std::vector<QuicklookCell>>& per_rank, bool with_labels) {
    std::vector<QuicklookCell> all;
    for (const auto& v : per_rank) all.insert(all.end(), v.begin(), v.end());
    write_quicklook_cells(png, g, all, with_labels);
}

void write_quicklook(const std::string& png, const float* u, const uint32_t* labels, int64_t rows, int64_t cols,
                     int64_t stride, int max_side) {
    const QuicklookGrid g = quicklook_grid(rows, cols, max_side);
    write_quicklook_cells(png, g, quicklook_cells(u, labels, Window{0, 0, rows, cols}, stride, g), labels != nullptr);
}

}  // namespace tessera
