// The result's chunk deflate (io/chunk_deflate.h, ARCHITECTURE.md section 7) against zlib's level 1
// on a result's labels: each 512 x 512 chunk shuffled as the file stores it (4-byte labels, 4
// byte planes), deflated on one thread by both, each output inflated back by zlib and compared.
//   tessera_bench_deflate RESULT.h5 [DATASET]     (DATASET: connected_components)
#include <zlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "io/chunk_deflate.h"
#include "io/raster_reader.h"

using namespace tessera;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: tessera_bench_deflate RESULT.h5 [DATASET]\n");
        return 2;
    }
    const std::string name = argc > 2 ? argv[2] : "connected_components";
    const RasterReader in("HDF5:\"" + std::string(argv[1]) + "\"://" + name, 1);
    const int64_t H = in.info().rows, W = in.info().cols, C = 512;
    std::vector<float> img(static_cast<size_t>(H * W));  // labels below 2^24: exact as floats
    in.read_float({0, 0, H, W}, img.data(), W);
    std::vector<unsigned char> shuffled(static_cast<size_t>(C * C * 4)), out, back(shuffled.size());
    double ms[2] = {0, 0};
    size_t bytes[2] = {0, 0};
    int64_t chunks = 0, uniform = 0, bad = 0;
    for (int64_t r0 = 0; r0 + C <= H; r0 += C)
        for (int64_t c0 = 0; c0 + C <= W; c0 += C, ++chunks) {
            bool one = true;
            for (int64_t y = 0; y < C; ++y)
                for (int64_t x = 0; x < C; ++x) {
                    const uint32_t v = static_cast<uint32_t>(img[static_cast<size_t>((r0 + y) * W + c0 + x)]);
                    one = one && v == static_cast<uint32_t>(img[static_cast<size_t>(r0 * W + c0)]);
                    for (int j = 0; j < 4; ++j) shuffled[static_cast<size_t>(j * C * C + y * C + x)] = static_cast<unsigned char>(v >> (8 * j));
                }
            uniform += one;
            for (int k = 0; k < 2; ++k) {
                const auto t0 = std::chrono::steady_clock::now();
                size_t len = 0;
                if (k == 0) {
                    out.resize(compressBound(static_cast<uLong>(shuffled.size())));
                    uLongf l = out.size();
                    len = compress2(out.data(), &l, shuffled.data(), static_cast<uLong>(shuffled.size()), 1) == Z_OK ? l : 0;
                } else {
                    len = deflate_bytes(shuffled.data(), shuffled.size(), 1, out);
                }
                ms[k] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                bytes[k] += len;
                uLongf bl = back.size();
                if (len == 0 || uncompress(back.data(), &bl, out.data(), static_cast<uLong>(len)) != Z_OK || bl != back.size() ||
                    std::memcmp(back.data(), shuffled.data(), bl) != 0)
                    ++bad;
            }
        }
    std::printf("| %s | %lldx%lld | %lld (%lld of one value) | %.3f ms, %zu B | %.3f ms, %zu B | %.1fx | %lld |\n", name.c_str(),
                static_cast<long long>(H), static_cast<long long>(W), static_cast<long long>(chunks),
                static_cast<long long>(uniform), ms[0] / static_cast<double>(chunks), bytes[0],
                ms[1] / static_cast<double>(chunks), bytes[1], ms[0] / ms[1], static_cast<long long>(bad));
    return bad == 0 ? 0 : 1;
}
