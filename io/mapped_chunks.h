// The chunks of an unfiltered HDF5 dataset allocated at its creation, written by the host's
// threads through a shared mapping of the file (ARCHITECTURE.md section 7): the library writes
// one stream (4.3 GB in 1.3-2.1 s on the lent H100 host), the threads 0.55-0.7 s
// (bench/results/gpu_h100_host_io.md).
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/types.h"

namespace tessera {

// Whether mapped writes are tried (TESSERA_MAPPED_WRITE=0: never, for A/B studies).
bool mapped_writes_enabled();

// Whether `dset` can take place_mapped_chunks: chunked, no filters, space allocated at creation
// and no fill written (H5D_ALLOC_TIME_EARLY, H5D_FILL_TIME_NEVER).
bool takes_mapped_chunks(hid_t dset);

enum class MappedWrite { written, unsupported, failed };

// Rows [row0, row0 + rows) of `dset` (cols wide, chunks chunk[0] x chunk[1] of `elem` bytes;
// row0 a multiple of chunk[0], rows too unless the window ends the dataset), in two halves so
// that the copy may run on a thread of its own beside the library's next calls (section 7):
// place_mapped_chunks finds each chunk's place (the library's, on the calling thread) and
// allocates their space in the file `path` that holds the dataset (open in the library through
// the POSIX driver); copy_placed_chunks copies from `data` (row stride `stride` elements of
// src_elem bytes, zero-extended to elem), padded with `fill`, through a mapping (POSIX only).
// `unsupported`: nothing written (a chunk not allocated, the file system cannot allocate space
// ahead, or the file cannot be mapped): the caller writes through the library. `failed`:
// `problem` says what.
struct PlacedChunks {
    std::vector<haddr_t> addr;  // the window's chunks, row-major
    int64_t row0 = 0, rows = 0, cols = 0;
    size_t elem = 0;
    hsize_t chunk[2] = {0, 0};
    bool computed = false;          // the places computed (implicit index), not looked up
    std::shared_ptr<const int> fd;  // the file, open for writing; closed with the last holder
};
MappedWrite place_mapped_chunks(const std::string& path, hid_t dset, int64_t rows, int64_t cols, size_t elem,
                                const hsize_t chunk[2], int64_t row0, PlacedChunks& out, std::string& problem);
MappedWrite copy_placed_chunks(const PlacedChunks& p, const void* data, int64_t stride, size_t src_elem, const void* fill,
                               std::string& problem);

// Where every chunk of an unfiltered dataset (rows x cols, chunks chunk[0] x chunk[1] of `elem`
// bytes) lies in its file when the index is implicit (all allocated at creation, chunk k of the
// row-major chunk grid at first + k * chunk bytes): `first`, else HADDR_UNDEF.
haddr_t implicit_first_chunk(hid_t dset, int64_t rows, int64_t cols, const hsize_t chunk[2], size_t elem);

// Space in the file `path` for all the chunks of that layout (written: done, or
// `unsupported`: the file system cannot allocate ahead; `failed`: `problem` says why).
MappedWrite allocate_chunks(const std::string& path, haddr_t first, int64_t rows, int64_t cols, const hsize_t chunk[2],
                            size_t elem, std::string& problem);

// The pages of all the chunks of that layout from `first` made present and writable in the page
// cache (their space allocated in the file first), on `threads` of this process's threads (0: as
// many as OpenMP gives), and unmapped: a later write of them only copies. POSIX calls only (no
// HDF5): any thread may run it beside the library. Advice: `unsupported` or `failed` leave the
// write to find what is wrong.
MappedWrite populate_chunks(const std::string& path, haddr_t first, int64_t rows, int64_t cols, const hsize_t chunk[2],
                            size_t elem, int threads, std::string& problem);

// Window `w` of that dataset (ds_rows x ds_cols, space allocated: allocate_chunks) from `data`
// (row stride `stride` elements of src_elem bytes, zero-extended to elem) into the file through a
// shared mapping, on this process's threads; the chunks' parts past the dataset's edges that the
// window ends take `fill`. Several processes of one node may write disjoint windows of one
// dataset at once (ARCHITECTURE.md section 7). `failed`: `problem` says why.
MappedWrite write_mapped_window(const std::string& path, haddr_t first, int64_t ds_rows, int64_t ds_cols,
                                const hsize_t chunk[2], size_t elem, const Window& w, const void* data, int64_t stride,
                                size_t src_elem, const void* fill, std::string& problem);

}  // namespace tessera
