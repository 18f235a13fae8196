// goldstein_ref: a standalone, single-threaded textbook Goldstein branch-cut phase unwrapper,
// written from the description in Ghiglia & Pritt, "Two-Dimensional Phase Unwrapping" (1998),
// section 4.2 (the book's goldstein.c program). It is the comparison baseline for speed and
// accuracy, so it follows the book's algorithm step by step:
//
//   1. residues: sum of the four wrapped gradients around every 2x2 loop; the residue is
//      stored at the loop's top-left pixel (POS_RES / NEG_RES bit flags);
//   2. branch cuts: scan the image in raster order; from each residue not yet in a tree grow
//      boxes of size 3, 5, 7, ... up to the maximum box size around every "active" residue of
//      the current tree (the whole box is scanned, and residues added during a pass get a box of
//      the same size); every residue found in a box is connected by a cut (8-connected
//      Bresenham line of BRANCH_CUT bits) to the box centre and joins the active list (residues
//      of earlier trees join without changing the charge); a border pixel (image edge or
//      invalid pixel) in a box connects the box centre to its nearest border pixel and balances
//      the tree; a tree still charged at the maximum box size is connected to the border from
//      its active residue nearest to the border. No dipole pre-pass, no quality map.
//   3. integration: flood fill (FIFO queue) from the first valid pixel not yet reached, adding
//      wrapped differences, never entering cut or invalid pixels; every disconnected region
//      starts a new flood with its own arbitrary offset; finally the valid pixels on cuts are
//      unwrapped from already unwrapped neighbours (raster pass, then spreading along cuts).
//
// Usage: goldstein_ref IN.f32 ROWS COLS OUT.f32 [--mask MASK.u8] [--max-box N] [--hugepages]
//                      [--flags-out FLAGS.u8]
//   IN.f32       raw float32 wrapped phase (radians), row-major ROWS x COLS, NaN = invalid;
//                finite values outside [-pi, pi) are wrapped into it first
//   OUT.f32      raw float32 unwrapped phase, NaN where invalid or not reached
//   --mask       raw uint8 mask, 0 = invalid
//   --max-box    largest box size tried (odd sizes 3, 5, ... <= N); default 60
//   --hugepages  advise transparent huge pages for the big arrays (off by default: the book's
//                program uses plain allocations)
//   --flags-out  (debugging) the final bit flags: 1 +res, 2 -res, 16 cut, 32 invalid, 64 unwrapped
// Prints on stdout: goldstein_ref rows=.. cols=.. residues=.. seconds_unwrap=.. seconds_total=..
//   seconds_unwrap: wall time from the loaded arrays to the solution (residues, cuts,
//   integration); seconds_total: the whole run including the raw file I/O.
// On stderr: per-phase wall times, the unwrap's thread CPU time, cut and NaN pixel counts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <time.h>

namespace {

// Bit flags, one byte per pixel, as in the book.
constexpr uint8_t kPosRes = 0x01;
constexpr uint8_t kNegRes = 0x02;
constexpr uint8_t kVisited = 0x04;  // residue belongs to a tree already
constexpr uint8_t kActive = 0x08;   // residue is in the current tree's active list
constexpr uint8_t kCut = 0x10;      // branch cut pixel
constexpr uint8_t kBorder = 0x20;   // invalid pixel (NaN or mask == 0)
constexpr uint8_t kUnwrapped = 0x40;  // solution assigned (set when the pixel enters the queue)
constexpr uint8_t kEdgeCol = 0x80;    // integration only: pixel in the first or last column
constexpr uint8_t kRes = kPosRes | kNegRes;

constexpr float kPi = 3.14159265358979323846f;
constexpr float kTwoPi = 6.28318530717958647692f;

// Wrapped difference a - b for a, b in [-pi, pi]: the book's Gradient().
inline float grad(float a, float b) {
    float d = a - b;
    if (d > kPi)
        d -= kTwoPi;
    else if (d < -kPi)
        d += kTwoPi;
    return d;
}

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "goldstein_ref: %s\n", msg.c_str());
    std::exit(2);
}

