#include "io/mapped_chunks.h"

#include <fcntl.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>

#include "kernels/ab_switch.h"
#include "kernels/lap.h"

namespace tessera {

namespace {

#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // Linux 5.14's value, where the headers predate it
#endif

// [p, p + bytes) populated writable, in calls of at most `populate_step()` bytes: one call holds
// this process's address-space lock (for reading) throughout, and a thread that maps or unmaps
// memory meanwhile (any large allocation) waits for it, and every fault queued behind that one.
// TESSERA_POPULATE_STEP=0 (A/B studies): one call for the whole range.
uint64_t populate_step() {
    static const uint64_t step = switch_is("TESSERA_POPULATE_STEP", "0") ? ~uint64_t{0} : uint64_t{8} << 20;
    return step;
}
void populate_writable(unsigned char* p, uint64_t bytes) {
    for (uint64_t at = 0; at < bytes; at += populate_step())
        (void)::madvise(p + at, std::min(populate_step(), bytes - at), kPopulateWrite);  // advice: without it (Linux < 5.14) the stores fault
}

// A file descriptor closed on every path.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// The chunk at dataset pixel (r0, c0): its part inside `area` (dataset pixels, pads included),
// from `data` (its pixel (row0, col0) at data[0]) inside the dataset's ds_rows x ds_cols, `fill` past them.
void copy_chunk_part(unsigned char* out, const Window& area, const unsigned char* data, int64_t row0, int64_t col0,
                     int64_t stride, size_t src_elem, size_t elem, int64_t ds_rows, int64_t ds_cols, const hsize_t chunk[2],
                     int64_t r0, int64_t c0, const unsigned char* fill) {
    const int64_t cr = static_cast<int64_t>(chunk[0]), cc = static_cast<int64_t>(chunk[1]);
    const int64_t y0 = std::max(r0, area.row0), y1 = std::min(r0 + cr, area.row0 + area.rows);
    const int64_t x0 = std::max(c0, area.col0), x1 = std::min(c0 + cc, area.col0 + area.cols);
    const int64_t xd = std::max(x0, std::min(x1, ds_cols));  // [x0, xd) from data, [xd, x1) fill
    for (int64_t y = y0; y < y1; ++y) {
        unsigned char* dst = out + static_cast<size_t>((y - r0) * cc + (x0 - c0)) * elem;
        int64_t x = x0;
        if (y < ds_rows) {
            const unsigned char* s =
                data + (static_cast<size_t>(y - row0) * static_cast<size_t>(stride) + static_cast<size_t>(x0 - col0)) * src_elem;
            const size_t w = static_cast<size_t>(xd - x0);
            if (src_elem == elem) {
                std::memcpy(dst, s, w * elem);
            } else {  // narrower unsigned values, zero-extended
                std::memset(dst, 0, w * elem);
                for (size_t i = 0; i < w; ++i) std::memcpy(dst + i * elem, s + i * src_elem, src_elem);
            }
            x = xd;
        }
        for (; x < x1; ++x) std::memcpy(dst + static_cast<size_t>(x - x0) * elem, fill, elem);
    }
}

// [base, base + span) of the file mapped shared at an address equal to base modulo 2 MiB, advised
// huge: the page cache then comes in folios of 2 MiB that the mapping can take whole. Through
// 4 KiB pages populated a window at a time, the stores into a fresh window cost about 50 ms a window
// more (the H200's 32768² phase in 11 windows: 1.15 s, advised huge 0.51 s), bench/results/mapped_windows.md.
struct HugeMapping {
    static constexpr uint64_t kHuge = uint64_t{1} << 21;
    unsigned char* map = nullptr;  // the file's byte `base`
    void* reserved = MAP_FAILED;
    size_t reserved_bytes = 0;
    // A null `map` where it fails; `problem` then says why.
    HugeMapping(int fd, uint64_t base, uint64_t span, std::string& problem) {
        auto failed = [&] { problem = "cannot map " + std::to_string(span) + " bytes of the file (" + std::strerror(errno) + ")"; };
        reserved_bytes = static_cast<size_t>(span + 2 * kHuge);
        reserved = ::mmap(nullptr, reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (reserved == MAP_FAILED) {
            failed();
            return;
        }
        const auto r = reinterpret_cast<uintptr_t>(reserved);
        const uintptr_t at = (r + kHuge - 1) / kHuge * kHuge + static_cast<uintptr_t>(base % kHuge);
        void* m = ::mmap(reinterpret_cast<void*>(at), span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                         static_cast<off_t>(base));
        if (m == MAP_FAILED) {
            failed();
            return;
        }
        map = static_cast<unsigned char*>(m);
        if (!switch_is("TESSERA_HUGE_MAPPING", "0")) (void)::madvise(m, span, MADV_HUGEPAGE);  // advice only
    }
    ~HugeMapping() {
        if (reserved != MAP_FAILED) ::munmap(reserved, reserved_bytes);  // the file's mapping inside it too
    }
    HugeMapping(const HugeMapping&) = delete;
    HugeMapping& operator=(const HugeMapping&) = delete;
};

// The chunks of the grid's rows [kr0, kr0 + nkr) and columns [kc0, kc0 + nkc) (row-major in
// `addr`, each `bytes` long in the file), their parts inside `area`, written through one shared
// mapping of the file on this process's threads. The space must be allocated (a store into a
// hole would fault a block at a time, and meet a full disk as SIGBUS).
MappedWrite copy_through_mapping(int fd, const std::vector<haddr_t>& addr, uint64_t bytes, int64_t kr0, int64_t kc0,
                                 int64_t nkc, const Window& area, const void* data, int64_t row0, int64_t col0,
                                 int64_t stride, size_t src_elem, size_t elem, int64_t ds_rows, int64_t ds_cols,
                                 const hsize_t chunk[2], const void* fill, std::string& problem) {
    const auto total = static_cast<int64_t>(addr.size());
    if (total == 0) return MappedWrite::written;
    haddr_t lo = HADDR_UNDEF, hi = 0;
    for (const haddr_t a : addr) lo = std::min(lo, a), hi = std::max<haddr_t>(hi, a + bytes);
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t base = lo / page * page, span = hi - base;
    const HugeMapping hm(fd, base, span, problem);
    if (!hm.map) return MappedWrite::unsupported;
    unsigned char* map = hm.map;
    const auto* src = static_cast<const unsigned char*>(data);
    const auto* fb = static_cast<const unsigned char*>(fill);
    const int64_t cr = static_cast<int64_t>(chunk[0]), cc = static_cast<int64_t>(chunk[1]);
    // Each thread a contiguous run of chunks, each stretch of it that lies together in the file
    // populated writable in one call first: threads interleaving chunk by chunk, or faulting page
    // by page, contended on the file's page cache lock (2.8 s against 0.64 s for 4.3 GB on the
    // lent H100 host).
    double populate_ms = 0, copy_ms = 0;  // TESSERA_TRACE: the slowest thread's
#pragma omp parallel reduction(max : populate_ms, copy_ms)
    {
        const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
        const int64_t k0 = total * t / T, k1 = total * (t + 1) / T;
        Lap lap;
        for (int64_t s = k0; s < k1;) {
            int64_t e = s + 1;
            while (e < k1 && addr[static_cast<size_t>(e)] == addr[static_cast<size_t>(e - 1)] + bytes) ++e;
            const uint64_t p0 = (addr[static_cast<size_t>(s)] - base) / page * page;
            const uint64_t p1 = std::min<uint64_t>(span, (addr[static_cast<size_t>(e - 1)] + bytes - base + page - 1) / page * page);
            populate_writable(map + p0, p1 - p0);
            s = e;
        }
        populate_ms = lap.next_ms();
        for (int64_t k = k0; k < k1; ++k)
            copy_chunk_part(map + (addr[static_cast<size_t>(k)] - base), area, src, row0, col0, stride, src_elem, elem,
                            ds_rows, ds_cols, chunk, (kr0 + k / nkc) * cr, (kc0 + k % nkc) * cc, fb);
        copy_ms = lap.next_ms();
    }
    if (trace_on()) std::fprintf(stderr, "tessera: mapped window: populated in %.1f ms, copied in %.1f ms (slowest thread)\n", populate_ms, copy_ms);
    return MappedWrite::written;
}

// Space for [lo, hi) of the file; `unsupported` where the file system cannot allocate ahead.
MappedWrite allocate(int fd, uint64_t lo, uint64_t hi, std::string& problem) {
    if (hi <= lo || ::fallocate(fd, 0, static_cast<off_t>(lo), static_cast<off_t>(hi - lo)) == 0) return MappedWrite::written;
    if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL) return MappedWrite::unsupported;
    problem = "cannot allocate " + std::to_string(hi - lo) + " bytes for the chunks (" + std::strerror(errno) + ")";
    return MappedWrite::failed;
}

// The end in the file of all the chunks of a rows x cols dataset from `first` (the implicit index).
uint64_t chunks_end(haddr_t first, int64_t rows, int64_t cols, const hsize_t chunk[2], size_t elem) {
    const int64_t cr = static_cast<int64_t>(chunk[0]), cc = static_cast<int64_t>(chunk[1]);
    return first + static_cast<uint64_t>(((rows + cr - 1) / cr) * ((cols + cc - 1) / cc)) * static_cast<uint64_t>(cr * cc) * elem;
}

MappedWrite open_rw(const std::string& path, Fd& f, std::string& problem) {
    f.fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (f.fd >= 0) return MappedWrite::written;
    problem = "cannot open for mapped writes (" + std::string(std::strerror(errno)) + ")";
    return MappedWrite::failed;
}

// The place of the chunk at dataset pixel off, HADDR_UNDEF where it has no space of `bytes`.
haddr_t chunk_place(hid_t dset, int64_t r, int64_t c, uint64_t bytes) {
    const hsize_t off[2] = {static_cast<hsize_t>(r), static_cast<hsize_t>(c)};
    unsigned mask = 0;
    haddr_t a = HADDR_UNDEF;
    hsize_t size = 0;
    return H5Dget_chunk_info_by_coord(dset, off, &mask, &a, &size) >= 0 && size == bytes ? a : HADDR_UNDEF;
}

}  // namespace

bool mapped_writes_enabled() {
    static const bool on = !switch_is("TESSERA_MAPPED_WRITE", "0");
    return on;
}

bool takes_mapped_chunks(hid_t dset) {
    const hid_t dcpl = H5Dget_create_plist(dset);
    if (dcpl < 0) return false;
    H5D_alloc_time_t at = H5D_ALLOC_TIME_ERROR;
    H5D_fill_time_t ft = H5D_FILL_TIME_ERROR;
    const bool ok = H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_nfilters(dcpl) == 0 &&
                    H5Pget_alloc_time(dcpl, &at) >= 0 && at == H5D_ALLOC_TIME_EARLY &&
                    H5Pget_fill_time(dcpl, &ft) >= 0 && ft == H5D_FILL_TIME_NEVER;
    H5Pclose(dcpl);
    return ok;
}

haddr_t implicit_first_chunk(hid_t dset, int64_t rows, int64_t cols, const hsize_t chunk[2], size_t elem) {
    const int64_t cr = static_cast<int64_t>(chunk[0]), cc = static_cast<int64_t>(chunk[1]);
    const int64_t nr = (rows + cr - 1) / cr, nc = (cols + cc - 1) / cc, total = nr * nc;
    const uint64_t bytes = static_cast<uint64_t>(cr * cc) * elem;
    if (total <= 0) return HADDR_UNDEF;
    const haddr_t first = chunk_place(dset, 0, 0, bytes);
    if (total == 1 || first == HADDR_UNDEF) return first;
    H5D_chunk_index_t index{};
    if (H5Dget_chunk_index_type(dset, &index) < 0 || index != H5D_CHUNK_IDX_NONE) return HADDR_UNDEF;
    const haddr_t last = chunk_place(dset, (nr - 1) * cr, (nc - 1) * cc, bytes);
    return last == first + static_cast<haddr_t>(total - 1) * bytes ? first : HADDR_UNDEF;
}

MappedWrite allocate_chunks(const std::string& path, haddr_t first, int64_t rows, int64_t cols, const hsize_t chunk[2],
                            size_t elem, std::string& problem) {
    Fd f;
    if (open_rw(path, f, problem) != MappedWrite::written) return MappedWrite::failed;
    return allocate(f.fd, first, chunks_end(first, rows, cols, chunk, elem), problem);
}

MappedWrite populate_chunks(const std::string& path, haddr_t first, int64_t rows, int64_t cols, const hsize_t chunk[2],
                            size_t elem, int threads, std::string& problem) {
    const uint64_t end = chunks_end(first, rows, cols, chunk, elem);
    Fd f;
    if (open_rw(path, f, problem) != MappedWrite::written) return MappedWrite::failed;
    if (const MappedWrite a = allocate(f.fd, first, end, problem); a != MappedWrite::written) return a;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)), base = first / page * page, span = end - base;
    const HugeMapping hm(f.fd, base, span, problem);
    if (!hm.map) return MappedWrite::unsupported;
    // Each thread a contiguous stretch of whole huge pages (see copy_through_mapping).
    const uint64_t step = HugeMapping::kHuge;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
    {
        const uint64_t t = static_cast<uint64_t>(omp_get_thread_num()), T = static_cast<uint64_t>(omp_get_num_threads());
        const uint64_t n = (span + step - 1) / step, p0 = std::min(span, n * t / T * step), p1 = std::min(span, n * (t + 1) / T * step);
        if (p1 > p0) populate_writable(hm.map + p0, p1 - p0);
    }
    return MappedWrite::written;
}

