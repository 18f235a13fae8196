// Result file: parallel HDF5, collective writes of each rank's window into
// chunked, compressed datasets (ARCHITECTURE.md section 7).
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/types.h"
#include "kernels/vector_memory.h"
#include "partition/comm.h"

namespace tessera {

namespace detail {
struct Failure;  // a write's verdict on one rank (io/hdf5_writer.cpp)
}

using AttrValue = std::variant<int64_t, double, std::string, std::vector<double>>;

struct Attribute {
    std::string name;
    AttrValue value;
};

// Every rank of `comm` constructs it with the same arguments (collective).
// The file is created as a unique temporary "<path>.tmp.XXXXXX" (rank 0 creates it
// exclusively, io/output_set.h) and only renamed to `path` by commit() -- or, when an
// OutputSet is active on rank 0 (CollectOutputs), handed to it to be renamed with the run's
// other outputs. Destroying an uncommitted writer closes and removes the temporary file.
// Throws InputError(path, problem) if the output directory is missing or not writable.
class Hdf5Writer {
public:
    Hdf5Writer(const std::string& path, MPI_Comm comm, int64_t rows, int64_t cols);
    ~Hdf5Writer();
    Hdf5Writer(const Hdf5Writer&) = delete;
    Hdf5Writer& operator=(const Hdf5Writer&) = delete;

    // Collective: every rank calls each write with the same name, in the same
    // order; `own` is this rank's window (may be empty), `data` row-major with
    // row stride `stride` elements. Datasets are rows x cols, chunked
    // (<= 512 x 512), shuffle + deflate (set_deflate). A "_FillValue" attribute (int64 or
    // double) is stored in the dataset's own type (netCDF-4 requires it) and is the dataset's
    // HDF5 fill value; float datasets without one get NaN.
    void write_f32(const std::string& name, const Window& own, const float* data, int64_t stride,
                   const std::vector<Attribute>& attrs);
    // A float32 dataset this one rank will write whole through a mapping (section 7): created
    // now, with `attrs`, and its chunks' pages made ready in the page cache on threads of their
    // own meanwhile, so that the write_f32 that follows (the same name and attributes) only
    // copies. Nothing where it would not be written so (several ranks, compressed, or
    // TESSERA_PREPARE_WRITE=0 for A/B studies). `threads`: how many make them ready (0: all).
    void prepare_f32(const std::string& name, const std::vector<Attribute>& attrs, int threads = 0);
    void write_u32(const std::string& name, const Window& own, const uint32_t* data, int64_t stride,
                   const std::vector<Attribute>& attrs);
    // Runs `writes` (writes of this writer, collective as ever) with each uncompressed dataset
    // written through a mapping (one rank's whole rows, or each rank's window in place) copied on
    // a thread of its own, beside the writes that follow it (section 7); every copy is done, and
    // its verdict agreed on, when this returns, so the data must live until then, not longer.
    void write_beside(const std::function<void()>& writes);
    // A uint32 dataset from labels `bytes` wide (1, 2 or 4, the same on every rank;
    // kernels/label_width.h): widened chunk by chunk where this writer compresses the chunks
    // itself (one rank, whole image), else through a 4-byte copy of the window.
    void write_labels(const std::string& name, const Window& own, const void* data, int bytes, int64_t stride,
                      const std::vector<Attribute>& attrs);
    void write_i32(const std::string& name, const Window& own, const int32_t* data, int64_t stride,
                   const std::vector<Attribute>& attrs);
    void write_i8(const std::string& name, const Window& own, const int8_t* data, int64_t stride,
                  const std::vector<Attribute>& attrs);
    void write_u8(const std::string& name, const Window& own, const uint8_t* data, int64_t stride,
                  const std::vector<Attribute>& attrs);

    // CF/netCDF-4 structure (io/cf_grid.h). Collective, same arguments on every rank.
    // A 1-D float64 coordinate variable, made an HDF5 dimension scale named `name`.
    void write_coordinate(const std::string& name, const std::vector<double>& values,
                          const std::vector<Attribute>& attrs);
    // A scalar int32 dataset (0) that carries only attributes: a CF grid-mapping variable.
    void write_scalar_variable(const std::string& name, const std::vector<Attribute>& attrs);
    // Whether a dataset `name` was written (the same on every rank).
    bool has_dataset(const std::string& name);
    // Attributes added to the dataset `name`, written before.
    void write_dataset_attributes(const std::string& name, const std::vector<Attribute>& attrs);
    // Attaches the coordinate variables `dims` (one per dimension, written before) to the
    // dataset `name` as its dimension scales (H5DS: netCDF-4's dimensions).
    void attach_dimensions(const std::string& name, const std::vector<std::string>& dims);

    // A result handed over in windows (a chunked run, docs/ARCHITECTURE.md section 5.1): a
    // write to a dataset that exists writes this window into it (the first write made it, with
    // its attributes). Off by default: then writing a dataset twice is an error. Same on every rank.
    void set_windowed(bool on) { windowed_ = on; }

    // Deflate level (with shuffle) of the datasets written next: 0 = chunked, uncompressed.
    // Default 1. Same value on every rank.
    void set_deflate(int level) { deflate_level_ = level; }

