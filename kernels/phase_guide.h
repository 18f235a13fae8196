// The guide of a noisy phase (docs/ARCHITECTURE.md section 2.1): the argument of the average
// of the valid phasors in an N x N window, unwrapped in the phase's place; each pixel then
// takes the cycle that brings its own phase nearest the guide's unwrapped value. Host only:
// both backends unwrap the guide the host made, so the guide is the same bits on either.
#pragma once
#include <cstdint>

#include "kernels/types.h"

namespace tessera {

// The guide over `out` (a window inside the image) from a wrapped phase and its flags given
// over `in` (out grown by half = N / 2 on each side, clipped to the H x W image; rows of
// in.cols). Pixels with any kUnreliable bit add nothing; a window with nothing to add (or whose
// phasors cancel exactly) leaves the pixel's own phase. Each pixel's sum is taken in one fixed
// order of image positions (its columns' sums top to bottom, then left to right), so a pixel's
// guide does not depend on the windows the image is cut into. Writes out.rows x out.cols
// values, rows of out.cols, into `guide`; invalid pixels get 0 (section 2).
void guide_phase(const float* phase, const uint8_t* flags, const Window& in, const Window& out, int half,
                 float* guide);

// The cycle that brings phi nearest u (the guide's unwrapped value): rint((u - phi) / 2pi),
// float32 as section 2's wrap counts; the pixel's result is then phi + 2pi k (section 4's formula).
inline int32_t guide_cycles(float phi, float u) { return wrap_count(phi, u); }

}  // namespace tessera