MappedWrite write_mapped_window(const std::string& path, haddr_t first, int64_t ds_rows, int64_t ds_cols,
                                const hsize_t chunk[2], size_t elem, const Window& w, const void* data, int64_t stride,
                                size_t src_elem, const void* fill, std::string& problem) {
    if (w.rows <= 0 || w.cols <= 0) return MappedWrite::written;
    const int64_t cr = static_cast<int64_t>(chunk[0]), cc = static_cast<int64_t>(chunk[1]);
    const int64_t nc_all = (ds_cols + cc - 1) / cc;
    const uint64_t bytes = static_cast<uint64_t>(cr * cc) * elem;
    // The window with the pads past the dataset's edges it ends.
    Window area = w;
    if (w.row0 + w.rows == ds_rows) area.rows = (ds_rows + cr - 1) / cr * cr - w.row0;
    if (w.col0 + w.cols == ds_cols) area.cols = (ds_cols + cc - 1) / cc * cc - w.col0;
    const int64_t kr0 = area.row0 / cr, kr1 = (area.row0 + area.rows - 1) / cr;
    const int64_t kc0 = area.col0 / cc, kc1 = (area.col0 + area.cols - 1) / cc, nkc = kc1 - kc0 + 1;
    std::vector<haddr_t> addr(static_cast<size_t>((kr1 - kr0 + 1) * nkc));
    for (int64_t k = 0; k < static_cast<int64_t>(addr.size()); ++k)
        addr[static_cast<size_t>(k)] = first + static_cast<haddr_t>((kr0 + k / nkc) * nc_all + kc0 + k % nkc) * bytes;
    Fd f;
    if (open_rw(path, f, problem) != MappedWrite::written) return MappedWrite::failed;
    const MappedWrite m = copy_through_mapping(f.fd, addr, bytes, kr0, kc0, nkc, area, data, w.row0, w.col0, stride,
                                               src_elem, elem, ds_rows, ds_cols, chunk, fill, problem);
    return m == MappedWrite::unsupported ? MappedWrite::failed : m;  // the space was allocated: a map that fails is a failure
}

