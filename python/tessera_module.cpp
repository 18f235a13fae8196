// `import tessera`: the unwrapper on NumPy arrays (README "Python"). The arrays go in through
// the memory phase source and come back through the memory result sink (docs/ARCHITECTURE.md
// section 7), so the result is the command line's, bit for bit.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mpi.h>

#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "backend/backend.h"
#include "io/input_error.h"
#include "io/result_sink.h"
#include "kernels/invariant.h"
#include "partition/mpi_process.h"
#include "pipeline/unwrap_pipeline.h"
#include "python/numpy_input.h"

namespace py = pybind11;

namespace tessera::python {

namespace {

// One run at a time in this process: the runs share MPI (started SERIALIZED) and the cores.
std::mutex& run_mutex() {
    static std::mutex m;
    return m;
}

template <class T>
void check_range(const char* arg, T v, T lo, T hi, const char* why) {
    if (!(v >= lo && v <= hi))
        throw py::value_error(std::string(arg) + " " + py::str(py::cast(v)).cast<std::string>() + " is outside [" +
                              py::str(py::cast(lo)).cast<std::string>() + ", " +
                              (hi == std::numeric_limits<T>::max() ? std::string("inf")
                                                                  : py::str(py::cast(hi)).cast<std::string>()) +
                              "]" + why);
}

py::tuple unwrap(const py::object& phase_or_ifg, const py::object& coherence, const py::object& mask, int64_t cut_radius,
                 double min_coherence, int64_t min_component_size, int64_t tile_size,
                 std::optional<std::pair<int64_t, int64_t>> reference, const std::string& backend,
                 std::optional<double> nodata, std::optional<int> device, std::optional<int64_t> memory_limit,
                 std::optional<int64_t> gpu_memory_limit, std::optional<int64_t> chunk_rows,
                 std::optional<std::string> scratch, bool cycle_correction, bool far_reach, const py::object& guide) {
    NumpyInput input = numpy_input(phase_or_ifg, coherence, mask);
    const int64_t H = input.in.H, W = input.in.W;
    // The options, named as the caller named them (the driver checks them again, by CLI names).
    check_range("cut_radius", cut_radius, int64_t{1}, int64_t{1024}, " (pixels)");
    check_range("min_coherence", min_coherence, 0.0, 1.0, " (coherence is a magnitude between 0 and 1)");
    check_range("min_component_size", min_component_size, int64_t{0}, std::numeric_limits<int64_t>::max(), "");
    check_range("tile_size", tile_size, int64_t{2}, std::numeric_limits<int64_t>::max(), "");
    if (reference && (reference->first < 0 || reference->first >= H || reference->second < 0 || reference->second >= W))
        throw py::value_error("reference: pixel (" + std::to_string(reference->first) + ", " +
                              std::to_string(reference->second) + ") is outside the image " +
                              shape_text(input.phase));
    if (memory_limit) check_range("memory_limit", *memory_limit, int64_t{1}, std::numeric_limits<int64_t>::max(), " (bytes)");
    if (gpu_memory_limit)
        check_range("gpu_memory_limit", *gpu_memory_limit, int64_t{1}, std::numeric_limits<int64_t>::max(), " (bytes)");
    if (chunk_rows) check_range("chunk_rows", *chunk_rows, int64_t{1}, std::numeric_limits<int64_t>::max(), " (rows)");
    int guide_window = kGuideAuto;
    if (py::isinstance<py::str>(guide)) {
        if (guide.cast<std::string>() != "auto")
            throw py::value_error("guide_window '" + guide.cast<std::string>() + "' is not 'auto' or a number");
    } else if (py::isinstance<py::int_>(guide) && !py::isinstance<py::bool_>(guide)) {
        const auto n = guide.cast<int64_t>();
        if (n < 0 || (n > 1 && (n % 2 == 0 || n > kMaxGuideWindow)))
            throw py::value_error("guide_window " + std::to_string(n) + " must be 'auto', 0 (none) or odd, from 3 to " +
                                  std::to_string(kMaxGuideWindow));
        guide_window = static_cast<int>(n);
    } else {
        throw py::type_error("guide_window must be 'auto' or an int");
    }
    if (backend != "auto" && backend != "cpu" && backend != "cuda")
        throw py::value_error("backend: '" + backend + "' is not 'auto', 'cpu' or 'cuda'");

    UnwrapOptions opt;
    opt.input = "phase_or_ifg";  // names the array in the driver's errors and the attributes
    opt.tile_size = tile_size;
    opt.max_pair_distance = cut_radius;
    opt.correct_cycles = cycle_correction;
    opt.far_reach = far_reach;
    opt.guide_window = guide_window;
    opt.reference = reference;
    opt.min_component_size = min_component_size;
    opt.min_coherence = min_coherence;
    opt.device = device.value_or(-1);
    opt.memory_limit = memory_limit.value_or(-1);  // -1: what the machine has (section 5.1)
    opt.gpu_memory_limit = gpu_memory_limit.value_or(-1);
    opt.chunk_rows = chunk_rows.value_or(0);
    opt.scratch = scratch.value_or("");
    opt.quiet = true;
    input.in.min_coherence = static_cast<float>(min_coherence);
    input.in.nodata = nodata;
    input.in.name = opt.input;

    // Owned by NumPy from the start: nothing is copied after the run.
    py::array_t<float> unw({H, W});
    py::array_t<uint32_t> conncomp({H, W});
    MemoryResult result{H, W, {unw.mutable_data(), static_cast<size_t>(H * W)},
                        {conncomp.mutable_data(), static_cast<size_t>(H * W)}, {}, {}};
    try {
        py::gil_scoped_release nogil;
        const std::lock_guard<std::mutex> one_at_a_time(run_mutex());
        try {  // resolved once (backend/backend.h); refused here, in one line, where it cannot run
            opt.backend = resolve_backend(backend);
            backend_ops(opt.backend);
        } catch (const InputError& e) {
            const std::string why = e.what();
            throw py::value_error("backend: '" + backend + "': " + why.substr(why.find(": ") + 2));
        }
        const auto source = memory_phase_source(input.in);
        const UnwrapReport rep = run_unwrap(opt, *source, result, MPI_COMM_SELF);
        TESSERA_INVARIANT(rep.conflicts == 0, std::to_string(rep.conflicts) + " union-find conflicts");
    } catch (const InputError& e) {
        throw py::value_error(e.what());  // bad input or options: one line, as the CLI prints it
    } catch (const InvariantError& e) {
        throw std::runtime_error(e.what());  // a bug in tessera: RuntimeError
    }
    return py::make_tuple(std::move(unw), std::move(conncomp));
}

constexpr const char* kUnwrapDoc = R"doc(unwrap(phase_or_ifg, coherence=None, mask=None, *, cut_radius=16, min_coherence=0.0,
       min_component_size=100, tile_size=512, reference=None, backend='auto', nodata=None,
       device=None, memory_limit=None, gpu_memory_limit=None, chunk_rows=None, scratch=None,
       cycle_correction=True, far_reach=True) -> (unw, conncomp)

Unwraps a 2-D wrapped phase; the result is the command line's (`tessera unwrap`), bit for bit.

phase_or_ifg : float32/float64 wrapped phase in radians ([-pi, pi] or [0, 2 pi)), or a
    complex64/complex128 interferogram (phase = arg). NaN/Inf, complex 0 and `nodata` are
    invalid.
coherence : optional real array of the same shape, in [0, 1]; 0 or NaN is masked.
mask : optional bool/integer/real array of the same shape; nonzero = valid.
cut_radius : longest branch cut between two residues, pixels (L1; --cut-radius).
min_coherence : pixels below it (with `coherence`) are not integrated through: NaN, label 0.
min_component_size : components smaller than this get label 0.
tile_size : tile side; the result does not depend on it.
reference : (row, col) where unw = 0 (MintPy's REF_Y/REF_X); default: none.
backend : 'auto' (CUDA when this tessera has it and a GPU is visible), 'cpu' or 'cuda'; the
    result is the same.
nodata : phase value (real part of an interferogram) that marks invalid pixels.
device : CUDA device (default: the first).
memory_limit, gpu_memory_limit : bytes the run may hold on the host and on the GPU (default:
    what is available); a run that does not fit in one piece runs in chunks, same result.
chunk_rows : chunks of this many rows (whole tiles) whatever the limits (--chunk-rows).
scratch : a directory for a run in chunks to keep its second pass in (--scratch), same result.
cycle_correction : False leaves each pixel's cycles as the cuts give them
    (--no-cycle-correction; docs/ARCHITECTURE.md 4.1).
far_reach : False cuts a cluster with nothing within cut_radius straight to the image side
    (--no-far-reach; docs/ARCHITECTURE.md 3.6).
guide_window : N (odd, >= 3) unwraps a few-look noisy phase through the argument of its N x N
    averaged phasors, each pixel then taking the cycle nearest it (--guide-window;
    docs/ARCHITECTURE.md 2.1); 0: none; 'auto' (the default): 5 when residues lie on more
    than 5 % of the plaquettes, else none (2.2).

Returns (unw, conncomp): float32 unwrapped phase (NaN where invalid) and uint32 connected
components (1..N by size descending, 0 = invalid, low coherence or small component).
Raises TypeError (dtype, not an array) or ValueError (shape, values, options) naming the
argument. The GIL is released while it runs; calls from several threads run one at a time.)doc";

}  // namespace

}  // namespace tessera::python

PYBIND11_MODULE(tessera, m) {
    m.doc() = "tessera: exact, tiled phase unwrapping (MPI + GPU) on NumPy arrays. See tessera.unwrap.";
    m.attr("__version__") = TESSERA_VERSION;
    // MPI once per process; ended at exit only when this module started it (mpi4py may have).
    if (tessera::start_mpi_if_needed())
        py::module_::import("atexit").attr("register")(py::cpp_function([] { tessera::finalize_mpi(); }));
    using namespace pybind11::literals;
    m.def("unwrap", &tessera::python::unwrap, tessera::python::kUnwrapDoc, "phase_or_ifg"_a,
          "coherence"_a = py::none(), "mask"_a = py::none(), py::kw_only(), "cut_radius"_a = 16,
          "min_coherence"_a = 0.0, "min_component_size"_a = 100, "tile_size"_a = 512, "reference"_a = py::none(),
          "backend"_a = "auto", "nodata"_a = py::none(), "device"_a = py::none(), "memory_limit"_a = py::none(),
          "gpu_memory_limit"_a = py::none(), "chunk_rows"_a = py::none(), "scratch"_a = py::none(),
          "cycle_correction"_a = true, "far_reach"_a = true, "guide_window"_a = "auto");
}
