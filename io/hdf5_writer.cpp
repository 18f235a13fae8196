// Parallel HDF5 result writer (ARCHITECTURE.md section 7): every rank writes its
// own window of each dataset collectively into a chunked, shuffle+deflate
// compressed dataset of a unique temporary "<path>.tmp.XXXXXX" (io/output_set.h: created
// exclusively by rank 0, its name broadcast); commit() renames it to `path` only after every
// rank closed the file successfully (or leaves it to the active OutputSet of rank 0).
//
// Error discipline: every failure is agreed on by all ranks of the communicator
// (one MPI_Allreduce, plus a broadcast of the message on the failure path) before
// anything is thrown, so every rank throws the same exception with the same text
// and no rank is left waiting in a collective call.
#include "io/hdf5_writer.h"

#include <hdf5.h>
#include <hdf5_hl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "io/chunk_deflate.h"
#include "io/input_error.h"
#include "io/mapped_chunks.h"
#include "io/output_set.h"
#include "kernels/ab_switch.h"
#include "kernels/label_width.h"
#include "kernels/lap.h"
#include "kernels/vector_memory.h"
#include "partition/comm.h"

namespace tessera {

namespace detail {
enum class FailKind : int { kNone = 0, kInput = 1, kRuntime = 2, kInvalidArg = 3, kLogic = 4 };

struct Failure {
    FailKind kind = FailKind::kNone;
    std::string message;  // for kInput: the problem only (the file is added when thrown)
    explicit operator bool() const { return kind != FailKind::kNone; }
};
}  // namespace detail

namespace {

// ---------------------------------------------------------------------------
// HDF5 handles and error text

// Owns one hid_t and closes it with the matching H5?close.
class Handle {
public:
    Handle() = default;
    Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            reset(o.id_, o.closer_);
            o.id_ = -1;
        }
        return *this;
    }
    ~Handle() { reset(); }
    void reset(hid_t id = -1, herr_t (*closer)(hid_t) = nullptr) {
        if (id_ >= 0 && closer_) closer_(id_);
        id_ = id;
        closer_ = closer;
    }
    hid_t get() const { return id_; }
    bool ok() const { return id_ >= 0; }

private:
    hid_t id_ = -1;
    herr_t (*closer_)(hid_t) = nullptr;
};

void silence_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// The innermost entry of the current HDF5 error stack, e.g.
// "H5Dcreate2: unable to create dataset (already exists)"; empty when the stack is empty.
std::string hdf5_error_detail() {
    struct Acc {
        std::string text;
    } acc;
    H5Ewalk2(
        H5E_DEFAULT, H5E_WALK_UPWARD,
        [](unsigned n, const H5E_error2_t* e, void* data) -> herr_t {
            if (n != 0) return 0;  // upward walk: entry 0 is the innermost
            auto* a = static_cast<Acc*>(data);
            char minor[128] = "";
            H5Eget_msg(e->min_num, nullptr, minor, sizeof minor);
            a->text = std::string(e->func_name ? e->func_name : "?") + ": " +
                      (e->desc ? e->desc : "") + (minor[0] ? std::string(" (") + minor + ")" : "");
            return 0;
        },
        &acc);
    H5Eclear2(H5E_DEFAULT);
    return acc.text;
}

// "what failed" + HDF5's innermost reason.
std::string hdf5_failure(const std::string& what) {
    std::string detail = hdf5_error_detail();
    return detail.empty() ? what : what + ": " + detail;
}

// ---------------------------------------------------------------------------
// Agreement across ranks

using detail::FailKind;
using detail::Failure;

// Collective: returns the failure of the lowest failing rank on every rank
// (kNone everywhere when no rank failed). Costs one MPI_Allreduce on success.
Failure agree(Comm& comm, const Failure& local) {
    const int64_t none = INT_MAX;
    const int64_t first64 = comm.min(local ? int64_t{comm.rank()} : none);
    if (first64 == none) return {};
    const int first = static_cast<int>(first64);
    int kind = static_cast<int>(local.kind);
    comm.bcast(kind, first);
    Failure out;
    out.kind = static_cast<FailKind>(kind);
    if (comm.rank() == first) out.message = local.message;
    comm.bcast(out.message, first);
    return out;
}

// A mapped copy (POSIX calls only: copy(e) is false with what failed in e) on a thread of its
// own beside the library (Hdf5Writer::write_beside): "" or the failure, `where` first.
template <class Copy>
std::future<std::string> copy_on_a_thread(const std::string& where, Copy copy) {
    return std::async(std::launch::async, [where, copy = std::move(copy)]() -> std::string {
        try {
            std::string e;
            return copy(e) ? std::string() : where + ": " + e;
        } catch (const std::exception& x) {
            return where + ": " + x.what();
        }
    });
}

[[noreturn]] void throw_failure(const Failure& f, const std::string& path) {
    switch (f.kind) {
        case FailKind::kInput: throw InputError(path, f.message);
        case FailKind::kInvalidArg: throw std::invalid_argument(f.message);
        case FailKind::kLogic: throw std::logic_error(f.message);
        default: throw std::runtime_error(f.message);
    }
}

bool mpi_usable() {
    int finalized = 0, initialized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized;
}

// ---------------------------------------------------------------------------
// Output directory check (rank 0 only)

std::string check_output_dir(const std::string& path) {
    namespace fs = std::filesystem;
    std::string dir = fs::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) {
        if (errno == ENOTDIR) return "output directory '" + dir + "' is not a directory";
        if (errno == EACCES) return "output directory '" + dir + "' is not accessible";
        return "output directory '" + dir + "' does not exist";
    }
    if (!S_ISDIR(st.st_mode)) return "output directory '" + dir + "' is not a directory";
    if (access(dir.c_str(), W_OK | X_OK) != 0)
        return "output directory '" + dir + "' is not writable";
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        return S_ISDIR(st.st_mode) ? "is a directory" : "exists and is not a regular file";
    // access() says yes to root on any directory that is not on a read-only file system
    // (/proc, a chmod 000 directory): the temporary's exclusive creation is the real test.
    return {};
}

// ---------------------------------------------------------------------------
// Attributes

// Fixed-length, null-terminated string type of `s` (ASCII when it is, UTF-8 otherwise).
Handle string_type(const std::string& s) {
    Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!t.ok()) return t;
    bool ascii = true;
    for (unsigned char ch : s) ascii = ascii && ch < 0x80;
    if (H5Tset_size(t.get(), s.size() + 1) < 0 || H5Tset_strpad(t.get(), H5T_STR_NULLTERM) < 0 ||
        H5Tset_cset(t.get(), ascii ? H5T_CSET_ASCII : H5T_CSET_UTF8) < 0)
        t.reset();
    return t;
}

