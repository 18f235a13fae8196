#include "python/numpy_input.h"

#include <cmath>
#include <complex>
#include <cstdint>

namespace tessera::python {

namespace {

constexpr auto kCast = py::array::c_style | py::array::forcecast;

std::string dtype_name(const py::array& a) { return py::str(a.dtype()).cast<std::string>(); }

// `obj` as an array (lists too, as NumPy reads them); a TypeError naming `arg` otherwise.
py::array as_array(const py::handle& obj, const char* arg) {
    py::array a = py::array::ensure(obj);
    if (!a) {
        PyErr_Clear();
        throw py::type_error(std::string(arg) + ": expected a NumPy array, got " +
                             py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>());
    }
    return a;
}

// A second array of the phase's shape.
void check_same_shape(const py::array& a, const py::array& phase, const char* arg) {
    if (a.ndim() != 2 || a.shape(0) != phase.shape(0) || a.shape(1) != phase.shape(1))
        throw py::value_error(std::string(arg) + ": shape " + shape_text(a) + " differs from the phase's " +
                              shape_text(phase));
}

template <class T>
std::span<const T> span_of(const py::array& a) {
    return {static_cast<const T*>(a.data()), static_cast<size_t>(a.size())};
}

}  // namespace

std::string shape_text(const py::array& a) {
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
    return s + (a.ndim() == 1 ? ",)" : ")");
}

NumpyInput numpy_input(const py::handle& phase_or_ifg, const py::handle& coherence, const py::handle& mask) {
    NumpyInput n;
    const py::array p = as_array(phase_or_ifg, "phase_or_ifg");
    const char kind = p.dtype().kind();
    const auto size = p.dtype().itemsize();
    if (!(kind == 'f' && (size == 4 || size == 8)) && !(kind == 'c' && (size == 8 || size == 16)))
        throw py::type_error("phase_or_ifg: dtype " + dtype_name(p) +
                             " is neither a wrapped phase (float32, float64) nor an interferogram (complex64, "
                             "complex128)");
    if (p.ndim() != 2)
        throw py::value_error("phase_or_ifg: expected a 2-D array (rows x cols), got " + std::to_string(p.ndim()) +
                              "-D of shape " + shape_text(p));
    n.in.H = p.shape(0), n.in.W = p.shape(1);
    // Each dtype as the GDAL source reads a band of that type (io/phase_source.h).
    if (kind == 'f' && size == 4) {
        n.phase = py::array_t<float, kCast>::ensure(p), n.in.phase = span_of<float>(n.phase);
    } else if (kind == 'f' && size == 8) {
        n.phase = py::array_t<double, kCast>::ensure(p), n.in.phase64 = span_of<double>(n.phase);
    } else if (kind == 'c' && size == 8) {
        n.phase = py::array_t<std::complex<float>, kCast>::ensure(p), n.in.ifg = span_of<std::complex<float>>(n.phase);
    } else {
        n.phase = py::array_t<std::complex<double>, kCast>::ensure(p);
        n.in.ifg64 = span_of<std::complex<double>>(n.phase);
    }
    if (!n.phase) throw py::error_already_set();

    if (!coherence.is_none()) {
        const py::array c = as_array(coherence, "coherence");
        check_same_shape(c, p, "coherence");
        if (c.dtype().kind() != 'f')
            throw py::type_error("coherence: dtype " + dtype_name(c) + " is not real floating point (float32, float64)");
        n.coherence = py::array_t<float, kCast>::ensure(c);
        if (!n.coherence) throw py::error_already_set();
        n.in.coherence = span_of<float>(n.coherence);
    }

    if (!mask.is_none()) {
        const py::array m = as_array(mask, "mask");
        check_same_shape(m, p, "mask");
        const char mk = m.dtype().kind();
        if (mk != 'b' && mk != 'u' && mk != 'i' && mk != 'f')
            throw py::type_error("mask: dtype " + dtype_name(m) + " is not bool, integer or real (nonzero = valid)");
        py::array_t<uint8_t> valid({n.in.H, n.in.W});
        uint8_t* v = valid.mutable_data();
        if (mk == 'b' || (mk != 'f' && m.dtype().itemsize() == 1)) {  // bytes: nonzero as they are
            const auto b = py::array_t<uint8_t, kCast>::ensure(m);
            for (py::ssize_t i = 0; i < b.size(); ++i) v[i] = b.data()[i] != 0;
        } else {  // wider: through double, NaN invalid (RasterReader::read_mask)
            const auto d = py::array_t<double, kCast>::ensure(m);
            if (!d) throw py::error_already_set();
            for (py::ssize_t i = 0; i < d.size(); ++i) v[i] = std::isfinite(d.data()[i]) && d.data()[i] != 0.0;
        }
        n.mask = valid;
        n.in.mask = span_of<uint8_t>(n.mask);
    }
    return n;
}

}  // namespace tessera::python
