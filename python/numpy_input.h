// NumPy arrays as the input of an unwrap (io/phase_source.h: MemoryInput): shape and dtype
// checked with a Python exception naming the argument, each array kept alive, C-contiguous and
// in native byte order, while the run reads it.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "io/phase_source.h"

namespace tessera::python {

namespace py = pybind11;

struct NumpyInput {
    MemoryInput in;                  // spans into the arrays below
    py::array phase, coherence, mask;  // the phase's own dtype; float32; uint8 with 1 = valid
};

// phase_or_ifg: 2-D float32/float64 wrapped phase or complex64/complex128 interferogram.
// coherence: None or a real array of the same shape (cast to float32, as the CLI reads a
// coherence raster). mask: None or a bool, integer or real array of the same shape (nonzero
// and finite = valid, as the CLI reads a mask raster). Throws py::type_error (dtype, not an
// array) or py::value_error (shape) naming the argument. With the GIL held.
NumpyInput numpy_input(const py::handle& phase_or_ifg, const py::handle& coherence, const py::handle& mask);

// "(300, 400)"
std::string shape_text(const py::array& a);

}  // namespace tessera::python
