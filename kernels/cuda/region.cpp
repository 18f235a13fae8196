// cuda::Region: host side of the CUDA backend (g++, C++20). The device kernels are in the
// .cu files beside it, declared in kernels/cuda/kernels.h.
#include "kernels/cuda/region.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <future>
#include <mutex>

#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kernels.h"
#include "kernels/label_width.h"
#include "kernels/union_find.h"

namespace tessera::cuda {

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();  // no driver / no device: not an error here
        return 0;
    }
    return n;
}

int select_device(int local_rank) {
    const int n = device_count();
    if (n == 0) return -1;
    const int d = (local_rank % n + n) % n;
    check(cudaSetDevice(d), "cudaSetDevice");
    return d;
}

namespace {

// Every Region allocates stream-ordered from the device's pool (keep_pool_memory): it neither
// maps memory nor synchronises the device (cudaMalloc and cudaFree do) when it is made and
// released, so frame lanes do not stall each other and a stack of scenes (or a benchmark's
// repeats) reuses the first one's memory: about 4 ms of cudaMalloc at 16384², measured on the
// lent H100. The pool keeps that memory until the process ends (its peak, which it had).
template <class T>
T* device_alloc(size_t count, cudaStream_t s, const char* what) {
    void* p = nullptr;
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(T);
    check(cudaMallocAsync(&p, bytes, s), what);
    return static_cast<T*>(p);
}

void device_free(void* p, cudaStream_t s) noexcept {
    if (p) (void)cudaFreeAsync(p, s);
}

// Host arrays smaller than this are not worth page-locking.
constexpr size_t kPinMin = size_t{4} << 20;

// Stream-ordered allocations (cudaMallocAsync: matching, CUB scratch) keep their memory in the
// device's pool between stages and frames instead of returning it to the driver at every
// synchronisation (the default release threshold, 0).
void keep_pool_memory() {
    int dev = 0;
    cudaMemPool_t pool = nullptr;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    uint64_t keep = UINT64_MAX;
    if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) (void)cudaGetLastError();
}

// Whether any byte of p[0, n) is non-zero, on the host's threads.
bool any_set(const uint8_t* p, size_t n) {
    const int64_t words = static_cast<int64_t>(n / 8);
    uint64_t acc = 0;
#pragma omp parallel for reduction(| : acc) schedule(static)
    for (int64_t i = 0; i < words; ++i) {
        uint64_t w;
        std::memcpy(&w, p + static_cast<size_t>(i) * 8, 8);
        acc |= w;
    }
    for (size_t i = static_cast<size_t>(words) * 8; i < n; ++i) acc |= p[i];
    return acc != 0;
}

bool pinning_enabled() {
    const char* e = std::getenv("TESSERA_CUDA_PIN");
    return !(e && std::strcmp(e, "0") == 0);
}

}  // namespace

struct Region::Impl {
    RegionArrays a;
    Window own;
    TileGrid grid;
    cudaStream_t s = nullptr;
    DeviceArrays d;                 // phase, flags over buf
    uint64_t* nodes = nullptr;      // own.size() union-find words (also the residue scratch)
    TileRoots tile_roots;           // from union_find() to apply() (kernels.h)
    uint64_t* uniform_rows = nullptr;  // a scene's own.rows words from apply() to finish() (uniform_label_rows)
    void* label = nullptr;          // own.size() of label_bytes each, from apply() to finish()
    int label_bytes = 4;            // ComponentAssignment::label_bytes (kernels/label_width.h)
    size_t label_alloc = 0;         // bytes allocated at label
    int32_t* cycles = nullptr;      // own.size() when a.cycles is set, likewise
    bool applied = false;
    std::vector<void*> pinned;      // host ranges this Region registered (cudaHostRegister)
    std::mutex pinned_mu;           // pin() runs on helper threads too
    std::future<void> label_pin;    // a scene's a.label page-locked beside the upload; finish() waits

    bool own_stream = true;
    bool phase_in_place = false;  // d.phase is DeviceInput's (in_place), not freed here

