// Off-axis hologram demodulation (issue items 1 and 4): real intensity image ->
// complex object field -> wrapped phase. CPU backend: FFTW single precision.
//
//   1. forward 2-D FFT of the intensity (real-to-complex: the half spectrum with
//      column frequency >= 0; the other half is its complex conjugate mirror),
//   2. the +1 order (carrier) peak: the largest |F| outside a DC exclusion radius,
//      or given by the user,
//   3. sideband filter: a disc of radius `filter_radius` around the carrier, flat
//      (circular) or Hann-tapered, moved to the centre of the spectrum (integer shift),
//   4. inverse 2-D FFT (scaled by 1/(rows*cols)): the complex field,
//   5. optional division by the field of a reference hologram (recorded without the
//      sample) to remove the system's aberrations and the residual carrier tilt,
//   6. phase = arg, in [-pi, pi).
//
// Coordinates of the spectrum are "FFT-shifted" (numpy.fft.fftshift): the zero
// frequency is at (rows/2, cols/2) (integer division), row r is the row frequency
// (r - rows/2)/rows cycles per pixel, column c the column frequency (c - cols/2)/cols.
// Radii are in bins of this centred spectrum (Euclidean over (row, col) offsets).
//
// Which order is "+1": automatic detection looks at the right half of the centred
// spectrum (column frequency > 0; on the centre column, row frequency >= 0). For an
// intensity I = |R + O|^2 with a reference R = exp(-i 2 pi (fx c + fy r)), fx > 0, that
// peak holds R* O, i.e. the object phase itself. If a set-up puts the object's order on
// the other side (the phase comes out negated), pass `carrier` = the mirrored peak,
// ((rows - r) mod rows, (cols - c) mod cols) for even sizes: any bin can be selected,
// the left half is read through the conjugate symmetry of a real image's spectrum.
//
// The carrier is shifted by a whole bin, so a carrier between bins leaves a tilt of at
// most half a bin (< pi across the frame) in the phase: the reference division removes
// it, as does a plane fit (`tessera background`) or unwrapping followed by one.
//
// Determinism (batch == one by one): plans are made with FFTW_ESTIMATE, whose choice of
// algorithm depends only on the sizes, the flags and the alignment of the arrays, never
// on timings (FFTW_MEASURE and FFTW_PATIENT time candidate algorithms and may choose
// differently from one run to the next, which would change the last bits). The plan's
// own arrays are always allocated by fftwf_malloc (SIMD-aligned), and every frame is
// copied into them (the sideband plan also depends on the disc's width, 2*floor(radius)+1,
// itself a function of the frame and the parameters only), so a frame of a given size is
// transformed by the same algorithm whether it is the first frame of a process or the
// thousandth of a batch, on any rank:
// the field and the phase are bit-identical (tests/kernels/test_hologram.cpp asserts it).
#pragma once
#include <complex>
#include <cstdint>
#include <optional>
#include <utility>

namespace tessera {

enum class SidebandWindow { kCircular, kHann };

struct HologramParams {
    // (row, col) of the +1 order in FFT-shifted coordinates; empty = detect it.
    std::optional<std::pair<int64_t, int64_t>> carrier;
    // Bins within this radius of the zero frequency are never taken as the carrier.
    // <= 0: automatic, min(rows, cols) / 16 (fringes finer than 16 pixels).
    double dc_exclusion = 0;
    // Radius of the sideband filter in bins. <= 0: automatic, a third of the carrier's
    // distance from the zero frequency (the largest radius for which the +1 order of an
    // object band-limited to it does not overlap the autocorrelation term, of twice its
    // radius). Always capped below half the smaller image side.
    double filter_radius = 0;
    // kCircular: flat disc, no bias (noise-free test: 3e-5 rad RMS); kHann: half the
    // noise RMS of the circular disc for a small bias on the object's own spectrum
    // (0.007 rad RMS on the test's 3 rad bump). Measured in tests/kernels/test_hologram.cpp.
    SidebandWindow window = SidebandWindow::kCircular;
};

// Carrier peak in FFT-shifted coordinates, with its spectral magnitude |F|.
struct CarrierPeak {
    int64_t row = 0, col = 0;
    double magnitude = 0;
};

// FFTW plans and arrays for one frame size, made once and reused for every frame of
// that size (plans: FFTW_ESTIMATE, see the note above). Not copyable. Making and
// destroying plans is serialised internally (FFTW's planner is not thread-safe);
// one plan may be used by one thread at a time, different plans concurrently.
// Throws std::invalid_argument for a hologram smaller than 2x2 or too large for one FFT
// (32-bit sizes and shifted indices); both backends' plans check it.
void check_hologram_size(int64_t rows, int64_t cols);

class HologramPlan {
public:
    HologramPlan(int64_t rows, int64_t cols);  // throws std::invalid_argument if < 2x2
    ~HologramPlan();
    HologramPlan(const HologramPlan&) = delete;
    HologramPlan& operator=(const HologramPlan&) = delete;

    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int64_t half_cols() const { return cols_ / 2 + 1; }