// A plain heap array. With huge = true it is 2 MiB aligned and advised for transparent huge
// pages (Linux madvise), which the integration's scattered flood front benefits from; off by
// default, as the book's program uses ordinary allocations.
struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};
template <class T>
using Array = std::unique_ptr<T[], FreeDeleter>;

template <class T>
Array<T> alloc_array(size_t n, bool huge) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = std::max<size_t>(n * sizeof(T), 1);
    void* p = nullptr;
    if (huge) {
        const size_t rounded = (bytes + kHuge - 1) & ~(kHuge - 1);
        p = std::aligned_alloc(kHuge, rounded);
#ifdef MADV_HUGEPAGE
        if (p) madvise(p, rounded, MADV_HUGEPAGE);
#endif
    } else {
        p = std::malloc(bytes);
    }
    if (!p) die("out of memory");
    return Array<T>(static_cast<T*>(p));
}

// CPU time of this thread (to tell the algorithm's cost from waiting on a busy machine).
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void read_raw(const char* path, void* dst, size_t bytes) {
    FILE* f = std::fopen(path, "rb");
    if (!f) die(std::string("cannot open ") + path);
    size_t got = std::fread(dst, 1, bytes, f);
    std::fclose(f);
    if (got != bytes) die(std::string("short read from ") + path);
}

void write_raw(const char* path, const void* src, size_t bytes) {
    FILE* f = std::fopen(path, "wb");
    if (!f) die(std::string("cannot create ") + path);
    size_t put = std::fwrite(src, 1, bytes, f);
    if (std::fclose(f) != 0 || put != bytes) die(std::string("write failed: ") + path);
}

struct Goldstein {
    int H = 0, W = 0;
    const float* ph = nullptr;  // wrapped phase in [-pi, pi)
    uint8_t* fl = nullptr;      // bit flags
    bool any_border = false;    // some pixel is invalid (else only the image edge is border)

    // --- residues -----------------------------------------------------------------------------
    int64_t residues() {
        int64_t n = 0;
        for (int r = 0; r + 1 < H; ++r) {
            const float* p0 = ph + static_cast<size_t>(r) * W;
            const float* p1 = p0 + W;
            uint8_t* f0 = fl + static_cast<size_t>(r) * W;
            const uint8_t* f1 = f0 + W;
            for (int c = 0; c + 1 < W; ++c) {
                if ((f0[c] | f0[c + 1] | f1[c] | f1[c + 1]) & kBorder) continue;
                float s = grad(p0[c + 1], p0[c]) + grad(p1[c + 1], p0[c + 1]) +
                          grad(p1[c], p1[c + 1]) + grad(p0[c], p1[c]);
                if (s > kPi) {
                    f0[c] |= kPosRes;
                    ++n;
                } else if (s < -kPi) {
                    f0[c] |= kNegRes;
                    ++n;
                }
            }
        }
        return n;
    }

    // --- branch cuts ---------------------------------------------------------------------------
    // The book's PlaceCut: mark the pixels of the line (c0,r0)-(c1,r1) (8-connected, so a
    // 4-connected integration path cannot cross it).
    void place_cut(int c0, int r0, int c1, int r1) {
        int dx = std::abs(c1 - c0), sx = c0 < c1 ? 1 : -1;
        int dy = -std::abs(r1 - r0), sy = r0 < r1 ? 1 : -1;
        int err = dx + dy;
        for (;;) {
            fl[static_cast<size_t>(r0) * W + c0] |= kCut;
            if (c0 == c1 && r0 == r1) break;
            int e2 = 2 * err;
            if (e2 >= dy) {
                err += dy;
                c0 += sx;
            }
            if (e2 <= dx) {
                err += dx;
                r0 += sy;
            }
        }
    }