    // A scene's copies run on a second stream beside the kernels' (a frame's stay on s): the
    // flags go up while residues and matching need only the phase; the cut bits come down
    // while the union-find runs; u and labels come down by row bands as apply finishes them.
    cudaStream_t cs = nullptr;
    cudaEvent_t flags_up = nullptr, cuts_down = nullptr;
    bool flags_waited = false, cuts_downloading = false;
    bool flags_clear = false;  // every flag is 0 (none set at upload, no cut placed yet)
    std::vector<cudaEvent_t> band_done;  // apply's row bands, in order
    std::vector<int64_t> band_rows;      // band b: own rows [band_rows[b], band_rows[b+1])

    Impl(const RegionArrays& a_, const Window& own_, const TileGrid& grid_, const DeviceInput* in,
         const RegionFill* fill = nullptr)
        : a(a_), own(own_), grid(grid_) {
        const Window& b = a.buf;
        if (own.rows <= 0 || own.cols <= 0) throw std::invalid_argument("cuda::Region: empty own window");
        if (own.row0 < b.row0 || own.col0 < b.col0 || own.row0 + own.rows > b.row0 + b.rows ||
            own.col0 + own.cols > b.col0 + b.cols)
            throw std::invalid_argument("cuda::Region: own window outside the arrays' buffer");
        // The one-pixel halo below and to the right, where the image continues.
        if ((own.row0 + own.rows < a.H && own.row0 + own.rows >= b.row0 + b.rows) ||
            (own.col0 + own.cols < a.W && own.col0 + own.cols >= b.col0 + b.cols))
            throw std::invalid_argument("cuda::Region: the buffer lacks the halo below / right of the own window");
        // Union-find words hold own-local indices in 32 bits.
        if (own.size() >= (int64_t{1} << 32))
            throw std::invalid_argument("cuda::Region: own window of 2^32 pixels or more (split it into regions)");
        try {
            keep_pool_memory();
            if (in && in->stream) {
                s = static_cast<cudaStream_t>(in->stream);
                own_stream = false;
            } else {
                check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
            }
            const size_t nb = static_cast<size_t>(b.size());
            // finish() downloads u (and flags) into the host arrays. A filled Region pins beside
            // the fill; a scene's labels are pinned on a thread of their own meanwhile (finish()
            // waits: registering a gigabyte takes ~50 ms on the lent H100 host).
            auto pin_arrays = [this, nb] {
                pin(a.phase, nb * sizeof(float));
                pin(a.flags, nb);
                pin(a.cycles, nb * sizeof(int32_t));
            };
            if (!in && a.label && pinning_enabled()) {
                int device = 0;
                check(cudaGetDevice(&device), "cudaGetDevice");
                label_pin = std::async(std::launch::async, [this, nb, device] {
                    if (cudaSetDevice(device) == cudaSuccess) pin(a.label, nb * sizeof(uint32_t));
                });
            }
            if (!fill) pin_arrays();
            d.H = a.H;
            d.W = a.W;
            d.buf = b;
            phase_in_place = in && in->in_place;
            d.phase = phase_in_place ? const_cast<float*>(in->phase) : device_alloc<float>(nb, s, "allocate phase");
            // The phase sets off before the other allocations (mapping gigabytes takes milliseconds the first time).
            if (!in && !fill) check(cudaMemcpyAsync(d.phase, a.phase, nb * sizeof(float), cudaMemcpyHostToDevice, s), "upload phase");
            d.flags = device_alloc<uint8_t>((nb + 3) / 4 * 4, s, "allocate flags");
            nodes = device_alloc<uint64_t>(static_cast<size_t>(own.size()), s, "allocate union-find nodes");
            if (fill) fill_and_upload(*fill, pin_arrays);
            if (in) {  // already on the device, in stream order
                check(cudaMemsetAsync(d.flags, 0, (nb + 3) / 4 * 4, s), "cudaMemset flags");
                flags_clear = !in->flags;
                if (!phase_in_place)
                    check(cudaMemcpyAsync(d.phase, in->phase, nb * sizeof(float), cudaMemcpyDeviceToDevice, s),
                          "copy device phase");
                if (in->flags)
                    check(cudaMemcpyAsync(d.flags, in->flags, nb, cudaMemcpyDeviceToDevice, s), "copy device flags");
                // The host flags must say what the device's do: the lakes are read from them
                // (host_arrays(); docs/ARCHITECTURE.md section 3.1).
                if (in->flags) {
                    check(cudaMemcpyAsync(a.flags, in->flags, nb, cudaMemcpyDeviceToHost, s), "download device flags");
                    check(cudaStreamSynchronize(s), "download device flags (sync)");
                } else {
                    std::memset(a.flags, 0, nb);
                }
            } else {
                check(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking), "cudaStreamCreate (copies)");
                check(cudaEventCreateWithFlags(&flags_up, cudaEventDisableTiming), "cudaEventCreate");
                check(cudaEventCreateWithFlags(&cuts_down, cudaEventDisableTiming), "cudaEventCreate");
                // The flags exist from their allocation's place in s's order on (stream-ordered
                // pool): the copy stream touches them after it. Behind the phase's upload, which
                // shares the bus with theirs anyway.
                {
                    cudaEvent_t allocated = nullptr;
                    check(cudaEventCreateWithFlags(&allocated, cudaEventDisableTiming), "cudaEventCreate");
                    const cudaError_t e1 = cudaEventRecord(allocated, s);
                    const cudaError_t e2 = e1 == cudaSuccess ? cudaStreamWaitEvent(cs, allocated, 0) : e1;
                    (void)cudaEventDestroy(allocated);  // the wait holds what it needs
                    check(e2, "cudaStreamWaitEvent (flags allocated)");
                }
                // No flag set (no nodata, mask or coherence threshold: the common case) needs no
                // upload: the host looks while the phase travels, and the device clears instead.
                if (any_set(a.flags, nb)) {
                    if (nb % 4) check(cudaMemsetAsync(d.flags + nb, 0, 4 - nb % 4, cs), "cudaMemset flags padding");
                    check(cudaMemcpyAsync(d.flags, a.flags, nb, cudaMemcpyHostToDevice, cs), "upload flags");
                } else {
                    check(cudaMemsetAsync(d.flags, 0, (nb + 3) / 4 * 4, cs), "cudaMemset flags");
                    flags_clear = true;
                }
                check(cudaEventRecord(flags_up, cs), "cudaEventRecord (flags up)");
                check(cudaStreamSynchronize(s), "upload (sync)");  // the phase; the flags may still travel
            }
        } catch (...) {
            release();
            throw;
        }
    }

    ~Impl() { release(); }

    // Runs the filler, uploading the phase rows it reports (from its threads, in any order) once
    // the host arrays are page-locked (on a thread of its own meanwhile); then the rest.
    template <class Pin>
    void fill_and_upload(const RegionFill& fill, Pin& pin_arrays) {
        const Window& b = a.buf;
        const size_t row_bytes = static_cast<size_t>(b.cols) * sizeof(float);
        int device = 0;
        check(cudaGetDevice(&device), "cudaGetDevice");
        std::shared_future<void> pinned_done = std::async(std::launch::async, [&pin_arrays, device] {
            if (cudaSetDevice(device) == cudaSuccess) pin_arrays();  // else the arrays stay pageable
        }).share();
        std::vector<uint8_t> sent(static_cast<size_t>(b.rows), 0);
        std::mutex mu;
        const RowsReady ready = [&](int64_t r0, int64_t n) {
            if (r0 < 0 || n < 0 || r0 + n > b.rows) throw std::out_of_range("cuda::Region: filled rows outside the buffer");
            if (n == 0) return;
            pinned_done.wait();
            const size_t off = static_cast<size_t>(r0) * static_cast<size_t>(b.cols);
            check(cudaMemcpyAsync(d.phase + off, a.phase + off, static_cast<size_t>(n) * row_bytes, cudaMemcpyHostToDevice, s),
                  "upload phase rows");
            std::lock_guard<std::mutex> lock(mu);
            std::fill(sent.begin() + r0, sent.begin() + r0 + n, uint8_t{1});
        };
        try {
            fill(ready);
        } catch (...) {
            pinned_done.wait();  // the pinning thread has registered what release() undoes
            throw;
        }
        pinned_done.get();
        for (int64_t r = 0; r < b.rows;) {  // rows never reported, in runs
            if (sent[static_cast<size_t>(r)]) {
                ++r;
                continue;
            }
            int64_t e = r;
            while (e < b.rows && !sent[static_cast<size_t>(e)]) ++e;
            const size_t off = static_cast<size_t>(r) * static_cast<size_t>(b.cols);
            check(cudaMemcpyAsync(d.phase + off, a.phase + off, static_cast<size_t>(e - r) * row_bytes, cudaMemcpyHostToDevice, s),
                  "upload phase");
            r = e;
        }
    }

    // Page-locks a large host array for the Region's lifetime; on any failure (already
    // registered, locked-memory limit, ...) the array simply stays pageable.
    void pin(void* p, size_t bytes) {
        if (!p || bytes < kPinMin || !pinning_enabled()) return;
        {
            std::lock_guard<std::mutex> lock(pinned_mu);
            if (std::find(pinned.begin(), pinned.end(), p) != pinned.end()) return;
        }
        cudaPointerAttributes at{};
        if (cudaPointerGetAttributes(&at, p) == cudaSuccess && at.type == cudaMemoryTypeHost) return;  // already
        (void)cudaGetLastError();
        if (cudaHostRegister(p, bytes, cudaHostRegisterDefault) == cudaSuccess) {
            std::lock_guard<std::mutex> lock(pinned_mu);
            pinned.push_back(p);
        } else {
            (void)cudaGetLastError();
        }
    }

    void release() noexcept {
        if (label_pin.valid()) label_pin.wait();
        if (cs) (void)cudaStreamSynchronize(cs);
        if (s) (void)cudaStreamSynchronize(s);
        for (void* p : pinned) (void)cudaHostUnregister(p);
        pinned.clear();
        if (phase_in_place) d.phase = nullptr;  // the caller's
        for (void* p : {static_cast<void*>(d.phase), static_cast<void*>(d.flags), static_cast<void*>(nodes),
                        static_cast<void*>(label), static_cast<void*>(cycles), tile_roots.mem,
                        static_cast<void*>(uniform_rows)})
            device_free(p, s);
        uniform_rows = nullptr;
        tile_roots = {};
        d.phase = nullptr;
        d.flags = nullptr;
        nodes = nullptr;
        label = nullptr;
        label_alloc = 0;
        cycles = nullptr;
        if (cs) (void)cudaStreamSynchronize(cs), (void)cudaStreamDestroy(cs);
        cs = nullptr;
        for (cudaEvent_t* e : {&flags_up, &cuts_down})
            if (*e) (void)cudaEventDestroy(*e), *e = nullptr;
        for (cudaEvent_t e : band_done) (void)cudaEventDestroy(e);
        band_done.clear();
        if (s && own_stream) (void)cudaStreamSynchronize(s), (void)cudaStreamDestroy(s);
        s = nullptr;
    }

    // The host label rows that hold one label (uniform_label_rows' words), written here.
    void fill_uniform_rows(const std::vector<uint64_t>& uniform) const {
        with_label_type(label_bytes, [&](auto l) {
            using L = decltype(l);
#pragma omp parallel for schedule(dynamic, 16)
            for (int64_t y = 0; y < own.rows; ++y) {
                const uint64_t u = uniform[static_cast<size_t>(y)];
                if (u) std::fill_n(static_cast<L*>(a.label) + a.index(own.row0 + y, own.col0), own.cols, static_cast<L>(u));
            }
        });
    }

    void free_tile_roots() {
        device_free(tile_roots.mem, s);
        tile_roots = {};
    }

    // (root, k) of the own-local window w's pixels (kernels.h resolve_words), row-major.
    std::vector<uint64_t> resolved(const Window& w) const {
        std::vector<uint64_t> out(static_cast<size_t>(w.size()));
        StreamBuffer<uint64_t> d(out.size(), s, "cudaMallocAsync (resolve)");
        resolve_words(nodes, own, w, d.get(), s);
        check(cudaMemcpyAsync(out.data(), d.get(), out.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, s),
              "resolve (download)");
        check(cudaStreamSynchronize(s), "resolve (sync)");
        return out;
    }

    // The copy stream, or s where there is none (a frame).
    cudaStream_t copies() const { return cs ? cs : s; }

    // Kernels on s that read or write the flags wait for their upload (once).
    void need_flags() {
        if (flags_waited || !flags_up) return;
        check(cudaStreamWaitEvent(s, flags_up, 0), "cudaStreamWaitEvent (flags up)");
        flags_waited = true;
    }

    // The cut bits are final once the cuts are rasterised: they go down to a.flags on the copy
    // stream while the union-find runs; apply (which marks roots in the flags) waits for them.
    void download_cut_bits_async() {
        if (!cs) return;
        check(cudaEventRecord(cuts_down, s), "cudaEventRecord (cuts)");
        check(cudaStreamWaitEvent(cs, cuts_down, 0), "cudaStreamWaitEvent (cuts)");
        copy_flags_down(cs);
        check(cudaEventRecord(cuts_down, cs), "cudaEventRecord (cuts down)");
        cuts_downloading = true;
    }

    void copy_flags_down(cudaStream_t st) {
        const int64_t base = a.index(own.row0, own.col0);
        const size_t bc = static_cast<size_t>(a.buf.cols);
        check(cudaMemcpy2DAsync(a.flags + base, bc, d.flags + base, bc, static_cast<size_t>(own.cols),
                                static_cast<size_t>(own.rows), cudaMemcpyDeviceToHost, st),
              "download flags");
    }

    int64_t local_of_root(int64_t root) const {
        const int64_t r = root / a.W, c = root % a.W;
        if (!own.contains(r, c)) throw std::logic_error("cuda::Region: component root outside the own window");
        return (r - own.row0) * own.cols + (c - own.col0);
    }
    int64_t global_of_local(int64_t l) const { return (own.row0 + l / own.cols) * a.W + own.col0 + l % own.cols; }
};

