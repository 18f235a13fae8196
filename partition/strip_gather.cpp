#include "partition/strip_gather.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "io/input_error.h"

namespace tessera {

template <typename T>
void gather_strips_to_root(Comm& comm, const Window& own, const T* data, int64_t stride, int64_t H, int64_t W,
                           int64_t strip_rows, const std::function<void(int64_t, int64_t, const std::type_identity_t<T>*)>& sink,
                           const std::string& what) {
    const std::vector<Window> windows = comm.allgatherv(std::vector<Window>{own});
    const bool root = comm.rank() == 0;
    std::string err;
    std::vector<T> strip(root ? static_cast<size_t>(std::min(strip_rows, H) * W) : 0);
    for (int64_t r0 = 0; r0 < H; r0 += strip_rows) {
        const int64_t nr = std::min(strip_rows, H - r0);
        // This rank's rows of the strip, row-major over its columns.
        const int64_t a = std::max(r0, own.row0), b = std::min(r0 + nr, own.row0 + own.rows);
        std::vector<T> mine;
        if (a < b && own.cols > 0) {
            mine.resize(static_cast<size_t>((b - a) * own.cols));
            for (int64_t r = a; r < b; ++r)
                std::memcpy(mine.data() + (r - a) * own.cols, data + (r - own.row0) * stride,
                            static_cast<size_t>(own.cols) * sizeof(T));
        }
        const auto parts = comm.gatherv(mine, 0);
        if (!root || !err.empty()) continue;
        for (size_t k = 0; k < parts.size(); ++k) {
            const Window& w = windows[k];
            const int64_t pa = std::max(r0, w.row0), pb = std::min(r0 + nr, w.row0 + w.rows);
            for (int64_t r = pa; r < pb; ++r)
                std::memcpy(strip.data() + (r - r0) * W + w.col0, parts[k].data() + (r - pa) * w.cols,
                            static_cast<size_t>(w.cols) * sizeof(T));
        }
        try {
            sink(r0, nr, strip.data());
        } catch (const std::exception& e) {
            err = e.what();
        }
    }
    if (comm.max(int64_t{!err.empty()})) throw InputError::everywhere(root ? err : what);
}

#define TESSERA_GATHER_STRIPS(T)                                                                                    \
    template void gather_strips_to_root<T>(Comm&, const Window&, const T*, int64_t, int64_t, int64_t, int64_t,      \
                                           const std::function<void(int64_t, int64_t, const T*)>&, const std::string&);
TESSERA_GATHER_STRIPS(float)
TESSERA_GATHER_STRIPS(uint32_t)
TESSERA_GATHER_STRIPS(uint16_t)
#undef TESSERA_GATHER_STRIPS

}  // namespace tessera