    // The book's DistToBorder: nearest border pixel (image edge or invalid pixel) to (c, r),
    // Euclidean distance; returns the squared distance, or -1 if none is nearer than
    // sqrt(limit2). Rings are searched outwards only as far as they can still improve.
    int64_t dist_to_border(int c, int r, int64_t limit2, int* bc, int* br) const {
        int64_t best2 = limit2;
        bool found = false;
        auto consider = [&](int cc, int rr) {
            int64_t d2 = int64_t(cc - c) * (cc - c) + int64_t(rr - r) * (rr - r);
            if (d2 < best2) {
                best2 = d2;
                *bc = cc;
                *br = rr;
                found = true;
            }
        };
        // Image edges (ties: top, bottom, left, right).
        consider(c, 0);
        consider(c, H - 1);
        consider(0, r);
        consider(W - 1, r);
        if (any_border) {
            for (int rad = 0; int64_t(rad) * rad < best2; ++rad) {
                int rlo = std::max(r - rad, 0), rhi = std::min(r + rad, H - 1);
                for (int rr = rlo; rr <= rhi; ++rr) {
                    const uint8_t* row = fl + static_cast<size_t>(rr) * W;
                    if (rr == r - rad || rr == r + rad) {  // full top / bottom ring row
                        int clo = std::max(c - rad, 0), chi = std::min(c + rad, W - 1);
                        for (int cc = clo; cc <= chi; ++cc)
                            if (row[cc] & kBorder) consider(cc, rr);
                    } else {  // left and right ring columns only
                        if (c - rad >= 0 && (row[c - rad] & kBorder)) consider(c - rad, rr);
                        if (c + rad < W && (row[c + rad] & kBorder)) consider(c + rad, rr);
                    }
                }
            }
        }
        return found ? best2 : -1;
    }

    void branch_cuts(int max_box) {
        std::vector<int64_t> active;
        active.reserve(4096);
        const int64_t N = int64_t(H) * W;
        const int64_t far2 = int64_t(H) * H + int64_t(W) * W + 1;
        for (int64_t k0 = 0; k0 < N; ++k0) {
            if (!(fl[k0] & kRes) || (fl[k0] & kVisited)) continue;
            fl[k0] |= kVisited | kActive;
            int charge = (fl[k0] & kPosRes) ? 1 : -1;
            active.clear();
            active.push_back(k0);
            bool balanced = false;
            for (int bs = 3; bs <= max_box && !balanced; bs += 2) {
                const int h = bs / 2;
                // The active list grows while it is scanned: new residues get a box of this size too.
                for (size_t a = 0; a < active.size() && !balanced; ++a) {
                    const int cr = static_cast<int>(active[a] / W), cc = static_cast<int>(active[a] % W);
                    const int rlo = std::max(cr - h, 0), rhi = std::min(cr + h, H - 1);
                    const int clo = std::max(cc - h, 0), chi = std::min(cc + h, W - 1);
                    for (int r = rlo; r <= rhi && !balanced; ++r) {
                        uint8_t* row = fl + static_cast<size_t>(r) * W;
                        const bool edge_row = (r == 0 || r == H - 1);
                        for (int c = clo; c <= chi; ++c) {
                            const uint8_t f = row[c];
                            if (edge_row || c == 0 || c == W - 1 || (f & kBorder)) {
                                // Border in the box: cut from the box centre to the nearest border.
                                int bc = c, br = r;
                                dist_to_border(cc, cr, far2, &bc, &br);
                                place_cut(cc, cr, bc, br);
                                charge = 0;
                                balanced = true;
                                break;
                            }
                            if ((f & kRes) && !(f & kActive)) {
                                if (!(f & kVisited)) charge += (f & kPosRes) ? 1 : -1;
                                row[c] = f | kVisited | kActive;
                                active.push_back(int64_t(r) * W + c);
                                place_cut(cc, cr, c, r);
                                if (charge == 0) {
                                    balanced = true;
                                    break;
                                }
                            }
                        }
                    }
                }
            }
            if (!balanced) {
                // Still charged at the maximum box size: connect the active residue nearest to
                // the border to it.
                int64_t best2 = far2;
                int fc = 0, fr = 0, tc = 0, tr = 0;
                for (int64_t k : active) {
                    const int r = static_cast<int>(k / W), c = static_cast<int>(k % W);
                    int bc, br;
                    int64_t d2 = dist_to_border(c, r, best2, &bc, &br);
                    if (d2 >= 0) {
                        best2 = d2;
                        fc = c;
                        fr = r;
                        tc = bc;
                        tr = br;
                    }
                }
                place_cut(fc, fr, tc, tr);
            }
            for (int64_t k : active) fl[k] &= static_cast<uint8_t>(~kActive);
        }
    }

