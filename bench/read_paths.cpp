// How fast a float32 raster's bytes can come out of the page cache and be folded (finite count,
// minimum, maximum: what the read does to the phase) on the host's threads, three ways: pread of
// 4 MiB blocks into a thread's buffer; straight from a shared mapping (4 KiB pages); the same advised
// huge. The bound that tessera's read through GDAL (io/raster_reader.cpp) is measured against
// (bench/results/read_paths.md). Usage: read_paths FILE [REPEATS]   (warm the page cache first)
#include <fcntl.h>
#include <omp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Fold {
    long valid = 0;
    float lo = INFINITY, hi = -INFINITY;
};

void fold(const float* p, size_t n, Fold& f) {
    long v = 0;
    float lo = f.lo, hi = f.hi;
    for (size_t i = 0; i < n; ++i) {
        const float x = p[i];
        const bool ok = std::isfinite(x);
        v += ok;
        if (ok) lo = std::min(lo, x), hi = std::max(hi, x);
    }
    f.valid += v, f.lo = lo, f.hi = hi;
}

constexpr size_t kBlock = size_t{4} << 20;
constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ (Linux 5.14), where the headers predate it

long by_pread(int fd, size_t bytes) {
    long valid = 0;
    bool bad = false;
#pragma omp parallel reduction(+ : valid) reduction(|| : bad)
    {
        std::vector<float> buf(kBlock / sizeof(float));
        Fold f;
#pragma omp for schedule(dynamic)
        for (long b = 0; b < static_cast<long>((bytes + kBlock - 1) / kBlock); ++b) {
            const size_t off = static_cast<size_t>(b) * kBlock, len = std::min(kBlock, bytes - off);
            if (pread(fd, buf.data(), len, static_cast<off_t>(off)) != static_cast<ssize_t>(len)) bad = true;
            fold(buf.data(), len / sizeof(float), f);
        }
        valid += f.valid;
    }
    return bad ? -1 : valid;
}

long by_mapping(int fd, size_t bytes, bool huge) {
    void* m = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) return -1;
    if (huge) (void)madvise(m, bytes, MADV_HUGEPAGE);
    const auto* p = static_cast<const float*>(m);
    long valid = 0;
#pragma omp parallel reduction(+ : valid)
    {
        Fold f;
#pragma omp for schedule(dynamic)
        for (long b = 0; b < static_cast<long>((bytes + kBlock - 1) / kBlock); ++b) {
            const size_t off = static_cast<size_t>(b) * kBlock, len = std::min(kBlock, bytes - off);
            (void)madvise(static_cast<char*>(m) + off, len, kPopulateRead);
            fold(p + off / sizeof(float), len / sizeof(float), f);
        }
        valid += f.valid;
    }
    munmap(m, bytes);
    return valid;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: read_paths FILE [REPEATS]\n");
        return 2;
    }
    const int fd = open(argv[1], O_RDONLY);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) {
        std::fprintf(stderr, "read_paths: cannot open %s\n", argv[1]);
        return 1;
    }
    const size_t bytes = static_cast<size_t>(st.st_size);
    const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
    std::printf("%s: %.2f GB, %d threads\n", argv[1], bytes / 1e9, omp_get_max_threads());
    for (int r = 0; r < reps; ++r) {
        double t = now();
        const long a = by_pread(fd, bytes);
        const double ta = now() - t;
        t = now();
        const long b = by_mapping(fd, bytes, false);
        const double tb = now() - t;
        t = now();
        const long c = by_mapping(fd, bytes, true);
        const double tc = now() - t;
        std::printf("pread + fold %.3f s (%.1f GB/s); mapped + fold %.3f s (%.1f GB/s); advised huge %.3f s (%.1f GB/s)%s\n", ta,
                    bytes / ta / 1e9, tb, bytes / tb / 1e9, tc, bytes / tc / 1e9, a == b && b == c ? "" : "  (FOLDS DIFFER)");
    }
    close(fd);
    return 0;
}