MappedWrite place_mapped_chunks(const std::string& path, hid_t dset, int64_t rows, int64_t cols, size_t elem,
                                const hsize_t chunk[2], int64_t row0, PlacedChunks& out, std::string& problem) {
    const int64_t cr = static_cast<int64_t>(chunk[0]), cc = static_cast<int64_t>(chunk[1]);
    const int64_t nr = (rows + cr - 1) / cr, nc = (cols + cc - 1) / cc, total = nr * nc;
    const uint64_t bytes = static_cast<uint64_t>(cr * cc) * elem;
    out = PlacedChunks{{}, row0, rows, cols, elem, {chunk[0], chunk[1]}, false, nullptr};
    if (total == 0) return MappedWrite::written;
    // Each chunk's place in the file, as the library allocated it at the dataset's creation.
    // HDF5 1.10 finds a chunk by walking the index up to it: looking up a window's n chunks took
    // O(n^2) (0.2-1.4 s for 4 968 chunks on the lent H100 host). In the implicit index (the file
    // format's: chunk i of the row-major chunk grid at first + i * bytes) the window's whole rows of
    // chunks are consecutive: their places are computed (implicit_first_chunk checks the layout).
    std::vector<haddr_t>& addr = out.addr;
    addr.resize(static_cast<size_t>(total));
    hsize_t dims[2] = {0, 0};
    const hid_t space = H5Dget_space(dset);
    const bool two_d = space >= 0 && H5Sget_simple_extent_ndims(space) == 2 && H5Sget_simple_extent_dims(space, dims, nullptr) == 2;
    if (space >= 0) H5Sclose(space);
    const haddr_t first = two_d ? implicit_first_chunk(dset, static_cast<int64_t>(dims[0]), cols, chunk, elem) : HADDR_UNDEF;
    out.computed = first != HADDR_UNDEF;
    for (int64_t k = 0; k < total && out.computed; ++k)
        addr[static_cast<size_t>(k)] = first + static_cast<haddr_t>((row0 / cr) * nc + k) * bytes;
    for (int64_t k = 0; k < total && !out.computed; ++k)
        if ((addr[static_cast<size_t>(k)] = chunk_place(dset, row0 + (k / nc) * cr, (k % nc) * cc, bytes)) == HADDR_UNDEF)
            return MappedWrite::unsupported;
    haddr_t lo = HADDR_UNDEF, hi = 0;
    for (const haddr_t a : addr) lo = std::min(lo, a), hi = std::max<haddr_t>(hi, a + bytes);

    Fd f;
    if (open_rw(path, f, problem) != MappedWrite::written) return MappedWrite::failed;
    // The space first: where the file system cannot, the library writes instead.
    if (const MappedWrite a = allocate(f.fd, lo, hi, problem); a != MappedWrite::written) return a;
    out.fd = std::shared_ptr<const int>(new int(f.fd), [](const int* fd) {
        ::close(*fd);
        delete fd;
    });
    f.fd = -1;
    return MappedWrite::written;
}