    // --- integration ---------------------------------------------------------------------------
    // Flood fill around the cuts. soln must be NaN-initialised; q has room for H*W indices.
    // Pixels in the first and last column carry kEdgeCol, so the neighbour tests need no
    // division for the (rare) row/column recovery.
    void integrate(float* soln, uint32_t* q) {
        const uint32_t Wu = static_cast<uint32_t>(W);
        const uint32_t N = static_cast<uint32_t>(int64_t(H) * W);
        const float* P = ph;
        uint8_t* F = fl;
        for (uint32_t r = 0; r < static_cast<uint32_t>(H); ++r) {
            F[r * Wu] |= kEdgeCol;
            F[r * Wu + Wu - 1] |= kEdgeCol;
        }
        constexpr uint8_t kStop = kBorder | kCut | kUnwrapped;
        for (uint32_t s = 0; s < N; ++s) {
            if (F[s] & kStop) continue;
            soln[s] = P[s];  // a new region: arbitrary offset
            F[s] |= kUnwrapped;
            uint32_t head = 0, tail = 0;
            q[tail++] = s;
            while (head < tail) {
                const uint32_t k = q[head++];
                const float sk = soln[k], pk = P[k];
                auto visit = [&](uint32_t n) {
                    if (F[n] & kStop) return;
                    soln[n] = sk + grad(P[n], pk);
                    F[n] |= kUnwrapped;
                    q[tail++] = n;
                };
                bool left = true, right = true;
                if (F[k] & kEdgeCol) {
                    const uint32_t c = k % Wu;
                    left = c > 0;
                    right = c + 1 < Wu;
                }
                if (left) visit(k - 1);
                if (right) visit(k + 1);
                if (k >= Wu) visit(k - Wu);
                if (k + Wu < N) visit(k + Wu);
            }
        }
        // Valid pixels on cuts: unwrap from an unwrapped neighbour (raster pass), then keep
        // spreading along the cuts from those.
        constexpr uint8_t kCutTodo = kCut | kBorder | kUnwrapped;  // (F & kCutTodo) == kCut
        uint32_t head = 0, tail = 0;
        for (uint32_t k = 0; k < N; ++k) {
            if ((F[k] & kCutTodo) != kCut) continue;
            const uint32_t c = k % Wu;
            uint32_t n = N;
            if (c > 0 && (F[k - 1] & kUnwrapped)) n = k - 1;
            else if (c + 1 < Wu && (F[k + 1] & kUnwrapped)) n = k + 1;
            else if (k >= Wu && (F[k - Wu] & kUnwrapped)) n = k - Wu;
            else if (k + Wu < N && (F[k + Wu] & kUnwrapped)) n = k + Wu;
            if (n == N) continue;
            soln[k] = soln[n] + grad(P[k], P[n]);
            F[k] |= kUnwrapped;
            q[tail++] = k;
        }
        while (head < tail) {
            const uint32_t k = q[head++];
            const uint32_t c = k % Wu;
            auto visit = [&](uint32_t n) {
                if ((F[n] & kCutTodo) != kCut) return;
                soln[n] = soln[k] + grad(P[n], P[k]);
                F[n] |= kUnwrapped;
                q[tail++] = n;
            };
            if (c > 0) visit(k - 1);
            if (c + 1 < Wu) visit(k + 1);
            if (k >= Wu) visit(k - Wu);
            if (k + Wu < N) visit(k + Wu);
        }
        for (uint32_t r = 0; r < static_cast<uint32_t>(H); ++r) {
            F[r * Wu] &= static_cast<uint8_t>(~kEdgeCol);
            F[r * Wu + Wu - 1] &= static_cast<uint8_t>(~kEdgeCol);
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    using clk = std::chrono::steady_clock;
    const auto t_start = clk::now();
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: goldstein_ref IN.f32 ROWS COLS OUT.f32 [--mask MASK.u8] [--max-box N] "
                     "[--hugepages] [--flags-out FLAGS.u8]\n");
        return 2;
    }
    const char* in_path = argv[1];
    const long rows_l = std::strtol(argv[2], nullptr, 10), cols_l = std::strtol(argv[3], nullptr, 10);
    const char* out_path = argv[4];
    const char* mask_path = nullptr;
    const char* flags_path = nullptr;
    int max_box = 60;
    bool huge = false;
    for (int i = 5; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--mask" && i + 1 < argc)
            mask_path = argv[++i];
        else if (a == "--flags-out" && i + 1 < argc)
            flags_path = argv[++i];
        else if (a == "--hugepages")
            huge = true;
        else if (a == "--max-box" && i + 1 < argc)
            max_box = std::atoi(argv[++i]);
        else
            die("unknown argument " + a);
    }
    if (rows_l < 2 || cols_l < 2 || rows_l > (1L << 30) || cols_l > (1L << 30) ||
        rows_l * cols_l >= (1L << 32))
        die("bad ROWS/COLS (need >= 2 each, fewer than 2^32 pixels)");
    if (max_box < 3) die("--max-box must be >= 3");
    const int H = static_cast<int>(rows_l), W = static_cast<int>(cols_l);
    const size_t N = size_t(H) * size_t(W);

