// Where a run's input comes from (docs/ARCHITECTURE.md section 7): a phase source fills any
// window of a region's arrays, folding the inputs into the wrapped phase (0 where invalid) and
// the flags (kInvalid: nodata, NaN/Inf, complex 0, mask 0, coherence 0 or NaN; kLowCoherence:
// below the threshold). A GDAL raster (and its coherence and mask rasters), or arrays in memory
// (a demodulated hologram, the Python API, tests): the same folding, the same bits.
#pragma once
#include <complex>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "io/raster_reader.h"
#include "kernels/region.h"
#include "kernels/types.h"

namespace tessera {

// What a fill saw, for the checks of what the inputs claim to be (section 7): the range of the
// valid phase values and of the finite coherence values.
struct InputRanges {
    float lo = std::numeric_limits<float>::infinity(), hi = -std::numeric_limits<float>::infinity();
    float coh_lo = std::numeric_limits<float>::infinity(), coh_hi = -std::numeric_limits<float>::infinity();
};

class PhaseSource {
public:
    virtual ~PhaseSource() = default;
    // Size and georeferencing of the phase.
    virtual const RasterInfo& info() const = 0;
    // The name errors give for the phase (a path, or what the array is).
    virtual const std::string& name() const = 0;
    // Fills a.phase and a.flags over a.buf; reports rows to `ready` as they become final
    // (kernels/region.h), where nothing changes them afterwards.
    virtual InputRanges fill(const RegionArrays& a, const RowsReady& ready) const = 0;
    // The same with landed(thread, piece) called on the filling thread as each piece of a.buf
    // (buffer-relative) is filled, before its rows go to `ready`, each pixel in one piece: the
    // coherence and mask are folded into the phase's pieces while those are in cache. Nothing
    // (and nothing filled) from a source that is not read in pieces.
    virtual std::optional<InputRanges> fill_pieces(const RegionArrays&, const RowsReady&, const PieceLanded&) const {
        return std::nullopt;
    }
};

// Band `band` of a GDAL raster, with optional coherence and mask rasters of the same size
// (the caller checks the sizes; their bands: the caller's choice, io/raster_reader.h
// auxiliary_band) and the --min-coherence threshold.
std::unique_ptr<PhaseSource> gdal_phase_source(const std::string& path, int band, const std::string& coherence,
                                               const std::string& mask, float min_coherence, int coherence_band = 1,
                                               int mask_band = 1);

// `base` with coherence and mask rasters (paths; empty: none; bands 1-based) folded in after it.
std::unique_ptr<PhaseSource> with_coherence_and_mask(std::unique_ptr<PhaseSource> base, const std::string& coherence,
                                                     const std::string& mask, float min_coherence,
                                                     int coherence_band = 1, int mask_band = 1);

// Arrays in memory, row-major H x W, exactly one of: a wrapped phase (float32 or float64,
// NaN/Inf or `nodata` invalid) or a complex interferogram (complex64 or complex128; phase =
// arg, 0 or non-finite or a real part equal to `nodata` invalid), each read as the GDAL source
// reads a band of that type; optional coherence and mask (nonzero = valid). They must outlive
// the source.
struct MemoryInput {
    int64_t H = 0, W = 0;
    std::span<const float> phase;
    std::span<const double> phase64;
    std::span<const std::complex<float>> ifg;
    std::span<const std::complex<double>> ifg64;
    std::optional<double> nodata;  // the phase's nodata value, as a raster band's
    std::span<const float> coherence;
    std::span<const uint8_t> mask;
    float min_coherence = 0.0f;
    RasterInfo info;  // rows/cols are set from H, W; georeferencing if any
    std::string name = "(array)";
};
std::unique_ptr<PhaseSource> memory_phase_source(MemoryInput in);

}  // namespace tessera
