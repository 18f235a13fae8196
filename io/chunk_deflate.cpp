#include "io/chunk_deflate.h"

#include <isa-l/igzip_lib.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "kernels/lap.h"

namespace tessera {

void gather_chunk(unsigned char* out, const unsigned char* data, int64_t stride, int64_t rows, int64_t cols,
                  size_t src_elem, size_t elem, const hsize_t chunk[2], int64_t r0, int64_t c0,
                  const unsigned char* fill) {
    const size_t cr = chunk[0], cc = chunk[1];
    for (size_t y = 0; y < cr; ++y) {
        unsigned char* dst = out + y * cc * elem;
        const int64_t r = r0 + static_cast<int64_t>(y);
        const size_t w = r < rows ? static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(cc), cols - c0)) : 0;
        const unsigned char* s = data + (static_cast<size_t>(r) * static_cast<size_t>(stride) + static_cast<size_t>(c0)) * src_elem;
        if (src_elem == elem) {
            if (w > 0) std::memcpy(dst, s, w * elem);
        } else {
            std::memset(dst, 0, w * elem);
            for (size_t x = 0; x < w; ++x) std::memcpy(dst + x * elem, s + x * src_elem, src_elem);
        }
        for (size_t x = w; x < cc; ++x) std::memcpy(dst + x * elem, fill, elem);
    }
}

size_t deflate_bytes(const unsigned char* in, size_t n, int level, std::vector<unsigned char>& out) {
    out.resize(compressBound(static_cast<uLong>(n)) + 1024);  // ISA-L's stored blocks fit zlib's bound
    auto by_zlib = [&] {
        uLongf len = out.size();
        return compress2(out.data(), &len, in, static_cast<uLong>(n), level) == Z_OK ? static_cast<size_t>(len) : 0;
    };
    if (level != 1 || n > UINT32_MAX / 2) return by_zlib();
    thread_local std::vector<uint8_t> level_buf(ISAL_DEF_LVL1_DEFAULT);
    isal_zstream z;
    isal_deflate_init(&z);
    z.level = 1, z.level_buf = level_buf.data(), z.level_buf_size = static_cast<uint32_t>(level_buf.size());
    z.gzip_flag = IGZIP_ZLIB, z.end_of_stream = 1, z.flush = NO_FLUSH;
    z.next_in = const_cast<uint8_t*>(in), z.avail_in = static_cast<uint32_t>(n);
    z.next_out = out.data(), z.avail_out = static_cast<uint32_t>(out.size());
    // Where ISA-L did not finish (no known input does), zlib's level 1 makes the same format.
    if (isal_deflate(&z) != COMP_OK || z.internal_state.state != ZSTATE_END) return by_zlib();
    return z.total_out;
}

namespace {

// One chunk: as it is (level 0: gather_chunk), or byte-shuffled as H5Z_filter_shuffle does
// (byte j of element i goes to j * n + i) straight from the source, a plane at a time (bytes
// past src_elem zero, padding fill's), and deflated in H5Z_filter_deflate's format (deflate_bytes).
// Whether the chunk at (r0, c0) lies inside the image and holds one value; that value's bytes.
bool uniform_chunk(const unsigned char* data, int64_t stride, int64_t rows, int64_t cols, size_t src_elem,
                   const hsize_t chunk[2], int64_t r0, int64_t c0, uint64_t& value) {
    const int64_t cr = static_cast<int64_t>(chunk[0]), cc = static_cast<int64_t>(chunk[1]);
    if (src_elem > sizeof(uint64_t) || r0 + cr > rows || c0 + cc > cols) return false;
    const unsigned char* first = data + (static_cast<size_t>(r0) * static_cast<size_t>(stride) + static_cast<size_t>(c0)) * src_elem;
    value = 0;
    std::memcpy(&value, first, src_elem);
    for (int64_t x = 1; x < cc; ++x)  // the first row: every element the first's bytes
        if (std::memcmp(first + static_cast<size_t>(x) * src_elem, first, src_elem) != 0) return false;
    for (int64_t y = 1; y < cr; ++y)  // every other row: the first row
        if (std::memcmp(first + static_cast<size_t>(y) * static_cast<size_t>(stride) * src_elem, first,
                        static_cast<size_t>(cc) * src_elem) != 0)
            return false;
    return true;
}

bool pack_chunk(const unsigned char* data, int64_t stride, int64_t rows, int64_t cols, size_t src_elem, size_t elem,
                const hsize_t chunk[2], int64_t r0, int64_t c0, int level, const unsigned char* fill,
                std::vector<unsigned char>& shuffled, std::vector<unsigned char>& scratch, std::vector<unsigned char>& out,
                std::unordered_map<uint64_t, std::vector<unsigned char>>& uniform) {
    const size_t cr = chunk[0], cc = chunk[1], n = cr * cc;
    if (level == 0) {  // a dataset without filters: the chunk as it is
        out.resize(n * elem);
        gather_chunk(out.data(), data, stride, rows, cols, src_elem, elem, chunk, r0, c0, fill);
        return true;
    }
    // A chunk of one value (most label chunks: a component's inside) compresses to the same bytes
    // as every other chunk of that value: compressed once a thread and a window.
    uint64_t value = 0;
    const bool one_value = uniform_chunk(data, stride, rows, cols, src_elem, chunk, r0, c0, value);
    if (one_value) {
        if (const auto it = uniform.find(value); it != uniform.end()) {
            out = it->second;
            return true;
        }
    }
    shuffled.resize(n * elem);
    for (size_t j = 0; j < elem; ++j) {
        unsigned char* plane = shuffled.data() + j * n;
        for (size_t y = 0; y < cr; ++y) {
            unsigned char* dst = plane + y * cc;
            const int64_t r = r0 + static_cast<int64_t>(y);
            const size_t w = r < rows ? static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(cc), cols - c0)) : 0;
            const unsigned char* s =
                data + (static_cast<size_t>(r) * static_cast<size_t>(stride) + static_cast<size_t>(c0)) * src_elem + j;
            if (j >= src_elem) {
                std::memset(dst, 0, w);
            } else if (src_elem == 1) {
                if (w > 0) std::memcpy(dst, s, w);
            } else {
                for (size_t x = 0; x < w; ++x) dst[x] = s[x * src_elem];
            }
            std::memset(dst + w, fill[j], cc - w);
        }
    }
    // Compressed into the thread's scratch, kept at its size (a batch holds many chunks).
    const size_t len = deflate_bytes(shuffled.data(), n * elem, level, scratch);
    if (len == 0) return false;
    out.assign(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(len));
    if (one_value) uniform.emplace(value, out);
    return true;
}

}  // namespace