    Array<float> ph = alloc_array<float>(N, huge);
    Array<uint8_t> fl = alloc_array<uint8_t>(N, huge);
    read_raw(in_path, ph.get(), N * sizeof(float));
    if (mask_path) {
        read_raw(mask_path, fl.get(), N);
        for (size_t k = 0; k < N; ++k) fl[k] = fl[k] == 0 ? kBorder : 0;
    } else {
        std::memset(fl.get(), 0, N);
    }

    // Work arrays, allocated once (the queue holds every pixel at most once per pass).
    Array<float> soln = alloc_array<float>(N, huge);
    std::fill(soln.get(), soln.get() + N, std::numeric_limits<float>::quiet_NaN());
    Array<uint32_t> q = alloc_array<uint32_t>(N, huge);

    const double cpu0 = thread_cpu_seconds();
    const auto t0 = clk::now();
    Goldstein g;
    g.H = H;
    g.W = W;
    g.ph = ph.get();
    g.fl = fl.get();
    // Invalid pixels are border; valid values outside [-pi, pi) are wrapped into it.
    for (size_t k = 0; k < N; ++k) {
        float v = ph[k];
        if (!std::isfinite(v)) {
            fl[k] = kBorder;
        } else if (v < -kPi || v >= kPi) {
            double w = double(v) - 2.0 * M_PI * std::floor((double(v) + M_PI) / (2.0 * M_PI));
            ph[k] = std::clamp(static_cast<float>(w), -kPi, kPi);
        }
        if (fl[k] & kBorder) g.any_border = true;
    }
    const auto ta = clk::now();
    const int64_t nres = g.residues();
    const auto tb = clk::now();
    g.branch_cuts(max_box);
    const auto tc = clk::now();
    g.integrate(soln.get(), q.get());
    const auto t1 = clk::now();
    const double cpu1 = thread_cpu_seconds();

    write_raw(out_path, soln.get(), N * sizeof(float));
    if (flags_path) write_raw(flags_path, fl.get(), N);
    const auto t_end = clk::now();
    auto sec = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    int64_t ncut = 0, nnan = 0;
    for (size_t k = 0; k < N; ++k) {
        ncut += (fl[k] & kCut) != 0;
        nnan += std::isnan(soln[k]);
    }
    std::fprintf(stderr,
                 "goldstein_ref phases: t_prepare=%.4f t_residues=%.4f t_cuts=%.4f t_integrate=%.4f "
                 "cpu_unwrap=%.4f cut_pixels=%lld nan_pixels=%lld max_box=%d hugepages=%d\n",
                 sec(t0, ta), sec(ta, tb), sec(tb, tc), sec(tc, t1), cpu1 - cpu0, static_cast<long long>(ncut),
                 static_cast<long long>(nnan), max_box, int(huge));
    std::printf("goldstein_ref rows=%d cols=%d residues=%lld seconds_unwrap=%.4f seconds_total=%.4f\n", H,
                W, static_cast<long long>(nres), std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t_end - t_start).count());
    return 0;
}
