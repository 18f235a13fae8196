#include "kernels/phase_guide.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera {

void guide_phase(const float* phase, const uint8_t* flags, const Window& in, const Window& out, int64_t H, int64_t W,
                 int half, float* guide) {
    (void)H, (void)W;  // `in` is `out` grown by `half`, clipped to the image: its edges are the image's or half away
    const int64_t K = 2 * half + 1;
#pragma omp parallel
    {
        // Each thread a run of output rows; the phasors of the last K input rows in a ring
        // (float, 0 where unreliable), each computed once a thread, summed in double.
        const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t i0 = out.rows * t / nt, i1 = out.rows * (t + 1) / nt;
        std::vector<float> cs(static_cast<size_t>(K * in.cols)), sn(static_cast<size_t>(K * in.cols));
        std::vector<int64_t> held(static_cast<size_t>(K), -1);  // the input row in each slot
        std::vector<double> x_col(static_cast<size_t>(in.cols)), y_col(static_cast<size_t>(in.cols));
        const int64_t jc0 = std::max(in.col0, out.col0 - half) - in.col0;
        const int64_t jc1 = std::min(in.col0 + in.cols, out.col0 + out.cols + half) - in.col0;
        for (int64_t i = i0; i < i1; ++i) {
            const int64_t r = out.row0 + i;
            const int64_t r0 = std::max(in.row0, r - half), r1 = std::min(in.row0 + in.rows, r + half + 1);
            std::fill(x_col.begin() + jc0, x_col.begin() + jc1, 0.0);
            std::fill(y_col.begin() + jc0, y_col.begin() + jc1, 0.0);
            // Each column's sum top to bottom, then 2 half + 1 of them left to right: the same
            // additions for a pixel whatever the window it is read in.
            for (int64_t rr = r0; rr < r1; ++rr) {
                const size_t slot = static_cast<size_t>(rr % K);
                float* cr = cs.data() + slot * in.cols;
                float* sr = sn.data() + slot * in.cols;
                if (held[slot] != rr) {
                    held[slot] = rr;
                    const float* p = phase + (rr - in.row0) * in.cols;
                    const uint8_t* f = flags + (rr - in.row0) * in.cols;
                    for (int64_t j = jc0; j < jc1; ++j) {
                        const bool use = !(f[j] & kUnreliable);
                        const double v = static_cast<double>(p[j]);
                        cr[j] = use ? static_cast<float>(std::cos(v)) : 0.0f;
                        sr[j] = use ? static_cast<float>(std::sin(v)) : 0.0f;
                    }
                }
                for (int64_t j = jc0; j < jc1; ++j) x_col[static_cast<size_t>(j)] += cr[j], y_col[static_cast<size_t>(j)] += sr[j];
            }
            const int64_t own = (r - in.row0) * in.cols - in.col0;
            float* g = guide + i * out.cols;
            for (int64_t j = 0; j < out.cols; ++j) {
                const int64_t c = out.col0 + j;
                if (flags[own + c] & kInvalid) {
                    g[j] = 0.0f;
                    continue;
                }
                const int64_t c0 = std::max(in.col0, c - half) - in.col0, c1 = std::min(in.col0 + in.cols, c + half + 1) - in.col0;
                double x = 0.0, y = 0.0;
                for (int64_t k = c0; k < c1; ++k) x += x_col[static_cast<size_t>(k)], y += y_col[static_cast<size_t>(k)];
                g[j] = x == 0.0 && y == 0.0 ? phase[own + c] : static_cast<float>(std::atan2(y, x));
            }
        }
    }
}

}  // namespace tessera
