#include "io/phase_source.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <vector>

#include "io/column_pieces.h"
#include "kernels/host_buffer.h"
#include "kernels/vector_memory.h"

namespace tessera {

namespace {

constexpr int64_t kRowBlock = 256;  // rows per coherence/mask read

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

// The valid phase's range, and the flags from the validity bytes (branch-free: the compiler's
// vectors; min and max are exact in any order).
void fold_valid(const RegionArrays& a, const uint8_t* valid, InputRanges& rg) {
    constexpr float inf = std::numeric_limits<float>::infinity();
    constexpr int64_t kBlock = 1 << 16;
    const int64_t n = a.buf.size(), blocks = (n + kBlock - 1) / kBlock;
    float lo = rg.lo, hi = rg.hi;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
        float l = inf, h = -inf;
        const int64_t e = std::min(n, (b + 1) * kBlock);
#pragma omp simd reduction(min : l) reduction(max : h)
        for (int64_t i = b * kBlock; i < e; ++i) {
            const bool ok = valid[i] != 0;
            a.flags[i] = ok ? 0 : kInvalid;
            l = std::min(l, ok ? a.phase[i] : inf), h = std::max(h, ok ? a.phase[i] : -inf);
        }
        lo = std::min(lo, l), hi = std::max(hi, h);
    }
    rg.lo = lo, rg.hi = hi;
}

// A raster of window w read kRowBlock rows at a time, the blocks on the host's threads for a
// large window (each thread with its own reader from make_read(): GDAL handles are not shared),
// cut into column pieces (on kPieceCols borders) where there are fewer row blocks than twice the
// threads (a chunk's few); fold(pixel index in a, values, count, the thread's ranges) per row
// of a block; the ranges merged into rg. The first failure (lowest piece) is rethrown.
template <class T, class MakeRead, class Fold>
void fold_in_blocks(const Window& w, MakeRead&& make_read, Fold&& fold, InputRanges& rg) {
    constexpr int64_t kPieceCols = 256;  // GeoTIFF's usual block width: few blocks read twice
    const int64_t blocks = (w.rows + kRowBlock - 1) / kRowBlock, nt = omp_get_max_threads();
    const bool parallel = w.size() >= (int64_t{1} << 22) && nt > 1;
    const ColumnPieces pieces(w, blocks, nt, kPieceCols, parallel);
    const int64_t parts = pieces.parts();
    const int64_t items = blocks * parts;
    const int threads = parallel ? static_cast<int>(std::min<int64_t>(items, nt)) : 1;
    std::mutex mu;
    int64_t failed_at = items;
    std::exception_ptr failure;
#pragma omp parallel num_threads(threads)
    {
        InputRanges mine;
        try {
            auto read = make_read();
            std::vector<T> buf(static_cast<size_t>(kRowBlock * (pieces.begin(1) + kPieceCols)));
#pragma omp for schedule(dynamic)
            for (int64_t k = 0; k < items; ++k) {
                const int64_t r = w.row0 + (k / parts) * kRowBlock, c0 = pieces.begin(k % parts), c1 = pieces.begin(k % parts + 1);
                const Window b{r, w.col0 + c0, std::min(kRowBlock, w.row0 + w.rows - r), c1 - c0};
                if (b.cols <= 0) continue;
                try {
                    buf.resize(static_cast<size_t>(std::max<int64_t>(static_cast<int64_t>(buf.size()), b.size())));
                    read(b, buf.data());
                    for (int64_t i = 0; i < b.rows; ++i)
                        fold((r - w.row0 + i) * w.cols + c0, buf.data() + i * b.cols, b.cols, mine);
                } catch (...) {
                    std::lock_guard<std::mutex> lock(mu);
                    if (k < failed_at) failed_at = k, failure = std::current_exception();
                }
            }
        } catch (...) {  // the reader could not be made: this thread's blocks fail
            std::lock_guard<std::mutex> lock(mu);
            if (!failure) failure = std::current_exception(), failed_at = -1;
        }
        std::lock_guard<std::mutex> lock(mu);
        rg.coh_lo = std::min(rg.coh_lo, mine.coh_lo), rg.coh_hi = std::max(rg.coh_hi, mine.coh_hi);
    }
    if (failure) std::rethrow_exception(failure);
}

// Band `band` of a GDAL raster: the phase and its validity, nothing else.
class RasterPhaseSource final : public PhaseSource {
public:
    RasterPhaseSource(const std::string& path, int band) : in_(path, band) {}
    const RasterInfo& info() const override { return in_.info(); }
    const std::string& name() const override { return in_.path(); }
    InputRanges fill(const RegionArrays& a, const RowsReady& ready) const override {
        HostBuffer<uint8_t> valid(static_cast<size_t>(a.buf.size()));  // a gigabyte at 32768²: first touched on threads
        in_.read_phase(a.buf, a.phase, valid.data(), a.buf.cols, ready);
        InputRanges rg;
        fold_valid(a, valid.data(), rg);
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
        // Rows are final only once the rasters are folded in.
        InputRanges rg = base_->fill(a, mask_.empty() && coherence_.empty() ? ready : RowsReady{});
        if (!mask_.empty())
            fold_in_blocks<uint8_t>(
                w,
                [&] {
                    return [&, m = RasterReader(mask_, mask_band_)](const Window& b, uint8_t* buf) { m.read_mask(b, buf, b.cols); };
                },
                [&](int64_t p, const uint8_t* m, int64_t n, InputRanges&) { fold_mask_row(a, p, m, n); },
                rg);
        if (!coherence_.empty())
            fold_in_blocks<float>(
                w,
                [&] {
                    return [&, c = RasterReader(coherence_, coherence_band_)](const Window& b, float* buf) {
                        c.read_float(b, buf, b.cols);
                    };
                },
                [&](int64_t p, const float* g, int64_t n, InputRanges& mine) {
                    fold_coherence_row(a, p, g, n, thr_, mine);
                },
                rg);
        return rg;
    }

private:
    std::unique_ptr<PhaseSource> base_;
    std::string coherence_, mask_;
    float thr_;
    int coherence_band_, mask_band_;
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
