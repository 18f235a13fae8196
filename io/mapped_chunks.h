// The chunks of an unfiltered HDF5 dataset allocated at its creation, written by the host's
// threads through a shared mapping of the file (ARCHITECTURE.md section 7): the library writes
// one stream (4.3 GB in 1.3-2.1 s on the lent H100 host), the threads 0.55-0.7 s
// (bench/results/gpu_h100_host_io.md).
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// Whether mapped writes are tried (TESSERA_MAPPED_WRITE=0: never, for A/B studies).
bool mapped_writes_enabled();

// Whether `dset` can take write_mapped_chunks: chunked, no filters, space allocated at creation
// and no fill written (H5D_ALLOC_TIME_EARLY, H5D_FILL_TIME_NEVER).
bool takes_mapped_chunks(hid_t dset);

enum class MappedWrite { written, unsupported, failed };

// Rows [row0, row0 + rows) of an unfiltered dataset's chunks (cols wide, chunks chunk[0] x
// chunk[1] of `elem` bytes; row0 a multiple of chunk[0], rows too unless the window ends the
// dataset), their file space allocated and mapped for writing: map_chunks makes it (the library's
// calls), fill() needs no library call, so it may run on another thread while the library writes
// other datasets of the file (section 7). Unmapped and closed when destroyed.
class MappedChunks {
public:
    MappedChunks() = default;
    ~MappedChunks();
    MappedChunks(const MappedChunks&) = delete;
    MappedChunks& operator=(const MappedChunks&) = delete;

    // `data` (row stride `stride` elements of src_elem bytes, 0 = elem, zero-extended to elem)
    // into the chunks on the host's threads, padded with `fill` (elem bytes) past the rows.
    void fill(const void* data, int64_t stride, size_t src_elem, const void* fill) const;

private:
    friend MappedWrite map_chunks(const std::string&, hid_t, int64_t, int64_t, size_t, const hsize_t[2], int64_t,
                                  MappedChunks&, std::string&);
    int fd_ = -1;
    unsigned char* map_ = nullptr;
    uint64_t base_ = 0, span_ = 0, page_ = 0, bytes_ = 0;
    std::vector<haddr_t> addr_;  // each chunk's place in the file, row-major
    int64_t rows_ = 0, cols_ = 0, nc_ = 0;
    size_t elem_ = 0;
    hsize_t chunk_[2] = {0, 0};
};

// Maps the chunks of rows [row0, row0 + rows) of `dset` in the file `path` that holds it (open
// in the library through the POSIX driver) into `out`. `unsupported`: nothing done (a chunk not
// allocated, or the file system cannot allocate space ahead): the caller writes through the
// library. `failed`: `problem` says what.
MappedWrite map_chunks(const std::string& path, hid_t dset, int64_t rows, int64_t cols, size_t elem,
                       const hsize_t chunk[2], int64_t row0, MappedChunks& out, std::string& problem);

}  // namespace tessera