// Writes one attribute on `obj`; returns an error text or "".
std::string write_attribute(hid_t obj, const Attribute& a) {
    if (a.name.empty()) return "attribute with an empty name";
    if (H5Aexists(obj, a.name.c_str()) > 0 && H5Adelete(obj, a.name.c_str()) < 0)
        return hdf5_failure("cannot replace attribute '" + a.name + "'");
    H5Eclear2(H5E_DEFAULT);
    Handle space, type;
    const void* buf = nullptr;
    hid_t mem_type = -1;
    if (const auto* i = std::get_if<int64_t>(&a.value)) {
        space.reset(H5Screate(H5S_SCALAR), H5Sclose);
        mem_type = H5T_NATIVE_INT64;
        buf = i;
    } else if (const auto* d = std::get_if<double>(&a.value)) {
        space.reset(H5Screate(H5S_SCALAR), H5Sclose);
        mem_type = H5T_NATIVE_DOUBLE;
        buf = d;
    } else if (const auto* s = std::get_if<std::string>(&a.value)) {
        space.reset(H5Screate(H5S_SCALAR), H5Sclose);
        type = string_type(*s);
        if (!type.ok()) return hdf5_failure("cannot make string type for attribute '" + a.name + "'");
        mem_type = type.get();
        buf = s->c_str();  // size()+1 bytes including the terminating NUL
    } else {
        const auto& v = std::get<std::vector<double>>(a.value);
        if (v.empty()) {
            space.reset(H5Screate(H5S_NULL), H5Sclose);
        } else {
            hsize_t n = v.size();
            space.reset(H5Screate_simple(1, &n, nullptr), H5Sclose);
        }
        mem_type = H5T_NATIVE_DOUBLE;
        buf = v.data();
    }
    if (!space.ok()) return hdf5_failure("cannot make dataspace for attribute '" + a.name + "'");
    // Stored in the native type (little-endian on every host we run on).
    Handle attr(H5Acreate2(obj, a.name.c_str(), mem_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                H5Aclose);
    if (!attr.ok()) return hdf5_failure("cannot create attribute '" + a.name + "'");
    if (H5Sget_simple_extent_type(space.get()) != H5S_NULL && H5Awrite(attr.get(), mem_type, buf) < 0)
        return hdf5_failure("cannot write attribute '" + a.name + "'");
    return {};
}

std::string write_attributes_on(hid_t obj, const std::vector<Attribute>& attrs) {
    for (const auto& a : attrs) {
        std::string err = write_attribute(obj, a);
        if (!err.empty()) return err;
    }
    return {};
}

// ---------------------------------------------------------------------------
// Dataset writes

template <typename T>
hid_t native_type() {
    if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
    else if constexpr (std::is_same_v<T, uint32_t>) return H5T_NATIVE_UINT32;
    else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
    else if constexpr (std::is_same_v<T, int8_t>) return H5T_NATIVE_INT8;
    else return H5T_NATIVE_UINT8;
}

std::string check_attributes(const std::vector<Attribute>& attrs) {
    for (const auto& a : attrs)
        if (a.name.empty()) return "attribute with an empty name";
    return {};
}

std::string check_window(const std::string& name, const Window& own, const void* data,
                         int64_t stride, int64_t rows, int64_t cols) {
    std::ostringstream os;
    if (name.empty() || name.find('/') != std::string::npos) {
        os << "dataset name '" << name << "' must be non-empty and contain no '/'";
    } else if (own.rows < 0 || own.cols < 0) {
        os << "negative window size " << own.rows << " x " << own.cols << " for dataset '" << name << "'";
    } else if (own.size() > 0) {
        if (own.row0 < 0 || own.col0 < 0 || own.row0 + own.rows > rows || own.col0 + own.cols > cols)
            os << "window rows [" << own.row0 << ", " << own.row0 + own.rows << ") cols [" << own.col0
               << ", " << own.col0 + own.cols << ") is outside the " << rows << " x " << cols
               << " dataset '" << name << "'";
        else if (stride < own.cols)
            os << "row stride " << stride << " < window width " << own.cols << " for dataset '" << name << "'";
        else if (!data)
            os << "null data for a non-empty window of dataset '" << name << "'";
    }
    return os.str();
}

// Labels `bytes` wide (rows x cols, rows `pitch` bytes apart) into 4-byte ones, packed.
template <class Out>
void widen_labels(const unsigned char* src, size_t pitch, int bytes, int64_t rows, int64_t cols, Out* out) {
    with_label_type(bytes, [&](auto l) {
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; ++r)
            std::copy_n(reinterpret_cast<const decltype(l)*>(src + static_cast<size_t>(r) * pitch), cols, out + r * cols);
    });
}

// The chunk shape of every dataset: up to 512 x 512.
void chunk_shape(int64_t rows, int64_t cols, hsize_t chunk[2]) {
    chunk[0] = std::min<hsize_t>(512, static_cast<hsize_t>(rows)), chunk[1] = std::min<hsize_t>(512, static_cast<hsize_t>(cols));
}

// A dataset's fill: the caller's _FillValue in the dataset's type (netCDF-4 refuses another
// type), else NaN for floats and 0; `rest` takes the other attributes.
template <typename T>
T fill_value(const std::vector<Attribute>& attrs, bool& has_fill_attr, std::vector<Attribute>* rest = nullptr) {
    T fill = std::is_floating_point_v<T> ? std::numeric_limits<T>::quiet_NaN() : T(0);
    has_fill_attr = false;
    for (const auto& a : attrs) {
        if (a.name != "_FillValue") {
            if (rest) rest->push_back(a);
        } else if (const auto* i = std::get_if<int64_t>(&a.value)) {
            fill = static_cast<T>(*i), has_fill_attr = true;
        } else if (const auto* d = std::get_if<double>(&a.value)) {
            fill = static_cast<T>(*d), has_fill_attr = true;
        }
    }
    return fill;
}