Region::Region(const RegionArrays& a, const Window& own, const TileGrid& grid)
    : impl_(std::make_unique<Impl>(a, own, grid, nullptr)) {}

Region::Region(const RegionArrays& a, const Window& own, const TileGrid& grid, const RegionFill& fill)
    : impl_(std::make_unique<Impl>(a, own, grid, nullptr, &fill)) {}

Region::Region(const RegionArrays& a, const Window& own, const TileGrid& grid, const DeviceInput& in)
    : impl_(std::make_unique<Impl>(a, own, grid, &in)) {
    if (!in.phase) throw std::invalid_argument("cuda::Region: DeviceInput without a phase");
}

Region::DeviceResult Region::device_result() const {
    const Impl& m = *impl_;
    if (!m.applied) throw std::logic_error("cuda::Region::device_result before apply()");
    const int64_t base = m.a.index(m.own.row0, m.own.col0);
    return {m.d.phase + base, m.label, m.label_bytes, m.a.buf.cols, m.own.cols, m.s};
}

const RegionArrays& Region::host_arrays() const { return impl_->a; }
Region::~Region() = default;
Region::Region(Region&&) noexcept = default;
Region& Region::operator=(Region&&) noexcept = default;

std::vector<Residue> Region::find_residues() {
    Impl& m = *impl_;
    std::vector<PlaquetteCharge> charges;
    cuda::find_residues(m.d, m.own, m.nodes, charges, m.s);
    std::vector<Residue> res;
    const int64_t pc = std::min(m.own.col0 + m.own.cols, m.a.W - 1) - m.own.col0;
    size_t total = 0;
    for (const PlaquetteCharge& q : charges) total += static_cast<size_t>(std::abs(q.q));
    res.reserve(total);
    // Raster order of plaquettes, then the sub-index: ascending ids, as the CPU's sort gives.
    for (const PlaquetteCharge& q : charges) {
        const int64_t r = m.own.row0 + q.index / pc, c = m.own.col0 + q.index % pc;
        const int32_t n = std::abs(q.q), sign = q.q > 0 ? 1 : -1;
        for (int32_t sub = 0; sub < n; ++sub)
            res.push_back({residue_id(r, c, m.a.W, sub), static_cast<int32_t>(r), static_cast<int32_t>(c), sign});
    }
    return res;
}