MappedWrite copy_placed_chunks(const PlacedChunks& p, const void* data, int64_t stride, size_t src_elem, const void* fill,
                               std::string& problem) {
    if (p.addr.empty()) return MappedWrite::written;
    if (src_elem == 0) src_elem = p.elem;
    const int64_t cr = static_cast<int64_t>(p.chunk[0]), cc = static_cast<int64_t>(p.chunk[1]);
    const int64_t nr = (p.rows + cr - 1) / cr, nc = (p.cols + cc - 1) / cc;
    const uint64_t bytes = static_cast<uint64_t>(cr * cc) * p.elem;
    Lap lap;
    // The whole chunk rows [row0, row0 + nr * cr): data's rows, then (a window that ends the dataset) fill.
    const Window area{p.row0, 0, nr * cr, nc * cc};
    const MappedWrite m = copy_through_mapping(*p.fd, p.addr, bytes, p.row0 / cr, 0, nc, area, data, p.row0, 0, stride,
                                               src_elem, p.elem, p.row0 + p.rows, p.cols, p.chunk, fill, problem);
    if (m == MappedWrite::written && trace_on())
        std::fprintf(stderr, "tessera: mapped chunks: %lld places %s, filled and unmapped in %.1f ms\n",
                     static_cast<long long>(p.addr.size()), p.computed ? "computed" : "looked up", lap.next_ms());
    return m;
}

}  // namespace tessera
