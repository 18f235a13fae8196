// A noisy phase unwrapped through its guide (docs/ARCHITECTURE.md section 2.1, --guide-window):
// the run reads the guide in the phase's place, and each result window is taken back to the
// phase itself, pixel by pixel, before it is written.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>

#include "io/phase_source.h"

namespace tessera {

class GuidedSource final : public PhaseSource {
public:
    // `raw` must outlive this; `window`: the guide's side N (odd, >= 3).
    GuidedSource(const PhaseSource& raw, int window) : raw_(raw), half_(window / 2) {}
    const RasterInfo& info() const override { return raw_.info(); }
    const std::string& name() const override { return raw_.name(); }
    // The guide over a.buf (the phase read half a window beyond it, where the image goes on) and
    // the phase's own flags; the ranges are the phase's.
    InputRanges fill(const RegionArrays& a, const RowsReady& ready) const override;
    // a.phase over w holds the guide's unwrapped u: each finite u becomes phi + 2pi k with k the
    // cycle that brings the phase phi nearest it (kernels/phase_guide.h); a.cycles, if any, k.
    // The phase is read again.
    void project(const RegionArrays& a, const Window& w) const;
    // The same for one pixel whose guide's unwrapped value is u.
    float project_one(float u, int64_t r, int64_t c) const;

private:
    InputRanges read(const RegionArrays& t) const;  // raw_.fill, one at a time

    const PhaseSource& raw_;
    int half_;
    // A streamed run takes a result back (reading the phase) in its writer thread while the next
    // chunk is read: a GDAL source is not read from two threads at once.
    mutable std::mutex reading_;
};

}  // namespace tessera