namespace {

// Host cuts -> device -> cut bits (after block_invalid_edges), in stream order; synchronises.
void rasterise_host_cuts(const DeviceArrays& d, const Window& own, std::span<const Cut> cuts, cudaStream_t s) {
    if (!cuts.empty()) {
        std::vector<DeviceCut> dc(cuts.size());
        for (size_t i = 0; i < cuts.size(); ++i) {
            const Cut& c = cuts[i];
            dc[i] = {c.ra, c.ca, c.rb, c.cb, static_cast<int32_t>(c.side)};
        }
        DeviceCut* d_cuts = nullptr;
        check(cudaMallocAsync(reinterpret_cast<void**>(&d_cuts), dc.size() * sizeof(DeviceCut), s),
              "place_cuts (cudaMallocAsync)");
        cudaError_t e = cudaMemcpyAsync(d_cuts, dc.data(), dc.size() * sizeof(DeviceCut), cudaMemcpyHostToDevice, s);
        if (e == cudaSuccess) {
            try {
                rasterise_cuts(d, own, d_cuts, static_cast<int64_t>(dc.size()), s);
            } catch (...) {
                (void)cudaFreeAsync(d_cuts, s);
                throw;
            }
        }
        const cudaError_t ef = cudaFreeAsync(d_cuts, s);
        check(e, "place_cuts (upload cuts)");
        check(ef, "place_cuts (cudaFreeAsync)");
    }
    check(cudaStreamSynchronize(s), "place_cuts (sync)");
}

}  // namespace

