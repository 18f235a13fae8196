// finish()'s downloads (banded_download.h): row bands on the copy stream behind apply's
// events, label rows of one label as one word each.
#include "kernels/cuda/banded_download.h"

#include <algorithm>

#include "kernels/cuda/kernels.h"
#include "kernels/label_width.h"

namespace tessera::cuda {

void RowBands::plan(int64_t own_rows) {
    const int64_t bands = std::clamp<int64_t>(own_rows / 2048, 1, 8);
    rows_.assign(1, 0);
    for (int64_t b = 1; b <= bands; ++b) rows_.push_back(own_rows * b / bands);
    while (done_.size() < static_cast<size_t>(bands)) done_.emplace_back("cudaEventCreate (band)");
}

std::vector<uint64_t> download_bands(const RegionArrays& a, const Window& o, const ApplyResults& r,
                                     const RowBands& bands, cudaStream_t s, cudaStream_t cs) {
    const size_t bc = static_cast<size_t>(a.buf.cols), oc = static_cast<size_t>(o.cols);
    const size_t lb = static_cast<size_t>(r.label_bytes);
    // Per own row: (1 << 32) | its label where the row holds one label (filled on the host, not copied).
    std::vector<uint64_t> uniform;
    for (size_t b = 0; b < bands.size(); ++b) {
        const int64_t y0 = bands.begin(b), rows = bands.end(b) - y0;
        if (rows <= 0) continue;
        if (cs != s) check(cudaStreamWaitEvent(cs, bands.done(b), 0), "cudaStreamWaitEvent (band)");
        const int64_t base = a.index(o.row0 + y0, o.col0);
        const size_t l0 = static_cast<size_t>(y0) * oc;
        check(cudaMemcpy2DAsync(a.phase + base, bc * sizeof(float), r.u + base, bc * sizeof(float),
                                oc * sizeof(float), static_cast<size_t>(rows), cudaMemcpyDeviceToHost, cs),
              "finish (download unwrapped phase)");
        if (a.label && r.uniform_rows && uniform.empty()) {
            // Every band's row words, once band 0's u is on its way (the kernels are long
            // done before it arrives: apply runs ahead of the copies).
            uniform.resize(static_cast<size_t>(o.rows));
            check(cudaMemcpyAsync(uniform.data(), r.uniform_rows, uniform.size() * sizeof(uint64_t),
                                  cudaMemcpyDeviceToHost, s),
                  "finish (download uniform rows)");
            check(cudaStreamSynchronize(s), "finish (uniform rows)");
        }
        // The other rows as narrow as apply wrote them (kernels/label_width.h), in runs.
        for (int64_t y = y0; a.label && y < y0 + rows;) {
            if (!uniform.empty() && uniform[static_cast<size_t>(y)]) {
                ++y;
                continue;
            }
            int64_t e = y + 1;
            while (e < y0 + rows && (uniform.empty() || !uniform[static_cast<size_t>(e)])) ++e;
            const int64_t at = a.index(o.row0 + y, o.col0);
            check(cudaMemcpy2DAsync(static_cast<uint8_t*>(a.label) + static_cast<size_t>(at) * lb, bc * lb,
                                    static_cast<const uint8_t*>(r.label) + static_cast<size_t>(y) * oc * lb, oc * lb,
                                    oc * lb, static_cast<size_t>(e - y), cudaMemcpyDeviceToHost, cs),
                  "finish (download labels)");
            y = e;
        }
        if (a.cycles)
            check(cudaMemcpy2DAsync(a.cycles + base, bc * sizeof(int32_t), r.cycles + l0, oc * sizeof(int32_t),
                                    oc * sizeof(int32_t), static_cast<size_t>(rows), cudaMemcpyDeviceToHost, cs),
                  "finish (download cycles)");
    }
    return uniform;
}

void fill_uniform_label_rows(const RegionArrays& a, const Window& own, int label_bytes,
                             const std::vector<uint64_t>& uniform) {
    with_label_type(label_bytes, [&](auto l) {
        using L = decltype(l);
#pragma omp parallel for schedule(dynamic, 16)
        for (int64_t y = 0; y < own.rows; ++y) {
            const uint64_t u = uniform[static_cast<size_t>(y)];
            if (u) std::fill_n(static_cast<L*>(a.label) + a.index(own.row0 + y, own.col0), own.cols, static_cast<L>(u));
        }
    });
}

void download_own_flags(const RegionArrays& a, const Window& own, const uint8_t* d_flags, cudaStream_t st) {
    const int64_t base = a.index(own.row0, own.col0);
    const size_t bc = static_cast<size_t>(a.buf.cols);
    check(cudaMemcpy2DAsync(a.flags + base, bc, d_flags + base, bc, static_cast<size_t>(own.cols),
                            static_cast<size_t>(own.rows), cudaMemcpyDeviceToHost, st),
          "download flags");
}

}  // namespace tessera::cuda