    // Forward transform of `intensity` (rows*cols, row-major) into the half spectrum.
    void forward(const float* intensity);
    // The half spectrum of the last forward(): rows x half_cols(), unshifted, unscaled.
    const std::complex<float>* spectrum() const { return half_; }
    // Spectrum value at any unshifted bin (ky, kx) (each taken mod its size), through
    // the conjugate symmetry for the left half.
    std::complex<float> bin(int64_t ky, int64_t kx) const;
    // Sideband filter and inverse transform: the disc of `radius` bins around the
    // carrier, weighted by the window and 1/(rows*cols), moved to the zero frequency and
    // transformed back into field(). The disc fills only 2r+1 spectral rows and columns
    // (r = floor(radius)), so the inverse runs as 2r+1 column transforms on a compact,
    // transposed array and then rows*1 row transforms: about 1/3 of a full 2-D inverse.
    void synthesise(const CarrierPeak& carrier, double radius, SidebandWindow window);
    // The complex field (rows x cols) of the last synthesise().
    std::complex<float>* field() { return full_; }

private:
    void prepare_band(int64_t width);

    int64_t rows_, cols_;
    float* in_ = nullptr;
    std::complex<float>* half_ = nullptr;
    std::complex<float>* full_ = nullptr;
    void* fwd_ = nullptr;   // fftwf_plan: 2-D real-to-complex, in_ -> half_
    void* rows_plan_ = nullptr;  // fftwf_plan: rows x 1-D inverse along each row of full_, in place
    // Compact band: `band_` spectral columns, each a contiguous length-rows vector.
    int64_t band_ = 0;
    std::complex<float>* band_data_ = nullptr;
    void* band_plan_ = nullptr;  // fftwf_plan: band_ x 1-D inverse of length rows, in place
};

// Automatic radii for a frame size (and carrier) as documented in HologramParams.
double dc_exclusion_radius(const HologramParams& p, int64_t rows, int64_t cols);
double filter_radius(const HologramParams& p, int64_t rows, int64_t cols, const CarrierPeak& carrier);

// Largest |F| of the last plan.forward() in the right half-plane outside the DC radius
// (ties: the smallest shifted index row*cols + col). Throws std::invalid_argument when
// the DC radius excludes every bin.
CarrierPeak find_carrier(const HologramPlan& plan, double dc_exclusion);

// Forward transform + find_carrier.
CarrierPeak detect_carrier(HologramPlan& plan, const float* intensity, const HologramParams& p);

// Demodulates one frame: `intensity` rows*cols (plan's size), `field_out` rows*cols
// complex (may be plan.field(): no copy). Returns the carrier used (given or detected).
// Throws std::invalid_argument for a given carrier outside the spectrum.
CarrierPeak demodulate(HologramPlan& plan, const HologramParams& p, const float* intensity,
                       std::complex<float>* field_out);

// field[i] /= ref[i] (= field * conj(ref) / |ref|^2); where |ref| == 0 the field becomes 0.
void divide_by_reference(std::complex<float>* field, const std::complex<float>* ref, int64_t n);

// phase[i] = arg(field[i]) in [-pi, pi): our own float32 atan2 (Cephes' atanf polynomial,
// max error 2.7e-7 rad, about 1 ulp of pi; +pi maps to -pi), plain float arithmetic without
// contraction, so the same bits on every machine and compiler, and vectorised.
float phase_of(float im, float re);
void wrapped_phase(const std::complex<float>* field, float* phase, int64_t n);
// amplitude[i] = |field[i]|.
void field_amplitude(const std::complex<float>* field, float* amplitude, int64_t n);

}  // namespace tessera