// Dataset `name` (rows x cols of T) of `file`: opened where it exists and may_exist (a chunked
// run's earlier windows created it, with its attributes), else created with `attrs`, deflated at
// `deflate_level` (0: none) or, `mapped`, with every chunk's space taken now and no fill written
// (its chunks then written through a mapping, io/mapped_chunks.h) in the 1.10 format, whose
// implicit index lays them out in row-major order from the first (section 7). `restore_bounds`:
// the file's version bounds were raised for that; restored by the caller once the space is
// allocated (restoring flushes the file, which extends it to the dataset's end).
template <typename T>
Handle open_or_create(hid_t file, const std::string& name, int64_t rows, int64_t cols, const std::vector<Attribute>& attrs,
                      bool may_exist, int deflate_level, bool mapped, bool& restore_bounds, const std::string& where,
                      Failure& local) {
    const hid_t type = native_type<T>();
    auto fail = [&](const std::string& what) {
        local = {FailKind::kRuntime, hdf5_failure(where + ": " + what)};
        return Handle{};
    };
    const htri_t exists = may_exist ? H5Lexists(file, name.c_str(), H5P_DEFAULT) : 0;
    if (exists < 0) return fail("cannot look up");
    if (exists > 0) {
        Handle dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
        return dset.ok() ? std::move(dset) : fail("cannot open");
    }
    hsize_t dims[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)}, chunk[2];
    chunk_shape(rows, cols, chunk);
    Handle fspace(H5Screate_simple(2, dims, nullptr), H5Sclose);
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!fspace.ok() || !dcpl.ok()) return fail("cannot create property lists");
    std::vector<Attribute> rest;
    bool has_fill_attr = false;
    const T fill = fill_value<T>(attrs, has_fill_attr, &rest);
    // Parallel HDF5 1.10 writes filtered datasets only collectively. The MPI-IO driver turns the
    // allocation time into EARLY whatever is asked (h5dump shows H5D_ALLOC_TIME_EARLY): every
    // chunk is allocated and filled at creation, the fill chunk compressed once (17 ms for two
    // 8192 x 8192 datasets). INCR is asked for so that a driver without that rule writes only
    // the chunks touched.
    const bool deflate = deflate_level > 0;
    mapped = mapped && !deflate;
    if (H5Pset_chunk(dcpl.get(), 2, chunk) < 0 || (deflate && H5Pset_shuffle(dcpl.get()) < 0) ||
        (deflate && H5Pset_deflate(dcpl.get(), static_cast<unsigned>(deflate_level)) < 0) ||
        H5Pset_fill_value(dcpl.get(), type, &fill) < 0 ||
        H5Pset_alloc_time(dcpl.get(), mapped ? H5D_ALLOC_TIME_EARLY : H5D_ALLOC_TIME_INCR) < 0 ||
        (mapped && H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0))
        return fail("cannot set chunking/compression");
    restore_bounds = mapped && H5Fset_libver_bounds(file, H5F_LIBVER_V110, H5F_LIBVER_V110) >= 0;
    Handle dset(H5Dcreate2(file, name.c_str(), type, fspace.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
    if (!dset.ok()) return fail("cannot create");
    // Attributes: _FillValue in the dataset's type, the caller's or, for float datasets, NaN
    // (it marks pixels never written).
    if (has_fill_attr || std::is_floating_point_v<T>) {
        Handle s(H5Screate(H5S_SCALAR), H5Sclose);
        Handle a(H5Acreate2(dset.get(), "_FillValue", type, s.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
        if (!a.ok() || H5Awrite(a.get(), type, &fill) < 0) return fail("cannot write _FillValue");
    }
    if (std::string e = write_attributes_on(dset.get(), rest); !e.empty()) {
        local = {FailKind::kRuntime, where + ": " + e};
        return Handle{};
    }
    return dset;
}

}  // namespace

// ---------------------------------------------------------------------------
// Hdf5Writer

Hdf5Writer::Hdf5Writer(const std::string& path, MPI_Comm comm, int64_t rows, int64_t cols)
    : path_(path), comm_(comm), rows_(rows), cols_(cols) {
    // Same arguments on every rank, so every rank throws here alike.
    if (rows <= 0 || cols <= 0)
        throw std::invalid_argument("Hdf5Writer: image size " + std::to_string(rows) + " x " +
                                    std::to_string(cols) + " is empty");
    if (path.empty()) throw std::invalid_argument("Hdf5Writer: empty output path");
    silence_hdf5();
    const int rank = comm_.rank(), size = comm_.size();
    serial_ = size == 1;
    // Several ranks on one node: rank 0 writes what every rank sends it (section 7; MPI-IO's
    // collective writes took 7-10x one rank's there); across nodes, MPI-IO. TESSERA_HDF5_GATHER=0|1
    // chooses (tests, A/B studies).
    if (size > 1) {
        const bool want = switch_is("TESSERA_HDF5_GATHER", "1") ||
                          (!switch_is("TESSERA_HDF5_GATHER", "0") && comm_.one_node());
        gather_ = comm_.min(int64_t{want}) == 1;
        serial_ = gather_;
    }

    // 1. Output directory and the temporary: rank 0 creates it exclusively (no link followed,
    //    never another run's) and every rank learns its name.
    Failure local;
    if (rank == 0) {
        std::string problem = check_output_dir(path_);
        if (problem.empty() && path_.size() > 4000) problem = "path longer than 4000 characters";
        if (problem.empty()) {
            try {
                tmp_path_ = create_temporary(path_);
            } catch (const InputError& e) {
                problem = std::string(e.what()).substr(path_.size() + 2);  // the problem part of "path: problem"
            }
        }
        if (!problem.empty()) local = {FailKind::kInput, problem};
    }
    if (Failure f = agree(comm_, local)) throw_failure(f, path_);
    if (size > 1) {
        // Rank 0's name to every rank (the agreement above: a name too long failed everywhere).
        struct Name {
            char text[4096];
        } name{};
        if (rank == 0) tmp_path_.copy(name.text, sizeof name.text - 1);
        comm_.bcast(name, 0);
        tmp_path_ = name.text;
        register_temporary(tmp_path_);  // removed by this rank too on SIGTERM
    }

    // 2. Create the temporary (H5F_ACC_TRUNC on rank 0's empty file) collectively with the MPI-IO driver; one rank alone (a frame of a
    //    batch, a one-rank run, rank 0 when gathered) writes through the POSIX driver: no MPI-IO
    //    layer, chunks allocated as they are written.
    local = {};
    if (writer()) {
        Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
        hid_t fid = -1;
        if (!fapl.ok() ||
            (serial_ ? H5Pset_fapl_sec2(fapl.get()) < 0
                     : (H5Pset_fapl_mpio(fapl.get(), comm_.get(), MPI_INFO_NULL) < 0 ||
                        H5Pset_coll_metadata_write(fapl.get(), true) < 0)) ||
            // 1.8 object format at least: attributes larger than 64 KiB go to dense storage.
            H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V110) < 0) {
            local = {FailKind::kRuntime, hdf5_failure("HDF5: cannot set up parallel file access")};
        } else {
            fid = H5Fcreate(tmp_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
            // Closed and opened again before any data: the create's truncation (of an empty file)
            // marks it on ext4 for a flush of every dirty page when closed (auto_da_alloc, meant
            // for files replaced by truncation), which made the final close take seconds (3.3 s
            // for 32768², bench/results/gpu_h100_streamed.md); a close clears the mark.
            if (fid >= 0 && H5Fclose(fid) >= 0)
                fid = H5Fopen(tmp_path_.c_str(), H5F_ACC_RDWR, fapl.get());
            else if (fid >= 0)
                fid = -1;
            if (fid < 0)
                local = {FailKind::kRuntime, hdf5_failure("HDF5: cannot create '" + tmp_path_ + "'")};
        }
        file_ = fid;
    }
    if (Failure f = agree(comm_, local)) {
        // Only when the ranks disagree is a file open here; closing it is collective
        // and would hang on the ranks that failed, so it is left to MPI_Abort.
        file_ = -1;
        if (rank == 0) std::remove(tmp_path_.c_str());
        unregister_temporary(tmp_path_);
        throw_failure(f, path_);
    }
}

Hdf5Writer::~Hdf5Writer() {
    if (populating_.valid()) populating_.wait();  // its mapping of the file goes before the file
    if (committed_ || !mpi_usable()) return;
    const int rank = comm_.rank(), size = comm_.size();
    if (file_ >= 0) {
        // H5Fclose is collective under MPI-IO. When this destructor runs while an
        // exception thrown by someone else unwinds the stack, the other ranks may
        // never get here and a close would hang this rank before it can report
        // (section 7: the failing rank aborts the job). Then the handle is left
        // open: MPI_Abort ends the process, and an orderly MPI_Finalize on every
        // rank closes it through HDF5's own shutdown. Our own exceptions are
        // thrown on every rank alike, so closing after them is safe.
        bool unwinding = std::uncaught_exceptions() > 0;
        if (size == 1 || !unwinding || failed_together_) H5Fclose(static_cast<hid_t>(file_));
        H5Eclear2(H5E_DEFAULT);
        file_ = -1;
    }
    if (rank == 0) std::remove(tmp_path_.c_str());  // unlinking an open file is fine on POSIX
    unregister_temporary(tmp_path_);
}

template <typename T>
Failure Hdf5Writer::write_window(const std::string& name, const Window& own, const T* data, int64_t stride,
                                 const std::vector<Attribute>& attrs, size_t src_elem, bool may_exist,
                                 const char*& how) {
    const hid_t type = native_type<T>();
    const std::string where = "HDF5: dataset '" + name + "' of '" + tmp_path_ + "'";
    Failure local;
    auto fail = [&](const std::string& what) { local = {FailKind::kRuntime, hdf5_failure(where + ": " + what)}; };

    // Under MPI-IO every step is collective and fails alike on every rank; the first failure
    // skips the rest and the verdict is agreed on below.
    bool restore_bounds = false;  // the file's version bounds, raised for a mapped dataset's creation
    do {
        hsize_t dims[2] = {static_cast<hsize_t>(rows_), static_cast<hsize_t>(cols_)}, chunk[2];
        chunk_shape(rows_, cols_, chunk);
        Handle fspace(H5Screate_simple(2, dims, nullptr), H5Sclose);
        if (!fspace.ok()) { fail("cannot create a dataspace"); break; }
        bool has_fill_attr = false;
        const T fill = fill_value<T>(attrs, has_fill_attr);
        // One rank writing an uncompressed dataset's whole chunks: mapped.
        const bool mapped = writes_own_chunks(own) && mapped_writes_enabled();
        Handle dset = open_or_create<T>(static_cast<hid_t>(file_), name, rows_, cols_, attrs, may_exist, deflate_level_,
                                        mapped, restore_bounds, where, local);
        if (local) break;

        // One rank writing whole rows of chunks: the chunks are gathered (and compressed) on the
        // host's threads and written as they are (the library's and filters' work, not one core's).
        if (writes_own_chunks(own)) {
            if (takes_mapped_chunks(dset.get())) {
                std::string problem;
                PlacedChunks placed;
                MappedWrite m = place_mapped_chunks(tmp_path_, dset.get(), own.rows, cols_, sizeof(T), chunk, own.row0,
                                                    placed, problem);
                if (m == MappedWrite::written && copies_beside_ && !gather_) {
                    // Section 7: the copy on a thread of its own while the next datasets go
                    // through the library; write_beside joins it (the space is allocated: a
                    // mapping that fails then is a failure).
                    copies_.push_back(copy_on_a_thread(where, [placed = std::move(placed), data, stride, src_elem,
                                                               fill](std::string& e) {
                        return copy_placed_chunks(placed, data, stride, src_elem, &fill, e) == MappedWrite::written;
                    }));
                    how = "mapped (copied beside the next writes)";
                    break;
                }
                if (m == MappedWrite::written) m = copy_placed_chunks(placed, data, stride, src_elem, &fill, problem);
                if (m == MappedWrite::failed) {
                    fail(problem);
                    break;
                }
                if (m == MappedWrite::written) {
                    how = "mapped";
                    break;
                }
            }
            how = "in chunks from the host's threads";
            if (std::string e = write_deflated_chunks(dset.get(), data, stride, own.rows, cols_, sizeof(T), chunk,
                                                      deflate_level_, &fill, src_elem, own.row0);
                !e.empty())
                fail(e);
            break;
        }

        // This rank's window: a hyperslab of the file, and of a memory space of
        // own.rows x stride so that strided rows need no copy.
        Handle mspace;
        if (own.size() > 0) {
            hsize_t mdims[2] = {static_cast<hsize_t>(own.rows), static_cast<hsize_t>(stride)};
            hsize_t zero[2] = {0, 0};
            hsize_t count[2] = {static_cast<hsize_t>(own.rows), static_cast<hsize_t>(own.cols)};
            hsize_t start[2] = {static_cast<hsize_t>(own.row0), static_cast<hsize_t>(own.col0)};
            mspace.reset(H5Screate_simple(2, mdims, nullptr), H5Sclose);
            if (!mspace.ok() ||
                H5Sselect_hyperslab(mspace.get(), H5S_SELECT_SET, zero, nullptr, count, nullptr) < 0 ||
                H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0) {
                fail("cannot select the window");
                break;
            }
        } else {
            // An empty window still takes part in the collective write.
            hsize_t one[1] = {1};
            mspace.reset(H5Screate_simple(1, one, nullptr), H5Sclose);
            if (!mspace.ok() || H5Sselect_none(mspace.get()) < 0 || H5Sselect_none(fspace.get()) < 0) {
                fail("cannot select an empty window");
                break;
            }
        }
        Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
        if (!dxpl.ok() || (!serial_ && H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE) < 0)) {
            fail("cannot set collective transfer");
            break;
        }
        static const T dummy{};
        const void* buf = own.size() > 0 ? static_cast<const void*>(data) : &dummy;
        if (H5Dwrite(dset.get(), type, mspace.get(), fspace.get(), dxpl.get(), buf) < 0) {
            fail("collective write failed");
            break;
        }
    } while (false);
    if (restore_bounds && H5Fset_libver_bounds(static_cast<hid_t>(file_), H5F_LIBVER_V18, H5F_LIBVER_V110) < 0 && !local)
        fail("cannot restore the file format's version bounds");

    return local;
}

// Section 7, several ranks on one node, a dataset without filters: rank 0 creates it with every
// chunk's space allocated (the implicit index: each chunk's place computed from the first's) and
// every rank writes its own window into the file through a shared mapping, nothing sent.
// `done` false: not possible here (no mapping of the layout, or no allocation ahead on this
// file system), nothing written; `exists`: the dataset exists now.
template <typename T>
Failure Hdf5Writer::write_in_place(const std::string& name, const Window& own, const T* data, int64_t stride,
                                   const std::vector<Attribute>& attrs, size_t src_elem, const char*& how, bool& done,
                                   bool& exists) {
    const std::string where = "HDF5: dataset '" + name + "' of '" + tmp_path_ + "'";
    hsize_t chunk[2];
    chunk_shape(rows_, cols_, chunk);
    struct Place {
        int64_t mapped = 0;
        uint64_t first = 0;
    } place;
    Failure local;
    if (comm_.rank() == 0) {
        bool restore_bounds = false;
        Handle dset = open_or_create<T>(static_cast<hid_t>(file_), name, rows_, cols_, attrs, windowed_, 0, true,
                                        restore_bounds, where, local);
        const haddr_t first = !local && takes_mapped_chunks(dset.get())
                                  ? implicit_first_chunk(dset.get(), rows_, cols_, chunk, sizeof(T))
                                  : HADDR_UNDEF;
        std::string problem;
        if (first != HADDR_UNDEF) {
            const MappedWrite a = allocate_chunks(tmp_path_, first, rows_, cols_, chunk, sizeof(T), problem);
            if (a == MappedWrite::failed) local = {FailKind::kRuntime, where + ": " + problem};
            place = {a == MappedWrite::written, static_cast<uint64_t>(first)};
        }
        if (restore_bounds && H5Fset_libver_bounds(static_cast<hid_t>(file_), H5F_LIBVER_V18, H5F_LIBVER_V110) < 0 && !local)
            local = {FailKind::kRuntime, hdf5_failure(where + ": cannot restore the file format's version bounds")};
    }
    Lap lap;
    if (Failure f = agree(comm_, local)) return f;
    exists = true;
    comm_.bcast(place, 0);
    const double agreed_ms = lap.next_ms();
    done = place.mapped == 1;
    if (!done) return {};
    how = "in place, each rank its own window,";
    bool has_fill_attr = false;
    const T fill = fill_value<T>(attrs, has_fill_attr);
    if (copies_beside_) {
        // The copy on a thread of its own while the next datasets are gathered to rank 0
        // (write_beside joins it and agrees on it on every rank).
        copies_.push_back(copy_on_a_thread(where, [path = tmp_path_, first = place.first, rows = rows_, cols = cols_,
                                                   shape = std::array<hsize_t, 2>{chunk[0], chunk[1]}, own, data, stride,
                                                   src_elem, fill](std::string& e) {
            return write_mapped_window(path, static_cast<haddr_t>(first), rows, cols, shape.data(), sizeof(T), own, data,
                                       stride, src_elem, &fill, e) != MappedWrite::failed;
        }));
        how = "in place, each rank its own window (copied beside the next writes),";
        return {};
    }
    std::string problem;
    if (write_mapped_window(tmp_path_, static_cast<haddr_t>(place.first), rows_, cols_, chunk, sizeof(T), own, data, stride,
                            src_elem, &fill, problem) == MappedWrite::failed)
        local = {FailKind::kRuntime, where + ": " + problem};
    if (trace_on())
        std::fprintf(stderr, "tessera: rank %d: in place: waited %.1f ms, wrote in %.1f ms\n", comm_.rank(), agreed_ms, lap.next_ms());
    return local;
}

// Section 7, several ranks on one node: each rank sends its window to rank 0 in bands of whole
// chunk rows (about 256 MiB of a band at a time); rank 0 writes a band the windows cover whole
// as one rank writes (mapped, or compressed chunk by chunk on its threads), else each window's
// part of it through the library. A failure on rank 0 stops its writing, not the bands' sends:
// every rank reaches the agreement after the last band.
template <typename T>
Failure Hdf5Writer::write_gathered(const std::string& name, const Window& own, const T* data, int64_t stride,
                                   const std::vector<Attribute>& attrs, size_t src_elem, const char*& how, bool exists) {
    struct Rect {
        int64_t row0, col0, rows, cols;
    };
    constexpr int kTag = 7307;
    const Rect mine = own.size() > 0 ? Rect{own.row0, own.col0, own.rows, own.cols} : Rect{0, 0, 0, 0};
    const std::vector<Rect> rects = comm_.allgatherv(std::vector<Rect>{mine});
    const int self = comm_.rank();
    const bool root = self == 0;
    if (!root) how = "by rank 0";
    int64_t lo = rows_, hi = 0;
    for (const Rect& r : rects)
        if (r.rows > 0 && r.cols > 0) lo = std::min(lo, r.row0), hi = std::max(hi, r.row0 + r.rows);
    const int64_t cr = std::min<int64_t>(512, rows_);  // the chunk height (write_window)
    const int64_t row_bytes = cols_ * static_cast<int64_t>(src_elem);
    // A band's bytes: less in a chunked run, whose memory plan leaves the writer little.
    const int64_t target = windowed_ ? int64_t{64} << 20 : int64_t{256} << 20;
    const int64_t band = std::max<int64_t>(1, target / (row_bytes * cr)) * cr;

    Failure local;
    try {
        const size_t need = static_cast<size_t>(std::min(band, rows_) * row_bytes);
        if (root && hi > lo && band_.size() < need) band_.resize(need);
    } catch (const std::bad_alloc&) {
        local = {FailKind::kRuntime, "cannot hold a band of '" + name + "' to write (" +
                                         std::to_string(std::min(band, rows_) * row_bytes) + " bytes)"};
    }
    if (Failure f = agree(comm_, local)) return f;
    if (hi <= lo) return root ? write_window(name, Window{}, data, stride, attrs, sizeof(T), windowed_ || exists, how) : local;

    unsigned char* buf = band_.data();
    const auto* src = reinterpret_cast<const unsigned char*>(data);
    const size_t in_row = static_cast<size_t>(stride) * src_elem;
    bool written = exists;  // the dataset exists once rank 0 wrote a first part
    for (int64_t b0 = lo / cr * cr, b1 = 0; b0 < hi; b0 = b1) {
        // Bands of whole chunk rows; where the windows begin or end inside one, that chunk row
        // alone (so that the whole ones around it are written whole).
        b1 = std::min(b0 + band, rows_);
        if (b0 < lo)
            b1 = std::min(b1, (lo + cr - 1) / cr * cr);
        else if (b1 > hi && hi / cr * cr > b0)
            b1 = hi / cr * cr;
        auto part = [&](const Rect& r, int64_t& r0, int64_t& r1) {  // rows [r0, r1) of r in this band
            r0 = std::max(b0, r.row0), r1 = std::min(b1, r.row0 + r.rows);
            return r.cols > 0 && r1 > r0;
        };
        int64_t r0 = 0, r1 = 0;
        if (!root) {  // the rows in place, straight into rank 0's band
            if (part(rects[static_cast<size_t>(self)], r0, r1))
                comm_.send_rows(src + static_cast<size_t>(r0 - own.row0) * in_row, r1 - r0,
                                static_cast<size_t>(own.cols) * src_elem, in_row, 0, kTag);
            continue;
        }
        // Rank 0's own rows alone are written from where they are, no copy; else the band is assembled.
        const Rect& r0_own = rects[0];
        const bool own_band = r0_own.col0 == 0 && r0_own.cols == cols_ && r0_own.row0 <= b0 && r0_own.row0 + r0_own.rows >= b1;
        int64_t covered = own_band ? (b1 - b0) * cols_ : 0;
        for (size_t s = 0; s < rects.size() && !own_band; ++s) {
            const Rect& x = rects[s];
            if (!part(x, r0, r1)) continue;
            covered += (r1 - r0) * x.cols;
            const size_t w = static_cast<size_t>(x.cols) * src_elem;
            unsigned char* to = buf + static_cast<size_t>((r0 - b0) * row_bytes) + static_cast<size_t>(x.col0) * src_elem;
            if (s != 0) {
                comm_.recv_rows(to, r1 - r0, w, static_cast<size_t>(row_bytes), static_cast<int>(s), kTag);
                continue;
            }
#pragma omp parallel for schedule(static)
            for (int64_t r = r0; r < r1; ++r)
                std::memcpy(to + static_cast<size_t>((r - r0) * row_bytes), src + static_cast<size_t>(r - own.row0) * in_row, w);
        }
        if (local) continue;
        if (covered == (b1 - b0) * cols_ && (b1 % cr == 0 || b1 == rows_)) {  // whole chunk rows
            const unsigned char* from = own_band ? src + static_cast<size_t>(b0 - own.row0) * in_row : buf;
            local = write_window(name, Window{b0, 0, b1 - b0, cols_}, reinterpret_cast<const T*>(from),
                                 own_band ? stride : cols_, attrs, src_elem, windowed_ || written, how);
            written = true;
            continue;
        }
        std::vector<T> wide;
        for (const Rect& x : rects) {
            if (local || !part(x, r0, r1)) continue;
            const unsigned char* at = buf + static_cast<size_t>((r0 - b0) * row_bytes) + static_cast<size_t>(x.col0) * src_elem;
            const T* p = reinterpret_cast<const T*>(at);
            int64_t pitch = cols_;
            if (src_elem != sizeof(T)) {  // narrow labels: the library takes them 4 bytes wide
                wide.resize(static_cast<size_t>((r1 - r0) * x.cols));
                widen_labels(at, static_cast<size_t>(row_bytes), static_cast<int>(src_elem), r1 - r0, x.cols, wide.data());
                p = wide.data(), pitch = x.cols;
            }
            local = write_window(name, Window{r0, x.col0, r1 - r0, x.cols}, p, pitch, attrs, sizeof(T),
                                 windowed_ || written, how);
            written = true;
        }
    }
    return local;
}

template <typename T>
void Hdf5Writer::write_dataset(const std::string& name, const Window& own, const T* data,
                               int64_t stride, const std::vector<Attribute>& attrs, size_t src_elem) {
    Failure local;
    if (committed_ || (writer() && file_ < 0))
        local = {FailKind::kLogic, "Hdf5Writer: write of '" + name + "' after commit()"};
    else if (std::string e = check_window(name, own, data, stride, rows_, cols_); !e.empty())
        local = {FailKind::kInvalidArg, "Hdf5Writer: " + e};
    else if (std::string e2 = check_attributes(attrs); !e2.empty())
        local = {FailKind::kInvalidArg, "Hdf5Writer: dataset '" + name + "': " + e2};
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        throw_failure(f, path_);
    }

    if (populating_.valid()) populating_.get();  // prepare_f32's pages (its own dataset's or not: the file's)
    Lap took;
    const char* how = "through the library";
    bool done = false, exists = false;
    if (gather_ && deflate_level_ == 0 && mapped_writes_enabled() && !switch_is("TESSERA_HDF5_IN_PLACE", "0"))
        local = write_in_place(name, own, data, stride, attrs, src_elem, how, done, exists);
    if (!local && !done)
        local = gather_ ? write_gathered(name, own, data, stride, attrs, src_elem, how, exists)
                        : write_window(name, own, data, stride, attrs, src_elem, windowed_ || prepared_.count(name) > 0, how);
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        throw_failure(f, path_);
    }
    failed_together_ = false;
    if (trace_on())
        std::fprintf(stderr, "tessera: hdf5 %-22s %9.1f MB %s%s in %8.1f ms\n", name.c_str(),
                     static_cast<double>(std::max<int64_t>(own.size(), 0)) * static_cast<double>(sizeof(T)) / 1e6,
                     gather_ && !done ? "sent to rank 0, written " : "", how, took.next_ms());
}

