#include "pipeline/noise_census.h"

#include <algorithm>
#include <vector>

namespace tessera {

namespace {

// Images taller than this are sampled: a census of every row would read the input once more,
// which is most of a GPU run's time at these sizes (section 2.2).
constexpr int64_t kCensusEveryRow = 8192;
// Bands of 512 rows (whole GeoTIFF tiles of 256 or 512) every 8192: one sixteenth of the rows, a
// band of 8192 columns or more read on the host's threads; one thirty-second above 2^31 pixels.
// Few large reads: each read opens the raster again on every thread (a VRT mosaic's 64 sources).
constexpr int64_t kSampleRows = 512, kSampleStride = 8192, kSparseAbove = int64_t{1} << 31;
// Rows read at a time when every row counts: bands of about 8 M pixels, which the GDAL source
// reads on the host's threads (io/phase_source.cpp).
constexpr int64_t kBandPixels = int64_t{1} << 23;

// fn(at): the census's plaquette rows of `own` (an image of H rows), in bands.
template <class Fn>
void for_each_band(const Window& own, int64_t H, int64_t W, Fn&& fn) {
    const bool sampled = H > kCensusEveryRow;
    const int64_t band = std::clamp<int64_t>(kBandPixels / std::max<int64_t>(1, own.cols), 64, 4096);
    const int64_t stride = H * W > kSparseAbove ? 2 * kSampleStride : kSampleStride;
    const int64_t step = sampled ? stride : band, rows = sampled ? kSampleRows : band;
    const int64_t own_end = own.row0 + own.rows;
    for (int64_t b0 = own.row0 / step * step; b0 < own_end; b0 += step) {
        const int64_t r0 = std::max(b0, own.row0), r1 = std::min({b0 + rows, own_end, H - 1});
        if (r1 > r0) fn(Window{r0, own.col0, r1 - r0, own.cols});
    }
}

}  // namespace

ResidueCensus residue_census(const PhaseSource& in, const Window& own) {
    const int64_t H = in.info().rows, W = in.info().cols;
    ResidueCensus n;
    std::vector<float> phase;
    std::vector<uint8_t> flags;
    for_each_band(own, H, W, [&](const Window& at) {
        const Window rd{at.row0, at.col0, std::min(H, at.row0 + at.rows + 1) - at.row0,
                        std::min(W, at.col0 + at.cols + 1) - at.col0};
        phase.resize(static_cast<size_t>(rd.size()));
        flags.resize(static_cast<size_t>(rd.size()));
        const RegionArrays t{H, W, rd, phase.data(), flags.data(), nullptr, nullptr};
        in.fill(t, {});
        n += count_residue_plaquettes(t, at);
    });
    return n;
}

ResidueCensus residue_census(const RegionArrays& a, const Window& own) {
    ResidueCensus n;
    for_each_band(own, a.H, a.W, [&](const Window& at) { n += count_residue_plaquettes(a, at); });
    return n;
}

int64_t census_rows(int64_t H, int64_t W) {
    int64_t n = 0;
    for_each_band(Window{0, 0, H, W}, H, W, [&](const Window& at) { n += at.rows; });
    return n;
}

int auto_guide_window(const ResidueCensus& image) {
    return 20 * image.residues > image.plaquettes ? kAutoGuideWindow : 0;
}

}  // namespace tessera
