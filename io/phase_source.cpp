#include "io/phase_source.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include "kernels/ab_switch.h"
#include "kernels/lap.h"
#include "kernels/vector_memory.h"

namespace tessera {

namespace {

// Coherence g at pixel p of a: zero or NaN is masked, as SNAPHU and dolphin do; below thr is
// low coherence.
inline void mark_invalid(const RegionArrays& a, int64_t p) {
    a.flags[p] |= kInvalid;
    a.phase[p] = 0.0f;
}

// The same for n pixels from p, their coherence g[0, n): branch-free, the range in locals (the
// compiler's vectors; min and max are exact in any order).
inline void fold_coherence_row(const RegionArrays& a, int64_t p, const float* g, int64_t n, float thr, InputRanges& rg) {
    constexpr float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
    float lo = rg.coh_lo, hi = rg.coh_hi;
    uint8_t* f = a.flags + p;
    float* ph = a.phase + p;
#pragma omp simd reduction(min : lo) reduction(max : hi)
    for (int64_t j = 0; j < n; ++j) {
        const float v = g[j];
        const bool finite = std::fabs(v) <= big;  // false for NaN and Inf
        lo = std::min(lo, finite ? v : inf), hi = std::max(hi, finite ? v : -inf);
        const bool bad = !(v > 0.0f), low = !bad && v < thr;
        f[j] = static_cast<uint8_t>(f[j] | (bad ? kInvalid : 0) | (low ? kLowCoherence : 0));
        ph[j] = bad ? 0.0f : ph[j];
    }
    rg.coh_lo = lo, rg.coh_hi = hi;
}

inline void fold_coherence(const RegionArrays& a, int64_t p, float g, float thr, InputRanges& rg) {
    fold_coherence_row(a, p, &g, 1, thr, rg);
}

// A mask's n values from pixel p: zero is invalid.
inline void fold_mask_row(const RegionArrays& a, int64_t p, const uint8_t* m, int64_t n) {
    uint8_t* f = a.flags + p;
    float* ph = a.phase + p;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
        f[j] = static_cast<uint8_t>(f[j] | (m[j] ? 0 : kInvalid));
        ph[j] = m[j] ? ph[j] : 0.0f;
    }
}

// The valid phase's range over n pixels from p, and their flags from the validity bytes v (which
// may be the flags themselves: each byte read before it is written). Branch-free: the compiler's
// vectors; min and max are exact in any order.
inline void fold_valid_row(const RegionArrays& a, int64_t p, const uint8_t* v, int64_t n, InputRanges& rg) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    float l = rg.lo, h = rg.hi;
    uint8_t* f = a.flags + p;
    const float* ph = a.phase + p;
#pragma omp simd reduction(min : l) reduction(max : h)
    for (int64_t j = 0; j < n; ++j) {
        const bool ok = v[j] != 0;
        f[j] = ok ? 0 : kInvalid;
        l = std::min(l, ok ? ph[j] : inf), h = std::max(h, ok ? ph[j] : -inf);
    }
    rg.lo = l, rg.hi = h;
}

void fold_valid(const RegionArrays& a, const uint8_t* valid, InputRanges& rg) {
    constexpr int64_t kBlock = 1 << 16;
    const int64_t n = a.buf.size(), blocks = (n + kBlock - 1) / kBlock;
    float lo = rg.lo, hi = rg.hi;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
        InputRanges mine;
        const int64_t i = b * kBlock;
        fold_valid_row(a, i, valid + i, std::min(n, i + kBlock) - i, mine);
        lo = std::min(lo, mine.lo), hi = std::max(hi, mine.hi);
    }
    rg.lo = lo, rg.hi = hi;
}

// Ranges kept per reading thread (RasterReader's pieces come on the host's threads), merged at the end.
class ThreadRanges {
public:
    ThreadRanges() : per_(static_cast<size_t>(omp_get_max_threads())) {}
    InputRanges& operator[](int t) { return per_[static_cast<size_t>(t)].r; }
    void merge_into(InputRanges& rg) const {
        for (const Slot& s : per_) {
            rg.lo = std::min(rg.lo, s.r.lo), rg.hi = std::max(rg.hi, s.r.hi);
            rg.coh_lo = std::min(rg.coh_lo, s.r.coh_lo), rg.coh_hi = std::max(rg.coh_hi, s.r.coh_hi);
        }
    }

private:
    struct alignas(64) Slot {
        InputRanges r;
    };
    std::vector<Slot> per_;
};