void Hdf5Writer::write_beside(const std::function<void()>& writes) {
    static const bool off = switch_is("TESSERA_COPY_BESIDE", "0");  // A/B studies
    if (off) return writes();
    copies_beside_ = true;
    auto join = [&] {  // the copies read the caller's arrays: joined on every path out
        copies_beside_ = false;
        Failure local;
        for (std::future<std::string>& c : copies_)
            if (std::string e = c.get(); !e.empty() && !local) local = {FailKind::kRuntime, e};
        copies_.clear();
        return local;
    };
    try {
        writes();
    } catch (...) {
        (void)join();
        throw;
    }
    Lap waited;
    const Failure local = join();
    if (trace_on()) std::fprintf(stderr, "tessera: mapped copies beside the library's writes: waited %.1f ms for them\n", waited.next_ms());
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        throw_failure(f, path_);
    }
}

void Hdf5Writer::prepare_f32(const std::string& name, const std::vector<Attribute>& attrs, int threads) {
    static const bool off = switch_is("TESSERA_PREPARE_WRITE", "0");
    // One rank alone: where several gather to rank 0, only it holds the file, and the agreement
    // below is collective (rank 0 alone in it hung or aborted two-rank device runs, session 34).
    if (off || comm_.size() > 1 || deflate_level_ != 0 || !mapped_writes_enabled() || committed_ || file_ < 0 ||
        !writes_own_chunks(Window{0, 0, rows_, cols_}) || prepared_.count(name) > 0 || populating_.valid())
        return;
    const std::string where = "HDF5: dataset '" + name + "' of '" + tmp_path_ + "'";
    Failure local;
    bool restore_bounds = false;
    hsize_t chunk[2];
    chunk_shape(rows_, cols_, chunk);
    haddr_t first = HADDR_UNDEF;
    {
        Handle dset = open_or_create<float>(static_cast<hid_t>(file_), name, rows_, cols_, attrs, false, 0, true,
                                            restore_bounds, where, local);
        if (!local) {
            prepared_.insert(name);
            if (takes_mapped_chunks(dset.get())) first = implicit_first_chunk(dset.get(), rows_, cols_, chunk, sizeof(float));
        }
    }
    if (restore_bounds && H5Fset_libver_bounds(static_cast<hid_t>(file_), H5F_LIBVER_V18, H5F_LIBVER_V110) < 0 && !local)
        local = {FailKind::kRuntime, hdf5_failure(where + ": cannot restore the file format's version bounds")};
    if (Failure f = agree(comm_, local)) throw_failure(f, path_);
    if (first == HADDR_UNDEF) return;  // the write asks the library for each chunk's place
    populating_ = std::async(std::launch::async, [path = tmp_path_, first, rows = rows_, cols = cols_, chunk, threads] {
        std::string problem;
        Lap lap;
        (void)populate_chunks(path, first, rows, cols, chunk, sizeof(float), threads, problem);  // advice: the write finds any fault
        if (trace_on()) std::fprintf(stderr, "tessera: output pages made ready in %.1f ms\n", lap.next_ms());
    });
}

