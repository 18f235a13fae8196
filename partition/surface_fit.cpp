#include "partition/surface_fit.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tessera {

SurfaceMoments sum_moments(SurfaceMoments m, Comm& comm) {
    if (comm.size() == 1) return m;
    std::vector<ExactSum> buf;
    buf.reserve(1 + m.geo.size() + m.zm.size());
    buf.push_back(exact_from(m.count));
    buf.insert(buf.end(), m.geo.begin(), m.geo.end());
    buf.insert(buf.end(), m.zm.begin(), m.zm.end());
    comm.combine_in_place<add_exact>(buf);
    m.count = static_cast<int64_t>(buf[0][0]);
    const auto g = static_cast<std::ptrdiff_t>(m.geo.size());
    std::copy(buf.begin() + 1, buf.begin() + 1 + g, m.geo.begin());
    std::copy(buf.begin() + 1 + g, buf.end(), m.zm.begin());
    return m;
}

SurfaceFit fit_surface(const float* z, const uint8_t* valid, const uint8_t* mask, const Window& own,
                       int64_t stride, int64_t H, int64_t W, int degree, Comm& comm) {
    SurfaceWindow window{z, valid, mask, own, stride, H, W};
    return fit_surface(window, degree, comm);
}

}  // namespace tessera