// Band `band` of a GDAL raster: the phase and its validity, nothing else.
class RasterPhaseSource final : public PhaseSource {
public:
    RasterPhaseSource(const std::string& path, int band) : in_(path, band) {}
    const RasterInfo& info() const override { return in_.info(); }
    const std::string& name() const override { return in_.path(); }
    InputRanges fill(const RegionArrays& a, const RowsReady& ready) const override { return *fill_pieces(a, ready, {}); }
    std::optional<InputRanges> fill_pieces(const RegionArrays& a, const RowsReady& ready, const PieceLanded& landed) const override {
        // The validity bytes land in the flags, made flag bits piece by piece while in cache.
        ThreadRanges mine;
        in_.read_phase(a.buf, a.phase, a.flags, a.buf.cols, ready, [&](int t, int64_t r, int64_t c, int64_t n) {
            const int64_t p = r * a.buf.cols + c;
            fold_valid_row(a, p, a.flags + p, n, mine[t]);
        }, landed);
        InputRanges rg;
        mine.merge_into(rg);
        return rg;
    }

private:
    RasterReader in_;
};

// Another source with coherence and mask rasters folded in after it.
class WithRasters final : public PhaseSource {
public:
    WithRasters(std::unique_ptr<PhaseSource> base, const std::string& coherence, const std::string& mask,
                float min_coherence, int coherence_band, int mask_band)
        : base_(std::move(base)),
          coherence_(coherence),
          mask_(mask),
          thr_(min_coherence),
          coherence_band_(coherence_band),
          mask_band_(mask_band) {}
    const RasterInfo& info() const override { return base_->info(); }
    const std::string& name() const override { return base_->name(); }

    InputRanges fill(const RegionArrays& a, const RowsReady& ready) const override {
        const Window& w = a.buf;
        // The readers, and the datasets their threads open, kept from fill to fill: a chunked run
        // opened and closed the coherence on every thread for each chunk (issue 16).
        {
            std::lock_guard<std::mutex> lock(readers_mu_);
            if (!mask_.empty() && !mask_reader_) mask_reader_.emplace(mask_, mask_band_);
            if (!coherence_.empty() && !coherence_reader_) coherence_reader_.emplace(coherence_, coherence_band_);
        }
        const std::optional<RasterReader>&mask = mask_reader_, &coherence = coherence_reader_;
        ThreadRanges mine;
        auto fold_mask = [&](int, int64_t r, int64_t c, const uint8_t* m, int64_t n) { fold_mask_row(a, r * w.cols + c, m, n); };
        auto fold_coherence = [&](int t, int64_t r, int64_t c, const float* g, int64_t n) {
            fold_coherence_row(a, r * w.cols + c, g, n, thr_, mine[t]);
        };
        // Each of the phase's pieces as it lands: the mask's and coherence's same pixels read and
        // folded on that thread while the piece is in cache; its rows final after that. Only where
        // their blocks are the phase's: a phase tile's rows of a raster in strips would read each
        // strip whole for a tile's width of it.
        static const bool apart = switch_is("TESSERA_READ_TOGETHER", "0");  // A/B studies
        const RasterInfo& ph = base_->info();
        auto same_blocks = [&](const std::optional<RasterReader>& r) {
            return !r || (r->info().block_rows == ph.block_rows && r->info().block_cols == ph.block_cols);
        };
        Lap lap;
        std::optional<InputRanges> rg;
        if (!apart && same_blocks(mask) && same_blocks(coherence))
            rg = base_->fill_pieces(a, ready, [&](int t, const Window& p) {
                const Window at{w.row0 + p.row0, w.col0 + p.col0, p.rows, p.cols};
                if (mask) mask->visit_mask_here(at, t, [&](int, int64_t r, int64_t c, const uint8_t* m, int64_t n) {
                    fold_mask(t, p.row0 + r, p.col0 + c, m, n);
                });
                if (coherence) coherence->visit_float_here(at, t, [&](int, int64_t r, int64_t c, const float* g, int64_t n) {
                    fold_coherence(t, p.row0 + r, p.col0 + c, g, n);
                });
            });
        if (rg) {
            if (trace_on()) std::fprintf(stderr, "tessera: fill: the phase, mask and coherence in pieces %.1f ms\n", lap.next_ms());
        } else {  // the phase first, then each raster over the window; rows final once all is folded
            rg = base_->fill(a, mask || coherence ? RowsReady{} : ready);
            const double phase_ms = lap.next_ms();
            if (mask) mask->visit_mask(w, fold_mask);
            if (coherence) coherence->visit_float(w, fold_coherence);
            if (trace_on()) std::fprintf(stderr, "tessera: fill: the phase %.1f ms, then mask and coherence %.1f ms\n", phase_ms, lap.next_ms());
        }
        mine.merge_into(*rg);
        return *rg;
    }

private:
    std::unique_ptr<PhaseSource> base_;
    std::string coherence_, mask_;
    float thr_;
    int coherence_band_, mask_band_;
    mutable std::mutex readers_mu_;
    mutable std::optional<RasterReader> mask_reader_, coherence_reader_;  // made by the first fill
};