void Hdf5Writer::write_f32(const std::string& name, const Window& own, const float* data,
                           int64_t stride, const std::vector<Attribute>& attrs) {
    write_dataset(name, own, data, stride, attrs);
}
void Hdf5Writer::write_u32(const std::string& name, const Window& own, const uint32_t* data,
                           int64_t stride, const std::vector<Attribute>& attrs) {
    write_dataset(name, own, data, stride, attrs);
}
void Hdf5Writer::write_labels(const std::string& name, const Window& own, const void* data, int bytes,
                               int64_t stride, const std::vector<Attribute>& attrs) {
    with_label_type(bytes, [](auto) {});  // throws std::invalid_argument for another width
    if (bytes == 4 || gather_ || writes_own_chunks(own) || stride < own.cols) {  // (the last: write_dataset reports it)
        write_dataset(name, own, static_cast<const uint32_t*>(data), stride, attrs, static_cast<size_t>(bytes));
        return;
    }
    // Parallel HDF5 1.10 writes filtered datasets only collectively, and not with a type
    // conversion: the window goes through a 4-byte copy.
    UntouchedVector<uint32_t> wide(static_cast<size_t>(std::max<int64_t>(own.size(), 0)));  // every element copied below
    if (data)
        widen_labels(static_cast<const unsigned char*>(data), static_cast<size_t>(stride) * static_cast<size_t>(bytes), bytes,
                     own.rows, own.cols, wide.data());
    write_dataset(name, own, own.size() > 0 && data ? wide.data() : nullptr, own.cols, attrs);
}
void Hdf5Writer::write_i32(const std::string& name, const Window& own, const int32_t* data,
                           int64_t stride, const std::vector<Attribute>& attrs) {
    write_dataset(name, own, data, stride, attrs);
}
void Hdf5Writer::write_i8(const std::string& name, const Window& own, const int8_t* data,
                          int64_t stride, const std::vector<Attribute>& attrs) {
    write_dataset(name, own, data, stride, attrs);
}
void Hdf5Writer::write_u8(const std::string& name, const Window& own, const uint8_t* data,
                          int64_t stride, const std::vector<Attribute>& attrs) {
    write_dataset(name, own, data, stride, attrs);
}