std::string write_deflated_chunks(hid_t dset, const void* data, int64_t stride, int64_t rows, int64_t cols,
                                  size_t elem, const hsize_t chunk[2], int level, const void* fill, size_t src_elem,
                                  int64_t row0) {
    static_assert(std::endian::native == std::endian::little, "zero-extension by bytes needs a little-endian host");
    if (src_elem == 0) src_elem = elem;
    const int64_t nr = (rows + static_cast<int64_t>(chunk[0]) - 1) / static_cast<int64_t>(chunk[0]);
    const int64_t nc = (cols + static_cast<int64_t>(chunk[1]) - 1) / static_cast<int64_t>(chunk[1]);
    const int64_t total = nr * nc;
    // Batches of chunks keep the bytes in memory bounded: 64 chunks as they are, or 256 MB of
    // chunks before compression (a few rows of chunks: work enough for every thread).
    const int64_t chunk_bytes = static_cast<int64_t>(chunk[0] * chunk[1] * elem);
    const int64_t batch = std::max<int64_t>(nc, level > 0 ? std::max<int64_t>(64, (int64_t{256} << 20) / chunk_bytes) : 64);
    std::vector<std::vector<unsigned char>> out(static_cast<size_t>(std::min(batch, total)));
    const auto* src = static_cast<const unsigned char*>(data);
    const auto* fb = static_cast<const unsigned char*>(fill);
    double packed_ms = 0, written_ms = 0;  // TESSERA_TRACE
    Lap lap;
    for (int64_t b0 = 0; b0 < total; b0 += batch) {
        const int64_t b1 = std::min(total, b0 + batch);
        int bad = 0;
#pragma omp parallel reduction(| : bad)
        {
            std::vector<unsigned char> shuffled, scratch;
            std::unordered_map<uint64_t, std::vector<unsigned char>> uniform;
#pragma omp for schedule(dynamic)
            for (int64_t k = b0; k < b1; ++k) {
                const int64_t r0 = (k / nc) * static_cast<int64_t>(chunk[0]), c0 = (k % nc) * static_cast<int64_t>(chunk[1]);
                if (!pack_chunk(src, stride, rows, cols, src_elem, elem, chunk, r0, c0, level, fb, shuffled,
                                scratch, out[static_cast<size_t>(k - b0)], uniform))
                    bad = 1;
            }
        }
        if (bad) return "could not deflate a chunk";
        packed_ms += lap.next_ms();
        for (int64_t k = b0; k < b1; ++k) {
            const hsize_t off[2] = {static_cast<hsize_t>(row0 + (k / nc) * static_cast<int64_t>(chunk[0])),
                                    static_cast<hsize_t>((k % nc) * static_cast<int64_t>(chunk[1]))};
            const std::vector<unsigned char>& c = out[static_cast<size_t>(k - b0)];
            if (H5Dwrite_chunk(dset, H5P_DEFAULT, 0, off, c.size(), c.data()) < 0) return "cannot write a chunk";
        }
        written_ms += lap.next_ms();
    }
    if (trace_on()) std::fprintf(stderr, "tessera: deflated chunks: packed %.1f ms, written %.1f ms\n", packed_ms, written_ms);
    return "";
}

}  // namespace tessera