void Region::place_cuts(std::span<const Cut> cuts) {
    Impl& m = *impl_;
    m.need_flags();
    block_invalid_edges(m.d, m.own, std::exchange(m.flags_clear, false), m.s);
    rasterise_host_cuts(m.d, m.own, cuts, m.s);
    m.download_cut_bits_async();
}

RegionComponents Region::union_find() {
    Impl& m = *impl_;
    RegionComponents out;
    m.need_flags();
    std::vector<uint64_t> roots;
    m.free_tile_roots();
    out.conflicts = union_find_components(m.d, m.own, m.nodes, roots, m.tile_roots, m.s);
    out.records.reserve(roots.size());
    for (uint64_t w : roots)  // pack(own-local root, reliable-pixel count), ascending roots
        out.records.push_back({m.global_of_local(uf::parent(w)), static_cast<int64_t>(w >> 32)});
    return out;
}

NodeValue Region::node(int64_t r, int64_t c) const {
    const Impl& m = *impl_;
    if (!m.own.contains(r, c)) throw std::out_of_range("cuda::Region::node: pixel outside the own window");
    const uint64_t w = m.resolved(Window{r - m.own.row0, c - m.own.col0, 1, 1})[0];
    return {m.global_of_local(uf::parent(w)), uf::potential(w)};
}

