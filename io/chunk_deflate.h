// Shuffle + deflate of a chunked dataset's chunks on the host's threads, written with
// H5Dwrite_chunk: what HDF5's shuffle and deflate filters do chunk by chunk on one thread
// (ARCHITECTURE.md section 7), so that a one-rank result file is not bound by one core's zlib;
// level 1 deflated by ISA-L (the same zlib stream format, any reader inflates it).
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// The chunk at (r0, c0) of the rows x cols image `data` into `out` (chunk[0] x chunk[1]
// elements of `elem` bytes): src_elem-byte elements zero-extended to elem, padded with `fill`
// past the image.
void gather_chunk(unsigned char* out, const unsigned char* data, int64_t stride, int64_t rows, int64_t cols,
                  size_t src_elem, size_t elem, const hsize_t chunk[2], int64_t r0, int64_t c0,
                  const unsigned char* fill);

// `n` bytes deflated in the zlib stream format (what H5Z_filter_deflate reads) into `out`, grown to
// fit: the length, or 0 where it failed. Level 1 through ISA-L's level 1 (section 7: 10-15x zlib's
// speed on label chunks, and smaller), other levels through zlib's, as the user chose them.
size_t deflate_bytes(const unsigned char* in, size_t n, int level, std::vector<unsigned char>& out);

// The rows x cols image `data` (row stride `stride` elements of `src_elem` bytes, 0 =
// elem: unsigned integers narrower than the dataset's are zero-extended to its `elem` bytes)
// into rows [row0, row0 + rows) of `dset`, a dataset cols wide with chunks chunk[0] x chunk[1]
// and the filters shuffle then deflate(level), or none (level 0: the chunks gathered on the
// threads and written as they are); row0 is a multiple of chunk[0], and rows too
// unless the window ends the dataset. Chunks past the rows are padded with `fill` (elem
// bytes). Returns "" or what failed.
std::string write_deflated_chunks(hid_t dset, const void* data, int64_t stride, int64_t rows, int64_t cols,
                                  size_t elem, const hsize_t chunk[2], int level, const void* fill, size_t src_elem = 0,
                                  int64_t row0 = 0);

}  // namespace tessera