    // Root-file attributes; collective, same values on every rank.
    void write_attributes(const std::vector<Attribute>& attrs);

    // Collective: close, and rank 0 renames the temporary to path after every rank succeeded
    // (or hands it to rank 0's active OutputSet: then it stays at temporary_path()).
    void commit();

    const std::string& path() const { return path_; }
    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    const std::string& temporary_path() const { return tmp_path_; }

private:
    // Runs `step` (returns "" or what failed) on every rank and agrees on the verdict.
    void collective_step(const std::string& what, const std::function<std::string()>& step);
    // src_elem: bytes of data's elements, narrower than T only where writes_own_chunks(own) or
    // gather_.
    template <typename T>
    void write_dataset(const std::string& name, const Window& own, const T* data, int64_t stride,
                       const std::vector<Attribute>& attrs, size_t src_elem = sizeof(T));
    // This process's write of `own` into the dataset (created, with `attrs`, unless it exists and
    // may_exist): not collective where serial_. `how` says which way it went.
    template <typename T>
    detail::Failure write_window(const std::string& name, const Window& own, const T* data, int64_t stride,
                         const std::vector<Attribute>& attrs, size_t src_elem, bool may_exist, const char*& how);
    // gather_: every rank's window sent to rank 0 in bands of whole chunk rows, which rank 0 writes
    // as one rank writes (a band covered whole), else window by window.
    // `exists`: the dataset exists already (write_in_place created it).
    template <typename T>
    detail::Failure write_gathered(const std::string& name, const Window& own, const T* data, int64_t stride,
                           const std::vector<Attribute>& attrs, size_t src_elem, const char*& how, bool exists);
    // gather_, a dataset without filters: every rank writes its own window into the file's
    // allocated chunks through a shared mapping (done false: not possible, nothing written).
    template <typename T>
    detail::Failure write_in_place(const std::string& name, const Window& own, const T* data, int64_t stride,
                                   const std::vector<Attribute>& attrs, size_t src_elem, const char*& how, bool& done,
                                   bool& exists);
    // Whether this rank holds the file (every rank under MPI-IO; rank 0 alone when gathered).
    bool writer() const { return !gather_ || comm_.rank() == 0; }
    // One rank writing whole rows of chunks (the whole image, or a chunked run's window of full
    // rows, section 5.1): chunks gathered (and compressed) on the host's threads.
    bool writes_own_chunks(const Window& own) const {
        const int64_t cr = std::min<int64_t>(512, rows_);  // the chunk height (write_dataset)
        return serial_ && own.rows > 0 && own.col0 == 0 && own.cols == cols_ &&
               own.row0 % cr == 0 && (own.rows % cr == 0 || own.row0 + own.rows == rows_);
    }

    std::string path_, tmp_path_;
    Comm comm_;  // its collectives (agreements); comm_.get() for MPI-IO
    bool serial_ = false;  // one rank writes: the POSIX driver, no MPI-IO
    bool gather_ = false;  // several ranks, rank 0 the one that writes (ARCHITECTURE.md section 7)
    UntouchedVector<unsigned char> band_;  // rank 0's band when gathered, kept from dataset to dataset
    int64_t rows_, cols_;
    int64_t file_ = -1;  // hid_t
    bool committed_ = false;
    int deflate_level_ = 1;
    bool windowed_ = false;
    bool failed_together_ = false;
    std::set<std::string> prepared_;  // datasets prepare_f32 created
    bool copies_beside_ = false;                // inside write_beside
    std::vector<std::future<std::string>> copies_;  // its copies: "" or what failed
    std::future<void> populating_;    // its pages being made ready (joined before any other file work)  // a failure was thrown on every rank alike
};

// Summary of a result file for `tessera info`: datasets with shape and type,
// and every root attribute, one per line (at most 1000 of each listed; large attribute values
// summarised, not read; linear in their number). tessera_only: refuse (InputError) a file
// without the root attribute software = "tessera ...". HDF5 itself may crash on a damaged
// file: `tessera info` calls this in a child process.
std::string describe_result(const std::string& path, bool tessera_only = false);

// What `tessera info` reports of a tessera result (InputError for any other file): the datasets
// (name, shape, type), the root attributes as text (stored order, at most max_attributes), and
// from the pixels: how many have a finite /unwrapped_phase, how many of those a nonzero
// /connected_components label, the distinct labels and the `top` largest (label, pixels), most
// pixels first (ties: lower label). The datasets are read in row blocks; progress() is called
// after each (a caller's watchdog). InputError when they are missing, of other sizes or unreadable.
struct ResultSummary {
    int64_t rows = 0, cols = 0;
    int64_t finite = 0, labelled = 0, components = 0;
    std::vector<std::pair<uint32_t, int64_t>> largest;
    std::vector<std::string> datasets;  // "/name shape type"
    std::vector<std::pair<std::string, std::string>> attributes;
    int64_t more_attributes = 0;  // beyond max_attributes
};
ResultSummary summarize_result(const std::string& path, int top = 5, int max_attributes = 100,
                               const std::function<void()>& progress = {});

}  // namespace tessera
