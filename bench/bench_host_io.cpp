// The host's rates for what a streamed run does to memory and files (issue 16): fresh arrays
// first touched on threads against arrays reused, and a file written or read as one stream,
// by threads with pwrite/pread, or by threads through a shared mapping.
//   tessera_bench_host_io DIR [GB]   (default 4 GB; files DIR/host_io.*, removed after)
#include <fcntl.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

constexpr size_t kBlock = size_t{16} << 20;

void touch(unsigned char* p, size_t n) {
    const auto blocks = static_cast<int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < blocks; ++k) {
        const size_t b = static_cast<size_t>(k) * kBlock, e = std::min(n, b + kBlock);
        std::memset(p + b, static_cast<int>(k & 0x7f), e - b);
    }
}

void copy(unsigned char* d, const unsigned char* s, size_t n) {
    const auto blocks = static_cast<int64_t>((n + kBlock - 1) / kBlock);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < blocks; ++k) {
        const size_t b = static_cast<size_t>(k) * kBlock, e = std::min(n, b + kBlock);
        std::memcpy(d + b, s + b, e - b);
    }
}

void row(const char* what, double s, size_t bytes) {
    std::printf("| %s | %.3f | %.2f |\n", what, s, static_cast<double>(bytes) / s / 1e9);
    std::fflush(stdout);
}

int open_new(const std::string& path) {
    ::unlink(path.c_str());
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
    if (fd < 0) std::perror(path.c_str()), std::exit(1);
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: tessera_bench_host_io DIR [GB]\n");
        return 2;
    }
    const std::string dir = argv[1];
    const size_t n = static_cast<size_t>((argc > 2 ? std::atof(argv[2]) : 4.0) * 1e9) / kBlock * kBlock;
    const int T = omp_get_max_threads();
    std::printf("%zu bytes, %d threads, files in %s\n\n| what | s | GB/s |\n|---|---|---|\n", n, T, dir.c_str());

    // Memory: a fresh array first touched on threads (and freed), against one reused.
    std::unique_ptr<unsigned char[]> src(new unsigned char[n]);
    touch(src.get(), n);
    for (int rep = 0; rep < 2; ++rep) {
        double t = now();
        {
            std::unique_ptr<unsigned char[]> a(new unsigned char[n]);
            touch(a.get(), n);
            row("fresh array, first touch on threads", now() - t, n);
            t = now();
        }
        row("  its free", now() - t, n);
    }
    for (int rep = 0; rep < 2; ++rep) {
        double t = now();
        void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) std::perror("mmap"), std::exit(1);
        const int advised = ::madvise(m, n, MADV_HUGEPAGE);
        touch(static_cast<unsigned char*>(m), n);
        row(advised == 0 ? "fresh array, MADV_HUGEPAGE, first touch on threads" : "fresh array (madvise failed)", now() - t, n);
        t = now();
        ::munmap(m, n);
        row("  its free", now() - t, n);
    }
    {
        std::unique_ptr<unsigned char[]> a(new unsigned char[n]);
        touch(a.get(), n);
        double t = now();
        touch(a.get(), n);
        row("reused array, memset on threads", now() - t, n);
        t = now();
        copy(a.get(), src.get(), n);
        row("reused array, copy on threads", now() - t, n);
        t = now();
        std::unique_ptr<unsigned char[]> b(new unsigned char[n]);
        copy(b.get(), src.get(), n);
        row("fresh array, copy on threads", now() - t, n);
    }

    // Writes into the page cache: each a new file, closed in the time.
    const std::string f = dir + "/host_io.bin";
    {
        const double t = now();
        const int fd = open_new(f);
        for (size_t off = 0; off < n; off += kBlock)
            if (::pwrite(fd, src.get() + off, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) std::perror("pwrite"), std::exit(1);
        ::close(fd);
        row("write, one stream (pwrite 16 MiB)", now() - t, n);
    }
    {
        const double t = now();
        const int fd = open_new(f);
        const auto blocks = static_cast<int64_t>(n / kBlock);
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < blocks; ++k) {
            const size_t off = static_cast<size_t>(k) * kBlock;
            if (::pwrite(fd, src.get() + off, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) std::perror("pwrite");
        }
        ::close(fd);
        row("write, pwrite on threads", now() - t, n);
    }
    for (int alloc = 0; alloc < 2; ++alloc) {
        const double t = now();
        const int fd = open_new(f);
        if (alloc ? ::posix_fallocate(fd, 0, static_cast<off_t>(n)) != 0 : ::ftruncate(fd, static_cast<off_t>(n)) != 0)
            std::perror("size"), std::exit(1);
        const double t_size = now() - t;
        void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) std::perror("mmap"), std::exit(1);
        copy(static_cast<unsigned char*>(m), src.get(), n);
        const double t_copy = now() - t;
        ::munmap(m, n);
        ::close(fd);
        row(alloc ? "write, mapped, copy on threads (posix_fallocate)" : "write, mapped, copy on threads (ftruncate)",
            now() - t, n);
        std::printf("|   (sizing %.3f s, through the copy %.3f s) | | |\n", t_size, t_copy);
    }
    {
        // Reads of the last file (in the page cache).
        std::unique_ptr<unsigned char[]> d(new unsigned char[n]);
        touch(d.get(), n);
        const int fd = ::open(f.c_str(), O_RDONLY);
        double t = now();
        for (size_t off = 0; off < n; off += kBlock)
            if (::pread(fd, d.get() + off, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) std::perror("pread"), std::exit(1);
        row("read (cached), one stream", now() - t, n);
        t = now();
        const auto blocks = static_cast<int64_t>(n / kBlock);
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < blocks; ++k) {
            const size_t off = static_cast<size_t>(k) * kBlock;
            if (::pread(fd, d.get() + off, kBlock, static_cast<off_t>(off)) != static_cast<ssize_t>(kBlock)) std::perror("pread");
        }
        row("read (cached), pread on threads", now() - t, n);
        t = now();
        void* m = ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0);
        copy(d.get(), static_cast<const unsigned char*>(m), n);
        ::munmap(m, n);
        row("read (cached), mapped, copy on threads", now() - t, n);
        ::close(fd);
    }
    ::unlink(f.c_str());
    return 0;
}