class MemoryPhaseSource final : public PhaseSource {
public:
    explicit MemoryPhaseSource(MemoryInput in) : in_(std::move(in)) {
        in_.info.rows = in_.H, in_.info.cols = in_.W;
        in_.info.is_complex = !in_.ifg.empty() || !in_.ifg64.empty();
        in_.info.data_type = !in_.ifg.empty() ? "CFloat32" : !in_.ifg64.empty() ? "CFloat64" : !in_.phase64.empty() ? "Float64" : "Float32";
        in_.info.band_count = 1;
        in_.info.nodata = in_.nodata;
        nodata_finite_ = in_.nodata && std::isfinite(*in_.nodata);
        nodata_ = nodata_finite_ ? *in_.nodata : 0.0;
    }
    const RasterInfo& info() const override { return in_.info; }
    const std::string& name() const override { return in_.name; }

    InputRanges fill(const RegionArrays& a, const RowsReady&) const override {
        const Window& w = a.buf;
        UntouchedVector<uint8_t> valid(static_cast<size_t>(w.size()));  // written whole on the threads below
#pragma omp parallel for schedule(static)
        for (int64_t r = w.row0; r < w.row0 + w.rows; ++r)
            for (int64_t c = w.col0; c < w.col0 + w.cols; ++c) {
                const int64_t p = a.index(r, c);
                float ph = 0.0f;
                const bool ok = read(static_cast<size_t>(r * in_.W + c), ph);
                a.phase[p] = ok ? ph : 0.0f;
                valid[static_cast<size_t>(p)] = ok;
            }
        InputRanges rg;
        fold_valid(a, valid.data(), rg);
        for (int64_t r = w.row0; r < w.row0 + w.rows; ++r)
            for (int64_t c = w.col0; c < w.col0 + w.cols; ++c) {
                const size_t s = static_cast<size_t>(r * in_.W + c);
                const int64_t p = a.index(r, c);
                if (!in_.mask.empty() && !in_.mask[s]) mark_invalid(a, p);
                if (!in_.coherence.empty()) {
                    const float g = in_.coherence[s];
                    fold_coherence(a, p, std::isfinite(g) ? g : 0.0f, in_.min_coherence, rg);  // NaN reads as 0
                }
            }
        return rg;
    }

private:
    // Pixel s's phase and whether it is valid, as RasterReader::read_phase reads a band of the
    // array's type: float32 compared with nodata in float, float64 in double then narrowed,
    // complex64 as atan2f, complex128 as atan2 in double then narrowed.
    bool read(size_t s, float& ph) const {
        if (!in_.ifg.empty() || !in_.ifg64.empty()) {
            const bool wide = !in_.ifg64.empty();
            const double re = wide ? in_.ifg64[s].real() : in_.ifg[s].real();
            const double im = wide ? in_.ifg64[s].imag() : in_.ifg[s].imag();
            if (!std::isfinite(re) || !std::isfinite(im) || (re == 0.0 && im == 0.0) || (nodata_finite_ && re == nodata_))
                return false;
            ph = wide ? static_cast<float>(std::atan2(im, re)) : std::atan2(static_cast<float>(im), static_cast<float>(re));
            return true;
        }
        if (!in_.phase64.empty()) {
            const double v = in_.phase64[s];
            if (!std::isfinite(v) || (nodata_finite_ && v == nodata_)) return false;
            ph = static_cast<float>(v);
            return true;
        }
        ph = in_.phase[s];
        return std::isfinite(ph) && !(nodata_finite_ && ph == static_cast<float>(nodata_));
    }

    MemoryInput in_;
    bool nodata_finite_ = false;  // a NaN/Inf nodata is covered by the NaN/Inf rule
    double nodata_ = 0.0;
};

}  // namespace

std::unique_ptr<PhaseSource> gdal_phase_source(const std::string& path, int band, const std::string& coherence,
                                               const std::string& mask, float min_coherence, int coherence_band,
                                               int mask_band) {
    return with_coherence_and_mask(std::make_unique<RasterPhaseSource>(path, band), coherence, mask, min_coherence,
                                   coherence_band, mask_band);
}

std::unique_ptr<PhaseSource> with_coherence_and_mask(std::unique_ptr<PhaseSource> base, const std::string& coherence,
                                                     const std::string& mask, float min_coherence,
                                                     int coherence_band, int mask_band) {
    if (coherence.empty() && mask.empty()) return base;
    return std::make_unique<WithRasters>(std::move(base), coherence, mask, min_coherence, coherence_band, mask_band);
}

std::unique_ptr<PhaseSource> memory_phase_source(MemoryInput in) {
    return std::make_unique<MemoryPhaseSource>(std::move(in));
}

}  // namespace tessera
