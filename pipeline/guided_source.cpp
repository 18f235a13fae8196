#include "pipeline/guided_source.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/phase_guide.h"

namespace tessera {

namespace {

// Rows a band reads at a time: the guide's halo is read once a band, and a band's arrays stay small.
constexpr int64_t kBandRows = 256;

void widen(InputRanges& to, const InputRanges& from) {
    to.lo = std::min(to.lo, from.lo), to.hi = std::max(to.hi, from.hi);
    to.coh_lo = std::min(to.coh_lo, from.coh_lo), to.coh_hi = std::max(to.coh_hi, from.coh_hi);
}

}  // namespace

InputRanges GuidedSource::read(const RegionArrays& t) const {
    std::lock_guard<std::mutex> lock(reading_);
    return raw_.fill(t, {});
}

InputRanges GuidedSource::fill(const RegionArrays& a, const RowsReady&) const {
    InputRanges rg;
    const int64_t H = a.H, W = a.W, h = half_;
    std::vector<float> phase, guide;
    std::vector<uint8_t> flags;
    for (int64_t b0 = a.buf.row0; b0 < a.buf.row0 + a.buf.rows; b0 += kBandRows) {
        const Window out{b0, a.buf.col0, std::min(kBandRows, a.buf.row0 + a.buf.rows - b0), a.buf.cols};
        const int64_t r0 = std::max<int64_t>(0, out.row0 - h), c0 = std::max<int64_t>(0, out.col0 - h);
        const Window in{r0, c0, std::min(H, out.row0 + out.rows + h) - r0, std::min(W, out.col0 + out.cols + h) - c0};
        phase.resize(static_cast<size_t>(in.size()));
        flags.resize(static_cast<size_t>(in.size()));
        guide.resize(static_cast<size_t>(out.size()));
        const RegionArrays t{H, W, in, phase.data(), flags.data(), nullptr, nullptr};
        widen(rg, read(t));
        guide_phase(phase.data(), flags.data(), in, out, half_, guide.data());
        for (int64_t i = 0; i < out.rows; ++i) {
            std::copy_n(guide.data() + i * out.cols, out.cols, a.phase + a.index(out.row0 + i, out.col0));
            std::copy_n(flags.data() + t.index(out.row0 + i, out.col0), out.cols, a.flags + a.index(out.row0 + i, out.col0));
        }
    }
    return rg;
}

void GuidedSource::project(const RegionArrays& a, const Window& w) const {
    std::vector<float> phase;
    std::vector<uint8_t> flags;
    for (int64_t b0 = w.row0; b0 < w.row0 + w.rows; b0 += kBandRows) {
        const Window band{b0, w.col0, std::min(kBandRows, w.row0 + w.rows - b0), w.cols};
        phase.resize(static_cast<size_t>(band.size()));
        flags.resize(static_cast<size_t>(band.size()));
        const RegionArrays t{a.H, a.W, band, phase.data(), flags.data(), nullptr, nullptr};
        read(t);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < band.rows; ++i)
            for (int64_t j = 0; j < band.cols; ++j) {
                const int64_t at = a.index(band.row0 + i, band.col0 + j);
                const float u = a.phase[at];
                if (!std::isfinite(u)) continue;
                const float phi = phase[static_cast<size_t>(i * band.cols + j)];
                const int32_t k = guide_cycles(phi, u);
                a.phase[at] = phi + kTwoPiF * static_cast<float>(k);  // section 4's formula
                if (a.cycles) a.cycles[at] = k;
            }
    }
}

float GuidedSource::project_one(float u, int64_t r, int64_t c) const {
    float phi = 0.0f;
    uint8_t f = 0;
    const RegionArrays t{info().rows, info().cols, Window{r, c, 1, 1}, &phi, &f, nullptr, nullptr};
    read(t);
    return phi + kTwoPiF * static_cast<float>(guide_cycles(phi, u));
}

}  // namespace tessera
