#include "pipeline/noise_census.h"

#include <algorithm>
#include <vector>

namespace tessera {

namespace {

// Images taller than this are sampled: a census of every row would read the input once more,
// which is most of a GPU run's time at these sizes (section 2.2).
constexpr int64_t kCensusEveryRow = 8192;
constexpr int64_t kSampleRows = 64, kSampleStride = 1024;
// Rows read at a time when every row counts: bands of about 8 M pixels, which the GDAL source
// reads on the host's threads (io/phase_source.cpp).
constexpr int64_t kBandPixels = int64_t{1} << 23;

}  // namespace

ResidueCensus residue_census(const PhaseSource& in, const Window& own) {
    const int64_t H = in.info().rows, W = in.info().cols;
    const bool sampled = H > kCensusEveryRow;
    const int64_t band = std::clamp<int64_t>(kBandPixels / std::max<int64_t>(1, own.cols), 64, 4096);
    const int64_t step = sampled ? kSampleStride : band, rows = sampled ? kSampleRows : band;
    ResidueCensus n;
    std::vector<float> phase;
    std::vector<uint8_t> flags;
    const int64_t own_end = own.row0 + own.rows;
    for (int64_t b0 = own.row0 / step * step; b0 < own_end; b0 += step) {
        const int64_t r0 = std::max(b0, own.row0), r1 = std::min({b0 + rows, own_end, H - 1});
        if (r1 <= r0) continue;
        const Window at{r0, own.col0, r1 - r0, own.cols};
        const Window rd{r0, own.col0, std::min(H, r1 + 1) - r0, std::min(W, own.col0 + own.cols + 1) - own.col0};
        phase.resize(static_cast<size_t>(rd.size()));
        flags.resize(static_cast<size_t>(rd.size()));
        const RegionArrays t{H, W, rd, phase.data(), flags.data(), nullptr, nullptr};
        in.fill(t, {});
        n += count_residue_plaquettes(t, at);
    }
    return n;
}

int auto_guide_window(const ResidueCensus& image) {
    return 20 * image.residues > image.plaquettes ? kAutoGuideWindow : 0;
}

}  // namespace tessera