void Hdf5Writer::collective_step(const std::string& what, const std::function<std::string()>& step) {
    Failure local;
    if (committed_ || (writer() && file_ < 0)) {
        local = {FailKind::kLogic, "Hdf5Writer: " + what + " after commit()"};
    } else if (std::string e = writer() ? step() : std::string(); !e.empty()) {
        local = {FailKind::kRuntime, hdf5_failure("HDF5: " + what + " of '" + tmp_path_ + "': " + e)};
    }
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        throw_failure(f, path_);
    }
    failed_together_ = false;
}

void Hdf5Writer::write_coordinate(const std::string& name, const std::vector<double>& values,
                                  const std::vector<Attribute>& attrs) {
    collective_step("coordinate '" + name + "'", [&]() -> std::string {
        if (values.empty()) return "no values";
        hsize_t n = values.size();
        Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
        if (!space.ok()) return "cannot make its dataspace";
        Handle dset(H5Dcreate2(static_cast<hid_t>(file_), name.c_str(), H5T_NATIVE_DOUBLE, space.get(), H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT),
                    H5Dclose);
        if (!dset.ok()) return "cannot create";
        // Rank 0 writes the values; the others take part in the collective write with none.
        Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
        if (!dxpl.ok() || (!serial_ && H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE) < 0))
            return "cannot set collective transfer";
        Handle mspace(H5Screate_simple(1, &n, nullptr), H5Sclose);
        if (!mspace.ok()) return "cannot make the memory dataspace";
        if (comm_.rank() != 0 && (H5Sselect_none(mspace.get()) < 0 || H5Sselect_none(space.get()) < 0))
            return "cannot select nothing";
        if (H5Dwrite(dset.get(), H5T_NATIVE_DOUBLE, mspace.get(), space.get(), dxpl.get(), values.data()) < 0)
            return "write failed";
        if (H5DSset_scale(dset.get(), name.c_str()) < 0) return "cannot make it a dimension scale";
        return write_attributes_on(dset.get(), attrs);
    });
}

