// gen_phase: synthetic wrapped phase with known truth for the Goldstein baseline self-check
// and timings. Deterministic for given arguments (integer hash RNG, own Box-Muller).
//
// Usage: gen_phase SCENE ROWS COLS WRAPPED.f32 TRUTH.f32
//                  [--cycles C] [--noise SIGMA] [--seed S] [--holes N] [--mask-out MASK.u8]
//   SCENE   bowl : Gaussian bowl of C cycles (sigma = rows/4), uniform noise SIGMA (radians)
//           topo : fractal (fBm value-noise) topography spanning C cycles, noise whose sigma
//                  varies smoothly over the scene between 0.4*SIGMA and 1.6*SIGMA
//   truth   = smooth phase + noise (so exact unwrapping reproduces it to whole cycles)
//   wrapped = truth wrapped into [-pi, pi)
//   --holes N     N random discs of nodata: NaN in WRAPPED and TRUTH, or, with --mask-out,
//                 0 in MASK.u8 (WRAPPED stays finite there, TRUTH is NaN)
// Prints statistics (truth gradients above pi, holes) on stderr.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "gen_phase: %s\n", msg.c_str());
    std::exit(2);
}

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
double unit(uint64_t h) { return (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }  // (0,1)
uint64_t hash3(uint64_t seed, uint64_t a, uint64_t b) { return mix(mix(mix(seed) ^ a) ^ b); }

// Smooth value noise in [-1, 1] on a lattice of spacing L pixels (quintic fade, C2).
struct ValueNoise {
    long gw = 0, gh = 0;
    double L = 1;
    std::vector<double> v;
    ValueNoise(long rows, long cols, double spacing, uint64_t seed) : L(spacing) {
        gh = long(rows / L) + 2;
        gw = long(cols / L) + 2;
        v.resize(size_t(gh * gw));
        for (long j = 0; j < gh; ++j)
            for (long i = 0; i < gw; ++i) v[size_t(j * gw + i)] = 2.0 * unit(hash3(seed, j, i)) - 1.0;
    }
    static double fade(double t) { return t * t * t * (t * (t * 6 - 15) + 10); }
    double at(long r, long c) const {
        const double y = r / L, x = c / L;
        const long j = long(y), i = long(x);
        const double fy = fade(y - j), fx = fade(x - i);
        const double* p = &v[size_t(j * gw + i)];
        const double a = p[0] + fx * (p[1] - p[0]);
        const double b = p[gw] + fx * (p[gw + 1] - p[gw]);
        return a + fy * (b - a);
    }
};

void write_raw(const std::string& path, const void* data, size_t bytes) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) die("cannot create " + path);
    size_t put = std::fwrite(data, 1, bytes, f);
    if (std::fclose(f) != 0 || put != bytes) die("write failed: " + path);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        std::fprintf(stderr,
                     "usage: gen_phase bowl|topo ROWS COLS WRAPPED.f32 TRUTH.f32 [--cycles C] "
                     "[--noise SIGMA] [--seed S] [--holes N] [--mask-out MASK.u8]\n");
        return 2;
    }
    const std::string scene = argv[1];
    const long H = std::strtol(argv[2], nullptr, 10), W = std::strtol(argv[3], nullptr, 10);
    const std::string wrapped_path = argv[4], truth_path = argv[5];
    double cycles = 30, noise = 0.1;
    uint64_t seed = 1;
    long holes = 0;
    std::string mask_path;
    for (int i = 6; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) die("missing value for " + a);
        if (a == "--cycles") cycles = std::atof(argv[++i]);
        else if (a == "--noise") noise = std::atof(argv[++i]);
        else if (a == "--seed") seed = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--holes") holes = std::atol(argv[++i]);
        else if (a == "--mask-out") mask_path = argv[++i];
        else die("unknown argument " + a);
    }
    if (H < 2 || W < 2) die("bad ROWS/COLS");
    if (scene != "bowl" && scene != "topo") die("unknown scene " + scene);
    const size_t N = size_t(H) * size_t(W);
    const double two_pi = 2.0 * M_PI;

    // Smooth phase.
    std::vector<double> smooth(N);
    std::vector<double> sigma(N, noise);
    if (scene == "bowl") {
        const double s = 0.25 * double(std::min(H, W)), cy = 0.5 * (H - 1), cx = 0.5 * (W - 1);
        for (long r = 0; r < H; ++r)
            for (long c = 0; c < W; ++c) {
                const double d2 = (r - cy) * (r - cy) + (c - cx) * (c - cx);
                smooth[size_t(r * W + c)] = two_pi * cycles * std::exp(-d2 / (2 * s * s));
            }
    } else {
        // fBm: octaves of spacing S/2^o, amplitude ~ spacing^0.8; then scaled to C cycles.
        const double base = double(std::max(H, W)) / 2.0;
        std::vector<ValueNoise> oct;
        std::vector<double> amp;
        for (double L = base; L >= 12.0; L /= 2) {
            oct.emplace_back(H, W, L, seed * 1000 + oct.size());
            amp.push_back(std::pow(L / base, 0.8));
        }
        const ValueNoise coh(H, W, double(std::max(H, W)) / 6.0, seed * 1000 + 999);
        double lo = 1e300, hi = -1e300;
        for (long r = 0; r < H; ++r)
            for (long c = 0; c < W; ++c) {
                double z = 0;
                for (size_t o = 0; o < oct.size(); ++o) z += amp[o] * oct[o].at(r, c);
                smooth[size_t(r * W + c)] = z;
                lo = std::min(lo, z);
                hi = std::max(hi, z);
                sigma[size_t(r * W + c)] = noise * (1.0 + 0.6 * coh.at(r, c));
            }
        const double scale = two_pi * cycles / (hi - lo);
        for (double& z : smooth) z = (z - lo) * scale;
    }

    std::vector<float> truth(N), wrapped(N);
    for (size_t k = 0; k < N; ++k) {
        // Box-Muller from two hashed uniforms.
        const double u1 = unit(hash3(seed, 0x6e6f697365ULL, 2 * k));
        const double u2 = unit(hash3(seed, 0x6e6f697365ULL, 2 * k + 1));
        const double g = std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
        const double t = smooth[k] + sigma[k] * g;
        truth[k] = static_cast<float>(t);
        double w = double(truth[k]) - two_pi * std::floor((double(truth[k]) + M_PI) / two_pi);
        float wf = static_cast<float>(w);
        if (wf >= float(M_PI)) wf -= float(two_pi);
        wrapped[k] = wf;
    }

    // Count aliased truth gradients (|d| > pi): no unwrapper can get those right.
    size_t aliased = 0;
    for (long r = 0; r < H; ++r)
        for (long c = 0; c < W; ++c) {
            const size_t k = size_t(r * W + c);
            if (c + 1 < W && std::fabs(double(truth[k + 1]) - truth[k]) > M_PI) ++aliased;
            if (r + 1 < H && std::fabs(double(truth[k + W]) - truth[k]) > M_PI) ++aliased;
        }

    std::vector<uint8_t> mask;
    if (!mask_path.empty()) mask.assign(N, 1);
    size_t hole_px = 0;
    for (long h = 0; h < holes; ++h) {
        const double cy = unit(hash3(seed, 0x686f6c65ULL, 4 * h)) * H;
        const double cx = unit(hash3(seed, 0x686f6c65ULL, 4 * h + 1)) * W;
        const double rad = std::min(H, W) * (1.0 / 64 + unit(hash3(seed, 0x686f6c65ULL, 4 * h + 2)) * (1.0 / 16 - 1.0 / 64));
        for (long r = std::max(0L, long(cy - rad)); r <= std::min(H - 1, long(cy + rad)); ++r)
            for (long c = std::max(0L, long(cx - rad)); c <= std::min(W - 1, long(cx + rad)); ++c) {
                if ((r - cy) * (r - cy) + (c - cx) * (c - cx) > rad * rad) continue;
                const size_t k = size_t(r * W + c);
                if (!std::isnan(truth[k])) ++hole_px;
                truth[k] = NAN;
                if (mask.empty()) wrapped[k] = NAN;
                else mask[k] = 0;
            }
    }

    write_raw(wrapped_path, wrapped.data(), N * sizeof(float));
    write_raw(truth_path, truth.data(), N * sizeof(float));
    if (!mask.empty()) write_raw(mask_path, mask.data(), N);
    std::fprintf(stderr, "gen_phase %s %ldx%ld cycles=%g noise=%g seed=%llu aliased_gradients=%zu hole_pixels=%zu\n",
                 scene.c_str(), H, W, cycles, noise, static_cast<unsigned long long>(seed), aliased, hole_px);
    return 0;
}