std::vector<PixelState> Region::strip(const Window& w) const {
    const Impl& m = *impl_;
    if (w.size() <= 0) return {};
    if (!m.own.contains(w.row0, w.col0) || !m.own.contains(w.row0 + w.rows - 1, w.col0 + w.cols - 1))
        throw std::out_of_range("cuda::Region::strip: window outside the own window");
    const size_t n = static_cast<size_t>(w.size()), wc = static_cast<size_t>(w.cols), rows = static_cast<size_t>(w.rows);
    const std::vector<uint64_t> words = m.resolved(Window{w.row0 - m.own.row0, w.col0 - m.own.col0, w.rows, w.cols});
    std::vector<uint8_t> flags(n);
    std::vector<float> phase(n);
    const int64_t b0 = m.a.index(w.row0, w.col0);
    check(cudaMemcpy2DAsync(flags.data(), wc, m.d.flags + b0, static_cast<size_t>(m.a.buf.cols), wc, rows,
                            cudaMemcpyDeviceToHost, m.s),
          "strip (download flags)");
    // Before apply() the device phase is still the wrapped phase (the host's may never have held it).
    check(cudaMemcpy2DAsync(phase.data(), wc * sizeof(float), m.d.phase + b0, static_cast<size_t>(m.a.buf.cols) * sizeof(float),
                            wc * sizeof(float), rows, cudaMemcpyDeviceToHost, m.s),
          "strip (download phase)");
    check(cudaStreamSynchronize(m.s), "strip (sync)");
    std::vector<PixelState> out(n);
    for (int64_t y = 0; y < w.rows; ++y)
        for (int64_t x = 0; x < w.cols; ++x) {
            const size_t i = static_cast<size_t>(y * w.cols + x);
            out[i] = {m.global_of_local(uf::parent(words[i])), uf::potential(words[i]), phase[i], flags[i]};
        }
    return out;
}