void Hdf5Writer::write_scalar_variable(const std::string& name, const std::vector<Attribute>& attrs) {
    collective_step("variable '" + name + "'", [&]() -> std::string {
        Handle space(H5Screate(H5S_SCALAR), H5Sclose);
        // Never written: its value is the fill value, 0.
        Handle dset(space.ok() ? H5Dcreate2(static_cast<hid_t>(file_), name.c_str(), H5T_NATIVE_INT32, space.get(),
                                            H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                               : -1,
                    H5Dclose);
        if (!dset.ok()) return "cannot create";
        return write_attributes_on(dset.get(), attrs);
    });
}

bool Hdf5Writer::has_dataset(const std::string& name) {
    htri_t exists = 0;
    collective_step("look-up of '" + name + "'", [&]() -> std::string {
        exists = H5Lexists(static_cast<hid_t>(file_), name.c_str(), H5P_DEFAULT);
        return exists < 0 ? "cannot look up" : "";
    });
    if (gather_) comm_.bcast(exists, 0);
    return exists > 0;
}

void Hdf5Writer::write_dataset_attributes(const std::string& name, const std::vector<Attribute>& attrs) {
    collective_step("attributes of '" + name + "'", [&]() -> std::string {
        Handle dset(H5Dopen2(static_cast<hid_t>(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!dset.ok()) return "no such dataset";
        return write_attributes_on(dset.get(), attrs);
    });
}

void Hdf5Writer::attach_dimensions(const std::string& name, const std::vector<std::string>& dims) {
    collective_step("dimensions of '" + name + "'", [&]() -> std::string {
        Handle dset(H5Dopen2(static_cast<hid_t>(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!dset.ok()) return "no such dataset";
        for (size_t i = 0; i < dims.size(); ++i) {
            Handle scale(H5Dopen2(static_cast<hid_t>(file_), dims[i].c_str(), H5P_DEFAULT), H5Dclose);
            if (!scale.ok()) return "no coordinate '" + dims[i] + "'";
            if (H5DSattach_scale(dset.get(), scale.get(), static_cast<unsigned>(i)) < 0)
                return "cannot attach '" + dims[i] + "'";
        }
        return {};
    });
}

void Hdf5Writer::write_attributes(const std::vector<Attribute>& attrs) {
    Failure local;
    if (committed_ || (writer() && file_ < 0)) {
        local = {FailKind::kLogic, "Hdf5Writer: write_attributes after commit()"};
    } else if (std::string e = check_attributes(attrs); !e.empty()) {
        local = {FailKind::kInvalidArg, "Hdf5Writer: root group: " + e};
    } else if (writer()) {
        Handle root(H5Gopen2(static_cast<hid_t>(file_), "/", H5P_DEFAULT), H5Gclose);
        if (!root.ok())
            local = {FailKind::kRuntime, hdf5_failure("HDF5: cannot open '/' of '" + tmp_path_ + "'")};
        else if (std::string e = write_attributes_on(root.get(), attrs); !e.empty())
            local = {FailKind::kRuntime, "HDF5: '" + tmp_path_ + "': " + e};
    }
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        throw_failure(f, path_);
    }
    failed_together_ = false;
}

void Hdf5Writer::commit() {
    if (populating_.valid()) populating_.get();
    Failure local;
    if (committed_ || (writer() && file_ < 0)) local = {FailKind::kLogic, "Hdf5Writer: commit() called twice"};
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        throw_failure(f, path_);
    }
    // Close on every rank that holds it (collective under MPI-IO: flushes metadata, closes the MPI file).
    if (writer() && H5Fclose(static_cast<hid_t>(file_)) < 0)
        local = {FailKind::kRuntime, hdf5_failure("HDF5: closing '" + tmp_path_ + "' failed")};
    file_ = -1;
    // agree() is an MPI_Allreduce: every rank has closed when it returns (the barrier).
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        throw_failure(f, path_);  // the destructor removes the temporary file
    }
    const int rank = comm_.rank();
    // The run's OutputSet renames it with the run's other outputs; otherwise rank 0 does now.
    OutputSet* set = OutputSet::active();
    if (rank == 0) {
        try {
            if (set) {
                set->adopt(path_, tmp_path_);
            } else {
                OutputSet own;
                own.adopt(path_, tmp_path_);
                own.commit();
            }
        } catch (const InputError& e) {
            std::string m = e.what();
            if (m.rfind(path_ + ": ", 0) == 0) m = m.substr(path_.size() + 2);
            local = {FailKind::kInput, m};
        }
    } else {
        unregister_temporary(tmp_path_);
    }
    if (Failure f = agree(comm_, local)) {
        failed_together_ = true;
        committed_ = true;  // rank 0's set removed the temporary
        throw_failure(f, path_);
    }
    committed_ = true;
}

// ---------------------------------------------------------------------------
// describe_result

namespace {

std::string format_double(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string type_name(hid_t t) {
    size_t size = H5Tget_size(t);
    switch (H5Tget_class(t)) {
        case H5T_INTEGER:
            return (H5Tget_sign(t) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * size);
        case H5T_FLOAT: return "float" + std::to_string(8 * size);
        case H5T_STRING: return "string";
        case H5T_COMPOUND: return "compound";
        case H5T_ENUM: return "enum";
        case H5T_ARRAY: return "array";
        case H5T_VLEN: return "vlen";
        case H5T_OPAQUE: return "opaque";
        case H5T_BITFIELD: return "bitfield";
        case H5T_REFERENCE: return "reference";
        default: return "unknown";
    }
}

std::string shape_of(hid_t space) {
    if (H5Sget_simple_extent_type(space) == H5S_SCALAR) return "scalar";
    if (H5Sget_simple_extent_type(space) == H5S_NULL) return "empty";
    int nd = H5Sget_simple_extent_ndims(space);
    if (nd <= 0) return "scalar";
    std::vector<hsize_t> d(static_cast<size_t>(nd));
    H5Sget_simple_extent_dims(space, d.data(), nullptr);
    std::string s;
    for (int i = 0; i < nd; ++i) s += (i ? " x " : "") + std::to_string(d[static_cast<size_t>(i)]);
    return s;
}

// The value of an attribute as text: numbers and strings, arrays comma-separated.
std::string attribute_value(hid_t attr) {
    Handle type(H5Aget_type(attr), H5Tclose);
    Handle space(H5Aget_space(attr), H5Sclose);
    if (!type.ok() || !space.ok()) return "<unreadable>";
    if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) return "";
    hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n <= 0) return "";
    // Read only what a summary needs: a damaged or foreign file may declare anything.
    const size_t type_size = H5Tget_size(type.get());
    if (n > 4096 || type_size == 0 || type_size > 65536 || static_cast<size_t>(n) * type_size > (1u << 20))
        return "<" + std::to_string(n) + " values of " + type_name(type.get()) + ">";
    const size_t count = static_cast<size_t>(n);
    std::string out;
    auto sep = [&](size_t i) { if (i) out += ", "; };
    switch (H5Tget_class(type.get())) {
        case H5T_INTEGER: {
            bool is_unsigned = H5Tget_sign(type.get()) == H5T_SGN_NONE;
            if (is_unsigned) {
                std::vector<unsigned long long> v(count);
                if (H5Aread(attr, H5T_NATIVE_ULLONG, v.data()) < 0) return "<unreadable>";
                for (size_t i = 0; i < count; ++i) { sep(i); out += std::to_string(v[i]); }
            } else {
                std::vector<long long> v(count);
                if (H5Aread(attr, H5T_NATIVE_LLONG, v.data()) < 0) return "<unreadable>";
                for (size_t i = 0; i < count; ++i) { sep(i); out += std::to_string(v[i]); }
            }
            return out;
        }
        case H5T_FLOAT: {
            std::vector<double> v(count);
            if (H5Aread(attr, H5T_NATIVE_DOUBLE, v.data()) < 0) return "<unreadable>";
            for (size_t i = 0; i < count; ++i) { sep(i); out += format_double(v[i]); }
            return out;
        }
        case H5T_STRING: {
            if (H5Tis_variable_str(type.get()) > 0) {
                Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
                H5Tset_size(mt.get(), H5T_VARIABLE);
                H5Tset_cset(mt.get(), H5Tget_cset(type.get()));
                std::vector<char*> v(count, nullptr);
                if (H5Aread(attr, mt.get(), v.data()) < 0) return "<unreadable>";
                for (size_t i = 0; i < count; ++i) { sep(i); out += v[i] ? v[i] : ""; }
                H5Dvlen_reclaim(mt.get(), space.get(), H5P_DEFAULT, v.data());
            } else {
                size_t sz = H5Tget_size(type.get());
                std::vector<char> v(sz * count + 1, '\0');
                if (H5Aread(attr, type.get(), v.data()) < 0) return "<unreadable>";
                for (size_t i = 0; i < count; ++i) {
                    sep(i);
                    const char* p = v.data() + i * sz;
                    out.append(p, strnlen(p, sz));
                }
            }
            return out;
        }
        default: return "<" + type_name(type.get()) + ">";
    }
}

constexpr hsize_t kMaxListed = 1000;  // attributes or datasets listed per object

// Every attribute of `obj`, in the order they are stored (one pass: linear in their number).
void describe_attributes(hid_t obj, const std::string& indent, std::string& out) {
    struct Acc {
        const std::string* indent;
        std::string* out;
        hsize_t seen = 0;
    } acc{&indent, &out};
    hsize_t idx = 0;
    H5Aiterate2(
        obj, H5_INDEX_NAME, H5_ITER_NATIVE, &idx,
        [](hid_t loc, const char* name, const H5A_info_t*, void* data) -> herr_t {
            auto* a = static_cast<Acc*>(data);
            if (++a->seen > kMaxListed) return 0;  // counted only
            Handle attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
            *a->out += *a->indent + name + " = " + (attr.ok() ? attribute_value(attr.get()) : "<unreadable>") + "\n";
            return 0;
        },
        &acc);
    H5Eclear2(H5E_DEFAULT);
    if (acc.seen > kMaxListed)
        out += indent + "... and " + std::to_string(acc.seen - kMaxListed) + " more attributes\n";
}

// The root attribute "software" starts with "tessera".
bool written_by_tessera(hid_t root) {
    if (H5Aexists(root, "software") <= 0) return false;
    Handle attr(H5Aopen(root, "software", H5P_DEFAULT), H5Aclose);
    return attr.ok() && attribute_value(attr.get()).rfind("tessera", 0) == 0;
}

// A result file opened read-only, its root group, and (tessera_only) the check that tessera wrote it.
struct OpenResult {
    Handle file, root;
};
OpenResult open_result(const std::string& path, bool tessera_only) {
    silence_hdf5();
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) throw InputError(path, "no such file");
    if (!S_ISREG(st.st_mode) || H5Fis_hdf5(path.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        throw InputError(path, "not an HDF5 file");
    }
    // Serial access (default sec2 driver): a local, read-only look. No file
    // locking, so that it also works on file systems without flock (Lustre, NFS).
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    if (fapl.ok()) H5Pset_file_locking(fapl.get(), false, true);
    OpenResult r;
    r.file = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.ok() ? fapl.get() : H5P_DEFAULT), H5Fclose);
    if (!r.file.ok()) throw InputError(path, hdf5_failure("cannot open the HDF5 file"));
    r.root = Handle(H5Gopen2(r.file.get(), "/", H5P_DEFAULT), H5Gclose);
    if (!r.root.ok()) throw InputError(path, hdf5_failure("cannot open the root group"));
    if (tessera_only && !written_by_tessera(r.root.get())) {
        H5Eclear2(H5E_DEFAULT);
        throw InputError(path, "not a tessera result (no root attribute software = \"tessera ...\")");
    }
    return r;
}

