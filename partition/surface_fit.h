// The background fit's cross-rank steps (kernels/background.h defines the fit): the largest
// |z| and the exact moments of every rank's window, reduced over the ranks through Comm;
// the kernels compute only a window's local results. ARCHITECTURE.md section 5: the fit is
// a reduction (moments, one allreduce), the subtraction is pointwise.
#pragma once
#include <concepts>
#include <cstdint>

#include "kernels/background.h"
#include "kernels/types.h"
#include "partition/comm.h"

namespace tessera {

// Every rank's exact moments added (one allreduce of [count, geo..., zm...] as 256-bit
// integers, summed exactly, so in any order): every rank returns the same total.
SurfaceMoments sum_moments(SurfaceMoments local, Comm& comm);

// A backend's view of one rank's window: the largest |z| of the pixels the fit uses (0 when
// none) and their exact moments (kernels/background.h: SurfaceWindow on host arrays,
// kernels/cuda/background.h: DeviceSurfaceWindow and SurfaceBand on the device).
template <class W>
concept SurfaceFitWindow = requires(W& w, int degree, int zexp) {
    { w.max_abs() } -> std::convertible_to<double>;
    { w.moments(degree, zexp) } -> std::same_as<SurfaceMoments>;
};

// Collective over comm: max |z| allreduce, the window's moments, one allreduce of the
// moments, solve. Every rank returns the same coefficients (bit-identical for any split and
// either backend). Throws SurfaceFitError on every rank alike; std::invalid_argument for a
// bad degree (before any collective).
template <SurfaceFitWindow W>
SurfaceFit fit_surface(W& window, int degree, Comm& comm) {
    check_surface_degree(degree);
    const double global_max = comm.max(window.max_abs());  // exact in any order; no MPI call alone (frame lanes)
    return solve_surface(sum_moments(window.moments(degree, surface_zexp(global_max)), comm));
}

// The same over host arrays (the CPU backend): z, valid and mask as for surface_moments.
SurfaceFit fit_surface(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                       int64_t stride, int64_t H, int64_t W, int degree, Comm& comm);

}  // namespace tessera