void Region::apply(const ComponentAssignment& as) {
    Impl& m = *impl_;
    const size_t n = as.records.size();
    if (as.offset.size() != n || as.label.size() != n)
        throw std::invalid_argument("cuda::Region::apply: records, offsets and labels differ in length");
    with_label_type(as.label_bytes, [](auto) {});  // another width throws before anything is allocated
    const size_t npx = static_cast<size_t>(m.own.size());
    m.label_bytes = as.label_bytes;
    if (m.label_alloc < npx * static_cast<size_t>(m.label_bytes)) {
        device_free(m.label, m.s);
        m.label = nullptr;
        m.label_alloc = 0;
        m.label = device_alloc<uint8_t>(npx * static_cast<size_t>(m.label_bytes), m.s, "allocate labels");
        m.label_alloc = npx * static_cast<size_t>(m.label_bytes);
    }
    if (m.a.cycles && !m.cycles) m.cycles = device_alloc<int32_t>(npx, m.s, "allocate cycles");
    if (m.cs && m.a.label && !m.uniform_rows)
        m.uniform_rows = device_alloc<uint64_t>(static_cast<size_t>(m.own.rows), m.s, "allocate uniform rows");
    m.need_flags();
    // Root marks go into the flags: not before the cut bits have left for the host.
    if (m.cuts_downloading) check(cudaStreamWaitEvent(m.s, m.cuts_down, 0), "cudaStreamWaitEvent (cuts down)");
    if (n > 0) {
        constexpr size_t kChunk = size_t{1} << 20;  // 16 MiB of records per upload
        const size_t chunk = std::min(n, kChunk);
        std::vector<DeviceRootRecord> host(chunk);
        DeviceRootRecord* d_recs = device_alloc<DeviceRootRecord>(chunk, m.s, "cudaMallocAsync apply records");
        try {
            for (size_t b = 0; b < n; b += chunk) {
                const size_t e = std::min(n, b + chunk);
                for (size_t i = b; i < e; ++i)
                    host[i - b] = {static_cast<uint32_t>(m.local_of_root(as.records[i].root)), as.offset[i],
                                   as.label[i], 0};
                check(cudaMemcpyAsync(d_recs, host.data(), (e - b) * sizeof(DeviceRootRecord),
                                      cudaMemcpyHostToDevice, m.s),
                      "apply (upload records)");
                mark_roots(m.d, m.own, m.nodes, d_recs, static_cast<int64_t>(e - b), m.s);
                check(cudaStreamSynchronize(m.s), "apply (mark roots)");  // before host[] is refilled
            }
        } catch (...) {
            (void)cudaFreeAsync(d_recs, m.s);
            throw;
        }
        check(cudaFreeAsync(d_recs, m.s), "cudaFreeAsync apply records");
    }
    mark_tile_roots(m.d, m.own, m.nodes, m.tile_roots, m.s);
    m.free_tile_roots();
    // Row bands of at least 2048 rows, at most 8: each band's download (finish) starts when it is done.
    const int64_t bands = std::clamp<int64_t>(m.own.rows / 2048, 1, 8);
    m.band_rows.assign(1, 0);
    for (int64_t b = 1; b <= bands; ++b) m.band_rows.push_back(m.own.rows * b / bands);
    while (m.band_done.size() < static_cast<size_t>(bands)) {
        cudaEvent_t e = nullptr;
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate (band)");
        m.band_done.push_back(e);
    }
    for (int64_t b = 0; b < bands; ++b) {
        apply_offsets(m.d, m.own, m.band_rows[b], m.band_rows[b + 1], m.nodes, m.label, m.label_bytes, m.cycles, m.s);
        if (m.uniform_rows)
            uniform_label_rows(m.label, m.label_bytes, m.own, m.band_rows[b], m.band_rows[b + 1],
                               m.uniform_rows + m.band_rows[b], m.s);
        check(cudaEventRecord(m.band_done[static_cast<size_t>(b)], m.s), "cudaEventRecord (band)");
    }
    m.applied = true;
}