// Rows [r0, r0 + n) of 2-D dataset `d` (cols wide) as `mem` into `out`.
void read_rows(const std::string& path, const char* name, hid_t d, hid_t mem, int64_t r0, int64_t n, int64_t cols,
               void* out) {
    Handle fs(H5Dget_space(d), H5Sclose);
    const hsize_t start[2] = {static_cast<hsize_t>(r0), 0}, count[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(cols)};
    Handle ms(H5Screate_simple(2, count, nullptr), H5Sclose);
    if (!fs.ok() || !ms.ok() || H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
        H5Dread(d, mem, ms.get(), fs.get(), H5P_DEFAULT, out) < 0)
        throw InputError(path, hdf5_failure(std::string("cannot read /") + name + " (rows " + std::to_string(r0) +
                                            ".." + std::to_string(r0 + n - 1) + ")"));
}

}  // namespace

ResultSummary summarize_result(const std::string& path, int top, int max_attributes,
                               const std::function<void()>& progress) {
    OpenResult f = open_result(path, true);
    ResultSummary s;
    // Root attributes, stored order (one pass).
    struct Acc {
        ResultSummary* s;
        int64_t max;
    } acc{&s, max_attributes};
    hsize_t idx = 0;
    H5Aiterate2(
        f.root.get(), H5_INDEX_NAME, H5_ITER_NATIVE, &idx,
        [](hid_t loc, const char* name, const H5A_info_t*, void* data) -> herr_t {
            auto* a = static_cast<Acc*>(data);
            if (static_cast<int64_t>(a->s->attributes.size()) >= a->max) return ++a->s->more_attributes, 0;
            Handle attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
            a->s->attributes.emplace_back(name, attr.ok() ? attribute_value(attr.get()) : "<unreadable>");
            return 0;
        },
        &acc);
    H5Eclear2(H5E_DEFAULT);
    // The datasets of the result, with their shapes and types.
    for (const char* name : {"unwrapped_phase", "connected_components", "cycles", "residues", "branch_cuts"}) {
        if (H5Lexists(f.root.get(), name, H5P_DEFAULT) <= 0) continue;
        Handle d(H5Dopen2(f.root.get(), name, H5P_DEFAULT), H5Dclose);
        if (!d.ok()) continue;
        Handle type(H5Dget_type(d.get()), H5Tclose);
        Handle space(H5Dget_space(d.get()), H5Sclose);
        s.datasets.push_back(std::string("/") + name + " " + (space.ok() ? shape_of(space.get()) : "?") + " " +
                             (type.ok() ? type_name(type.get()) : "?"));
    }
    H5Eclear2(H5E_DEFAULT);
    // The pixels: phase and labels, a block of rows at a time.
    auto open2d = [&](const char* name) {
        Handle d(H5Dopen2(f.root.get(), name, H5P_DEFAULT), H5Dclose);
        if (!d.ok()) throw InputError(path, hdf5_failure(std::string("no dataset /") + name));
        Handle space(H5Dget_space(d.get()), H5Sclose);
        hsize_t dims[2] = {0, 0};
        if (!space.ok() || H5Sget_simple_extent_ndims(space.get()) != 2 ||
            H5Sget_simple_extent_dims(space.get(), dims, nullptr) != 2)
            throw InputError(path, std::string("/") + name + " is not a 2-D dataset");
        return std::make_tuple(std::move(d), static_cast<int64_t>(dims[0]), static_cast<int64_t>(dims[1]));
    };
    auto [u, rows, cols] = open2d("unwrapped_phase");
    auto [l, lrows, lcols] = open2d("connected_components");
    if (lrows != rows || lcols != cols)
        throw InputError(path, "/connected_components is " + std::to_string(lcols) + "x" + std::to_string(lrows) +
                                   ", /unwrapped_phase " + std::to_string(cols) + "x" + std::to_string(rows));
    s.rows = rows, s.cols = cols;
    const int64_t block = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(cols, 1));
    std::vector<float> ub(static_cast<size_t>(std::min(block, rows) * cols));
    std::vector<uint32_t> lb(ub.size());
    std::vector<int64_t> small;               // pixels per label below 2^24
    std::map<uint32_t, int64_t> large;        // the rest (a damaged file may hold any label)
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
        const int64_t n = std::min(block, rows - r0);
        read_rows(path, "unwrapped_phase", u.get(), H5T_NATIVE_FLOAT, r0, n, cols, ub.data());
        read_rows(path, "connected_components", l.get(), H5T_NATIVE_UINT32, r0, n, cols, lb.data());
        for (int64_t i = 0; i < n * cols; ++i) {
            if (!std::isfinite(ub[static_cast<size_t>(i)])) continue;
            ++s.finite;
            const uint32_t k = lb[static_cast<size_t>(i)];
            if (k == 0) continue;
            ++s.labelled;
            if (k < (1u << 24)) {
                if (k >= small.size()) small.resize(std::max<size_t>(k + 1, 2 * small.size()), 0);
                ++small[k];
            } else {
                ++large[k];
            }
        }
        if (progress) progress();
    }
    std::vector<std::pair<uint32_t, int64_t>> all;
    for (size_t k = 1; k < small.size(); ++k)
        if (small[k] > 0) all.emplace_back(static_cast<uint32_t>(k), small[k]);
    for (const auto& kv : large) all.push_back(kv);
    s.components = static_cast<int64_t>(all.size());
    const auto by_size = [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; };
    const size_t keep = std::min(all.size(), static_cast<size_t>(std::max(top, 0)));
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(), by_size);
    s.largest.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep));
    H5Eclear2(H5E_DEFAULT);
    return s;
}

std::string describe_result(const std::string& path, bool tessera_only) {
    OpenResult opened = open_result(path, tessera_only);
    Handle& root = opened.root;

    // The root's links in their stored order (one pass), then each dataset's shape, type and
    // attributes.
    std::vector<std::string> names;
    hsize_t links = 0, idx = 0;
    struct Acc {
        std::vector<std::string>* names;
        hsize_t* links;
    } acc{&names, &links};
    if (H5Literate(
            root.get(), H5_INDEX_NAME, H5_ITER_NATIVE, &idx,
            [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
                auto* a = static_cast<Acc*>(data);
                if (++*a->links <= kMaxListed) a->names->push_back(name);
                return 0;
            },
            &acc) < 0 &&
        names.empty())
        throw InputError(path, hdf5_failure("cannot list the root group"));
    std::string out;
    for (const std::string& name : names) {
        if (H5Oexists_by_name(root.get(), name.c_str(), H5P_DEFAULT) <= 0) { H5Eclear2(H5E_DEFAULT); continue; }
        Handle obj(H5Oopen(root.get(), name.c_str(), H5P_DEFAULT), H5Oclose);
        if (!obj.ok()) { H5Eclear2(H5E_DEFAULT); continue; }  // dangling or damaged link
        if (H5Iget_type(obj.get()) != H5I_DATASET) continue;
        Handle type(H5Dget_type(obj.get()), H5Tclose);
        Handle space(H5Dget_space(obj.get()), H5Sclose);
        out += "/" + name + "  " + (space.ok() ? shape_of(space.get()) : "?") + "  " +
               (type.ok() ? type_name(type.get()) : "?") + "\n";
        describe_attributes(obj.get(), "    ", out);
    }
    if (links > kMaxListed) out += "... and " + std::to_string(links - kMaxListed) + " more objects\n";
    describe_attributes(root.get(), "", out);
    H5Eclear2(H5E_DEFAULT);
    return out;
}

}  // namespace tessera
