// cut_check: consistency of a Goldstein result with its own branch cuts (self-check helper).
// Every pair of 4-adjacent pixels that are both unwrapped and both off the cuts must differ by
// exactly the wrapped phase difference; any other pair means a residue was left unbalanced.
//
// Usage: cut_check WRAPPED.f32 UNW.f32 FLAGS.u8 ROWS COLS   (FLAGS from goldstein_ref --flags-out)
// Prints: cut_check pairs=N inconsistent=M cut_pixels=C residues=R nan=K ; exit status 1 if M > 0.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
void read_raw(const char* path, void* dst, size_t bytes) {
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(dst, 1, bytes, f) != bytes) {
        std::fprintf(stderr, "cut_check: cannot read %s\n", path);
        std::exit(2);
    }
    std::fclose(f);
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: cut_check WRAPPED.f32 UNW.f32 FLAGS.u8 ROWS COLS\n");
        return 2;
    }
    const long H = std::atol(argv[4]), W = std::atol(argv[5]);
    if (H < 1 || W < 1) return 2;
    const size_t N = size_t(H) * size_t(W);
    std::vector<float> w(N), u(N);
    std::vector<uint8_t> fl(N);
    read_raw(argv[1], w.data(), N * 4);
    read_raw(argv[2], u.data(), N * 4);
    read_raw(argv[3], fl.data(), N);
    constexpr uint8_t kCut = 0x10;
    long long pairs = 0, bad = 0, cut = 0, res = 0, nan = 0;
    for (long r = 0; r < H; ++r)
        for (long c = 0; c < W; ++c) {
            const size_t k = size_t(r) * W + c;
            cut += (fl[k] & kCut) != 0;
            res += (fl[k] & 3) != 0;
            if (std::isnan(u[k])) {
                ++nan;
                continue;
            }
            if (fl[k] & kCut) continue;
            auto check = [&](size_t n) {
                if (std::isnan(u[n]) || (fl[n] & kCut)) return;
                ++pairs;
                double g = double(w[n]) - w[k];
                g -= 2 * M_PI * std::rint(g / (2 * M_PI));
                if (std::fabs(double(u[n]) - u[k] - g) > 1.0) ++bad;
            };
            if (c + 1 < W) check(k + 1);
            if (r + 1 < H) check(k + W);
        }
    std::printf("cut_check pairs=%lld inconsistent=%lld cut_pixels=%lld residues=%lld nan=%lld\n", pairs, bad,
                cut, res, nan);
    return bad ? 1 : 0;
}