void Region::finish() {
    Impl& m = *impl_;
    const Window& o = m.own;
    const size_t bc = static_cast<size_t>(m.a.buf.cols), oc = static_cast<size_t>(o.cols);
    const cudaStream_t cs = m.copies();
    const size_t nbands = m.band_rows.empty() ? 0 : m.band_rows.size() - 1;
    const size_t lb = static_cast<size_t>(m.label_bytes);
    if (m.applied && m.a.label) {
        if (m.label_pin.valid())
            m.label_pin.get();
        else
            m.pin(m.a.label, static_cast<size_t>(m.a.buf.size()) * sizeof(uint32_t));
    }
    // Per own row: (1 << 32) | its label where the row holds one label (filled here, not copied).
    std::vector<uint64_t> uniform;
    if (m.applied) {
        // Band by band, each as soon as apply has written it (the copy stream waits on its event).
        for (size_t b = 0; b < nbands; ++b) {
            const int64_t y0 = m.band_rows[b], rows = m.band_rows[b + 1] - y0;
            if (rows <= 0) continue;
            if (m.cs) check(cudaStreamWaitEvent(cs, m.band_done[b], 0), "cudaStreamWaitEvent (band)");
            const int64_t base = m.a.index(o.row0 + y0, o.col0);
            const size_t l0 = static_cast<size_t>(y0) * oc;
            check(cudaMemcpy2DAsync(m.a.phase + base, bc * sizeof(float), m.d.phase + base, bc * sizeof(float),
                                    oc * sizeof(float), static_cast<size_t>(rows), cudaMemcpyDeviceToHost, cs),
                  "finish (download unwrapped phase)");
            if (m.a.label && m.uniform_rows && uniform.empty()) {
                // Every band's row words, once band 0's u is on its way (the kernels are long
                // done before it arrives: apply runs ahead of the copies).
                uniform.resize(static_cast<size_t>(o.rows));
                check(cudaMemcpyAsync(uniform.data(), m.uniform_rows, uniform.size() * sizeof(uint64_t),
                                      cudaMemcpyDeviceToHost, m.s),
                      "finish (download uniform rows)");
                check(cudaStreamSynchronize(m.s), "finish (uniform rows)");
            }
            // The other rows as narrow as apply wrote them (kernels/label_width.h), in runs.
            for (int64_t r = y0; m.a.label && r < y0 + rows;) {
                if (!uniform.empty() && uniform[static_cast<size_t>(r)]) {
                    ++r;
                    continue;
                }
                int64_t e = r + 1;
                while (e < y0 + rows && (uniform.empty() || !uniform[static_cast<size_t>(e)])) ++e;
                const int64_t at = m.a.index(o.row0 + r, o.col0);
                check(cudaMemcpy2DAsync(static_cast<uint8_t*>(m.a.label) + static_cast<size_t>(at) * lb, bc * lb,
                                        static_cast<const uint8_t*>(m.label) + static_cast<size_t>(r) * oc * lb, oc * lb,
                                        oc * lb, static_cast<size_t>(e - r), cudaMemcpyDeviceToHost, cs),
                      "finish (download labels)");
                r = e;
            }
            if (m.a.cycles)
                check(cudaMemcpy2DAsync(m.a.cycles + base, bc * sizeof(int32_t), m.cycles + l0, oc * sizeof(int32_t),
                                        oc * sizeof(int32_t), static_cast<size_t>(rows), cudaMemcpyDeviceToHost, cs),
                      "finish (download cycles)");
        }
    }
    // Cut bits, as the CPU leaves them in a.flags (the /branch_cuts output reads them): already
    // on their way since the cuts were placed, else now (after apply has cleared its root marks).
    if (!m.cuts_downloading) {
        m.need_flags();
        if (m.cs) {
            check(cudaEventRecord(m.cuts_down, m.s), "cudaEventRecord (finish)");
            check(cudaStreamWaitEvent(cs, m.cuts_down, 0), "cudaStreamWaitEvent (finish)");
        }
        m.copy_flags_down(cs);
    }
    if (!uniform.empty()) m.fill_uniform_rows(uniform);  // beside the copies
    check(cudaStreamSynchronize(cs), "finish (sync copies)");
    check(cudaStreamSynchronize(m.s), "finish (sync)");
    m.cuts_downloading = false;
    for (void** p : {reinterpret_cast<void**>(&m.label), reinterpret_cast<void**>(&m.cycles),
                     reinterpret_cast<void**>(&m.uniform_rows)})
        if (*p) {
            device_free(*p, m.s);
            *p = nullptr;
        }
    m.applied = false;
}

}  // namespace tessera::cuda
