// cuda::Region (region.h): the region's device state and its stages, each a few calls of the
// kernels (kernels.h) in the order of the Region's stream. Device memory is held by RAII
// arrays (device_buffer.h); the host arrays' page-locking is host_staging.h's, the way up
// region_upload.h's, the way down banded_download.h's, the stages' records region_records.h's.
#include "kernels/cuda/region.h"

#include <cstddef>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <utility>

#include "kernels/cuda/banded_download.h"
#include "kernels/cuda/cycle_correction.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/host_staging.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/region_records.h"
#include "kernels/cuda/region_upload.h"
#include "kernels/label_width.h"
#include "kernels/lap.h"
#include "kernels/union_find.h"

namespace tessera::cuda {
namespace {

// Every Region allocates stream-ordered from the device's pool (StreamBuffer): it neither maps
// memory nor synchronises the device (cudaMalloc and cudaFree do) when it is made and released,
// so frame lanes do not stall each other and a stack of scenes (or a benchmark's repeats) reuses
// the first one's memory: about 4 ms of cudaMalloc at 16384², measured on the lent H100. The
// pool keeps that memory (its peak, which it had) until the process ends, instead of returning
// it to the driver at every synchronisation (the default release threshold, 0).
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

}  // namespace

struct Region::Impl {
    RegionArrays a;
    Window own;
    TileGrid grid;

    // The kernels' stream: the Region's own, or a frame's (DeviceInput::stream; not owned).
    std::optional<Stream> own_stream;
    cudaStream_t s = nullptr;
    // A scene's copies run on a second stream beside the kernels' (a frame's stay on s): the
    // flags go up while residues and matching need only the phase; the cut bits come down
    // while the union-find runs; u and labels come down by row bands as apply finishes them.
    std::optional<Stream> copy_stream;
    std::optional<Event> flags_up, cuts_down;
    RowBands bands;  // apply's, with their events

    // Device memory, in the budget of region.h's header (all freed in s's order).
    DeviceArrays d;                       // the kernels' view: phase and flags over buf
    StreamBuffer<float> phase_mem;        // d.phase unless it is a DeviceInput's (in place)
    StreamBuffer<uint8_t> flags_mem;      // d.flags, padded to 4 bytes
    StreamBuffer<uint64_t> nodes;         // own.size() union-find words (also the residue scratch)
    TileRootList tile_roots;              // from union_find() to apply()
    StreamBuffer<uint8_t> label;          // own.size() of label_bytes each, from apply() to finish()
    int label_bytes = 4;                  // ComponentAssignment::label_bytes (kernels/label_width.h)
    StreamBuffer<int32_t> cycles;         // own.size() when a.cycles is set, likewise
    StreamBuffer<uint64_t> uniform_rows;  // a scene's own.rows words, likewise (uniform_label_rows)

    // Last, so first to go: it unregisters the host arrays once ~Impl has waited for the copies.
    HostStaging staging;

    bool applied = false;
    std::vector<uint32_t> corrected;  // own-local pixels correct_cycles changed, flagged by finish()
    bool flags_waited = false, cuts_downloading = false;
    bool flags_clear = false;  // every flag is 0 (none set at upload, no cut placed yet)

    // Checks the windows and sets up the stream; the arrays come with upload() or copy_in().
    Impl(const RegionArrays& a_, const Window& own_, const TileGrid& grid_, void* stream)
        : a(a_), own(own_), grid(grid_), staging(a_) {
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
        keep_pool_memory();
        s = stream ? static_cast<cudaStream_t>(stream) : own_stream.emplace().get();
        d.H = a.H;
        d.W = a.W;
        d.buf = b;
    }

    // No copy touches the host arrays or the device memory once the members go (staging first).
    ~Impl() {
        staging.join();
        if (copy_stream) (void)cudaStreamSynchronize(copy_stream->get());
        (void)cudaStreamSynchronize(s);
    }

    // A scene: the host arrays up (filled by `fill` meanwhile where it is set).
    void upload(const RegionFill* fill) {
        const size_t nb = static_cast<size_t>(a.buf.size());
        // finish() downloads u (and flags) into the host arrays. A filled Region pins beside
        // the fill; the labels are pinned on a thread of their own meanwhile.
        staging.pin_labels_async();
        if (fill) {
            // The device arrays are made beside the fill (mapping gigabytes takes milliseconds the first time).
            upload_filled(*fill, a, staging, [this, nb] {
                d.phase = (phase_mem = StreamBuffer<float>(nb, s, "allocate phase")).get();
                allocate_flags_and_nodes();
                return d.phase;
            }, s);
        } else {
            staging.pin_inputs();
            d.phase = (phase_mem = StreamBuffer<float>(nb, s, "allocate phase")).get();
            // The phase sets off before the other allocations.
            check(cudaMemcpyAsync(d.phase, a.phase, nb * sizeof(float), cudaMemcpyHostToDevice, s), "upload phase");
            allocate_flags_and_nodes();
        }
        copy_stream.emplace("cudaStreamCreate (copies)");
        flags_up.emplace();
        cuts_down.emplace();
        flags_clear = upload_flags(a, d.flags, s, copy_stream->get(), flags_up->get());
        check(cudaStreamSynchronize(s), "upload (sync)");  // the phase; the flags may still travel
    }

    // A frame: the arrays from the device, in the order of s.
    void copy_in(const DeviceInput& in) {
        staging.pin_inputs();
        const size_t nb = static_cast<size_t>(a.buf.size());
        d.phase = in.in_place ? const_cast<float*>(in.phase)
                              : (phase_mem = StreamBuffer<float>(nb, s, "allocate phase")).get();
        allocate_flags_and_nodes();
        flags_clear = copy_device_input(a, d, in.phase, in.in_place, in.flags, s);
    }

    // apply()'s outputs, kept to finish(): labels label_bytes wide, cycles where a.cycles is set,
    // a scene's uniform label rows (where a.label is set).
    void allocate_results(int bytes) {
        const size_t npx = static_cast<size_t>(own.size());
        label_bytes = bytes;
        if (label.size() < npx * static_cast<size_t>(label_bytes)) {
            label.reset();  // before the wider one: never both
            label = StreamBuffer<uint8_t>(npx * static_cast<size_t>(label_bytes), s, "allocate labels");
        }
        if (a.cycles && !cycles) cycles = StreamBuffer<int32_t>(npx, s, "allocate cycles");
        if (copy_stream && a.label && !uniform_rows)
            uniform_rows = StreamBuffer<uint64_t>(static_cast<size_t>(own.rows), s, "allocate uniform rows");
    }

    void allocate_flags_and_nodes() {
        const size_t nb = static_cast<size_t>(a.buf.size());
        d.flags = (flags_mem = StreamBuffer<uint8_t>((nb + 3) / 4 * 4, s, "allocate flags")).get();
        nodes = StreamBuffer<uint64_t>(static_cast<size_t>(own.size()), s, "allocate union-find nodes");
    }

    // The copy stream, or s where there is none (a frame).
    cudaStream_t copies() const { return copy_stream ? copy_stream->get() : s; }

    // Kernels on s that read or write the flags wait for their upload (once).
    void need_flags() {
        if (flags_waited || !flags_up) return;
        check(cudaStreamWaitEvent(s, flags_up->get(), 0), "cudaStreamWaitEvent (flags up)");
        flags_waited = true;
    }

    // The cut bits are final once the cuts are rasterised: they go down to a.flags on the copy
    // stream while the union-find runs; apply (which marks roots in the flags) waits for them.
    void download_cut_bits_async() {
        if (!copy_stream) return;
        check(cudaEventRecord(cuts_down->get(), s), "cudaEventRecord (cuts)");
        check(cudaStreamWaitEvent(copies(), cuts_down->get(), 0), "cudaStreamWaitEvent (cuts)");
        download_own_flags(a, own, d.flags, copies());
        check(cudaEventRecord(cuts_down->get(), copies()), "cudaEventRecord (cuts down)");
        cuts_downloading = true;
    }

    // The cut bits down on the copy stream behind everything queued on s so far.
    void download_cut_bits_now() {
        need_flags();
        if (copy_stream) {
            check(cudaEventRecord(cuts_down->get(), s), "cudaEventRecord (finish)");
            check(cudaStreamWaitEvent(copies(), cuts_down->get(), 0), "cudaStreamWaitEvent (finish)");
        }
        download_own_flags(a, own, d.flags, copies());
    }

    // (root, k) of the own-local window w's pixels (kernels.h resolve_words), row-major.
    std::vector<uint64_t> resolved(const Window& w) const {
        std::vector<uint64_t> out(static_cast<size_t>(w.size()));
        const StreamBuffer<uint64_t> words(out.size(), s, "cudaMallocAsync (resolve)");
        resolve_words(nodes.get(), own, w, words.get(), s);
        check(cudaMemcpyAsync(out.data(), words.get(), out.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, s),
              "resolve (download)");
        check(cudaStreamSynchronize(s), "resolve (sync)");
        return out;
    }

    int64_t global_of(int64_t l) const { return global_of_local(l, own, a.W); }
};

// Each constructor makes the Impl (windows, stream) first: where the upload then throws, the
// Impl's destructor waits for what is in flight before its members free and unregister.
Region::Region(const RegionArrays& a, const Window& own, const TileGrid& grid)
    : impl_(std::make_unique<Impl>(a, own, grid, nullptr)) {
    impl_->upload(nullptr);
}

Region::Region(const RegionArrays& a, const Window& own, const TileGrid& grid, const RegionFill& fill)
    : impl_(std::make_unique<Impl>(a, own, grid, nullptr)) {
    impl_->upload(&fill);
}

Region::Region(const RegionArrays& a, const Window& own, const TileGrid& grid, const DeviceInput& in)
    : impl_(std::make_unique<Impl>(a, own, grid, in.stream)) {
    if (!in.phase) throw std::invalid_argument("cuda::Region: DeviceInput without a phase");
    impl_->copy_in(in);
}

Region::~Region() = default;
Region::Region(Region&&) noexcept = default;
Region& Region::operator=(Region&&) noexcept = default;

const RegionArrays& Region::host_arrays() const { return impl_->a; }

HostLocks Region::take_host_locks() {
    Impl& m = *impl_;
    if (m.copy_stream) check(cudaStreamSynchronize(m.copy_stream->get()), "take_host_locks (sync)");
    check(cudaStreamSynchronize(m.s), "take_host_locks (sync)");
    return m.staging.hand_over();
}

Region::DeviceResult Region::device_result() const {
    const Impl& m = *impl_;
    if (!m.applied) throw std::logic_error("cuda::Region::device_result before apply()");
    const int64_t base = m.a.index(m.own.row0, m.own.col0);
    return {m.d.phase + base, m.label.get(), m.label_bytes, m.a.buf.cols, m.own.cols, m.s};
}

ResidueList Region::find_residues() {
    Impl& m = *impl_;
    Lap lap;
    const int64_t n = compact_charges(m.d, m.own, m.nodes.get(), m.s);
    const double compact_ms = lap.next_ms();
    const UntouchedVector<PlaquetteCharge> charges = download_charges(m.nodes.get(), n, m.s);
    const double download_ms = lap.next_ms();
    ResidueList res = residues_of(charges, m.own, m.a.W);
    if (trace_on())
        std::fprintf(stderr, "tessera: find_residues: compact %.1f ms, download %.1f ms, residues_of %.1f ms (%lld plaquettes)\n",
                     compact_ms, download_ms, lap.next_ms(), static_cast<long long>(n));
    return res;
}

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
    out.conflicts = union_find_components(m.d, m.own, m.nodes.get(), roots, m.tile_roots.refill(m.s), m.s);
    out.records.reserve(roots.size());
    for (uint64_t w : roots)  // pack(own-local root, reliable-pixel count), ascending roots
        out.records.push_back({m.global_of(uf::parent(w)), static_cast<int64_t>(w >> 32)});
    return out;
}

NodeValue Region::node(int64_t r, int64_t c) const {
    const Impl& m = *impl_;
    if (!m.own.contains(r, c)) throw std::out_of_range("cuda::Region::node: pixel outside the own window");
    const uint64_t w = m.resolved(Window{r - m.own.row0, c - m.own.col0, 1, 1})[0];
    return {m.global_of(uf::parent(w)), uf::potential(w)};
}

std::vector<PixelState> Region::strip(const Window& w) const {
    const Impl& m = *impl_;
    if (w.size() <= 0) return {};
    if (!m.own.contains(w.row0, w.col0) || !m.own.contains(w.row0 + w.rows - 1, w.col0 + w.cols - 1))
        throw std::out_of_range("cuda::Region::strip: window outside the own window");
    const size_t n = static_cast<size_t>(w.size());
    // One kernel gathers the words, flags and phase (before apply() the device phase is still the
    // wrapped phase; the host's may never have held it): a column strip as a 2D copy went row by row.
    std::vector<uint64_t> words(n);
    std::vector<uint8_t> flags(n);
    std::vector<float> phase(n);
    {
        const StreamBuffer<uint64_t> d_words(n, m.s, "strip (allocate words)");
        const StreamBuffer<float> d_phase(n, m.s, "strip (allocate phase)");
        const StreamBuffer<uint8_t> d_flags(n, m.s, "strip (allocate flags)");
        const int64_t b0 = m.a.index(w.row0, w.col0);
        resolve_strip(m.nodes.get(), m.own, Window{w.row0 - m.own.row0, w.col0 - m.own.col0, w.rows, w.cols},
                      m.d.flags + b0, m.d.phase + b0, m.a.buf.cols, d_words.get(), d_flags.get(), d_phase.get(), m.s);
        check(cudaMemcpyAsync(words.data(), d_words.get(), n * sizeof(uint64_t), cudaMemcpyDeviceToHost, m.s), "strip (download words)");
        check(cudaMemcpyAsync(flags.data(), d_flags.get(), n, cudaMemcpyDeviceToHost, m.s), "strip (download flags)");
        check(cudaMemcpyAsync(phase.data(), d_phase.get(), n * sizeof(float), cudaMemcpyDeviceToHost, m.s), "strip (download phase)");
        check(cudaStreamSynchronize(m.s), "strip (sync)");
    }
    std::vector<PixelState> out(n);
    for (size_t i = 0; i < n; ++i)
        out[i] = {m.global_of(uf::parent(words[i])), uf::potential(words[i]), phase[i], flags[i]};
    return out;
}

UnionFindState Region::take_union_find() {
    Impl& m = *impl_;
    UnionFindState st;
    st.nodes.resize(static_cast<size_t>(m.own.size()));
    check(cudaMemcpyAsync(st.nodes.data(), m.nodes.get(), st.nodes.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, m.s),
          "take_union_find (nodes)");
    const TileRoots& tr = m.tile_roots.get();
    st.roots.resize(static_cast<size_t>(tr.n));
    if (tr.n > 0)
        check(cudaMemcpyAsync(st.roots.data(), tr.entries, st.roots.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, m.s),
              "take_union_find (tile roots)");
    // The cut bits into a.flags (the scratch keeps the host flags): on their way since place_cuts, else now.
    if (!m.cuts_downloading) m.download_cut_bits_now();
    check(cudaStreamSynchronize(m.copies()), "take_union_find (sync copies)");
    check(cudaStreamSynchronize(m.s), "take_union_find (sync)");
    m.cuts_downloading = false;
    m.tile_roots.reset();
    return st;
}

void Region::restore_union_find(UnionFindState st) {
    Impl& m = *impl_;
    if (st.nodes.size() != static_cast<size_t>(m.own.size()))
        throw std::invalid_argument("cuda::Region::restore_union_find: a state of another window");
    check(cudaMemcpyAsync(m.nodes.get(), st.nodes.data(), st.nodes.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, m.s),
          "restore_union_find (nodes)");
    TileRoots& tr = m.tile_roots.refill(m.s);
    if (!st.roots.empty()) {
        StreamBuffer<uint64_t> list(st.roots.size(), m.s, "restore_union_find (allocate tile roots)");
        check(cudaMemcpyAsync(list.get(), st.roots.data(), st.roots.size() * sizeof(uint64_t), cudaMemcpyHostToDevice, m.s),
              "restore_union_find (tile roots)");
        tr.entries = list.get();
        tr.n = static_cast<int64_t>(st.roots.size());
        tr.mem = list.release();  // freed by the TileRootList, on m.s
    }
    check(cudaStreamSynchronize(m.s), "restore_union_find (sync)");  // st's host words go at return
}

void Region::apply(const ComponentAssignment& as) {
    Impl& m = *impl_;
    const size_t n = as.records.size();
    if (as.offset.size() != n || as.label.size() != n)
        throw std::invalid_argument("cuda::Region::apply: records, offsets and labels differ in length");
    with_label_type(as.label_bytes, [](auto) {});  // another width throws before anything is allocated
    m.allocate_results(as.label_bytes);
    m.need_flags();
    // Root marks go into the flags: not before the cut bits have left for the host.
    if (m.cuts_downloading) check(cudaStreamWaitEvent(m.s, m.cuts_down->get(), 0), "cudaStreamWaitEvent (cuts down)");
    mark_assigned_roots(m.d, m.own, m.a.W, m.nodes.get(), as, m.s);
    mark_tile_roots(m.d, m.own, m.nodes.get(), m.tile_roots.get(), m.s);
    m.tile_roots.reset();
    // Row bands: each band's download (finish) starts when it is done.
    m.bands.plan(m.own.rows);
    for (size_t b = 0; b < m.bands.size(); ++b) {
        const int64_t y0 = m.bands.begin(b), y1 = m.bands.end(b);
        apply_offsets(m.d, m.own, y0, y1, m.nodes.get(), m.label.get(), m.label_bytes, m.cycles.get(), m.s);
        if (m.uniform_rows)
            uniform_label_rows(m.label.get(), m.label_bytes, m.own, y0, y1, m.uniform_rows.get() + y0, m.s);
        check(cudaEventRecord(m.bands.done(b), m.s), "cudaEventRecord (band)");
    }
    m.applied = true;
}

int64_t Region::correct_cycles(const CorrectionHalo& halo, int64_t keep) {
    Impl& m = *impl_;
    if (!m.applied) throw std::logic_error("cuda::Region::correct_cycles before apply()");
    const Window& own = m.own;
    std::vector<float> packed;  // above, below, left, right, as kernels/cuda/cycle_correction.h takes them
    std::vector<uint32_t> packed_label;
    for (auto part : {halo.above, halo.below, halo.left, halo.right}) packed.insert(packed.end(), part.begin(), part.end());
    for (auto part : {halo.above_label, halo.below_label, halo.left_label, halo.right_label})
        packed_label.insert(packed_label.end(), part.begin(), part.end());
    StreamBuffer<float> dev(packed.size(), m.s, "cycle correction (halo)");
    StreamBuffer<uint32_t> dev_label(packed_label.size(), m.s, "cycle correction (halo labels)");
    check(cudaMemcpyAsync(dev.get(), packed.data(), packed.size() * sizeof(float), cudaMemcpyHostToDevice, m.s),
          "cycle correction (halo up)");
    check(cudaMemcpyAsync(dev_label.get(), packed_label.data(), packed_label.size() * sizeof(uint32_t),
                          cudaMemcpyHostToDevice, m.s),
          "cycle correction (halo labels up)");
    // The union-find words are spent once apply has run: their memory holds the decisions.
    m.corrected = cuda::correct_cycles(m.d, own, m.label.get(), m.label_bytes, dev.get(), dev_label.get(),
                                       reinterpret_cast<int32_t*>(m.nodes.get()), m.cycles.get(), keep, m.s);
    // The bands' downloads (finish) wait for the corrections.
    for (size_t b = 0; b < m.bands.size(); ++b) check(cudaEventRecord(m.bands.done(b), m.s), "cudaEventRecord (band)");
    return static_cast<int64_t>(m.corrected.size());
}

void Region::finish() {
    Impl& m = *impl_;
    const cudaStream_t cs = m.copies();
    if (m.applied && m.a.label) m.staging.pin_labels();
    std::vector<uint64_t> uniform;  // label rows of one label, filled here rather than copied
    if (m.applied)
        uniform = download_bands(m.a, m.own, {m.d.phase, m.label.get(), m.label_bytes, m.cycles.get(), m.uniform_rows.get()},
                                 m.bands, m.s, cs);
    // Cut bits, as the CPU leaves them in a.flags (the /branch_cuts output reads them): already
    // on their way since the cuts were placed, else now (after apply has cleared its root marks).
    if (!m.cuts_downloading) m.download_cut_bits_now();
    if (!uniform.empty()) fill_uniform_label_rows(m.a, m.own, m.label_bytes, uniform);  // beside the copies
    check(cudaStreamSynchronize(cs), "finish (sync copies)");
    check(cudaStreamSynchronize(m.s), "finish (sync)");
    for (const uint32_t l : m.corrected)  // after the cut bits have landed in the same bytes
        m.a.flags[m.a.index(m.own.row0 + l / m.own.cols, m.own.col0 + l % m.own.cols)] |= kCycleCorrected;
    m.corrected.clear();
    m.cuts_downloading = false;
    m.label.reset();
    m.cycles.reset();
    m.uniform_rows.reset();
    m.applied = false;
}

HostLocker Region::host_locker() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    return [device](void* p, size_t bytes) -> HostLocks {
        int now = -1;  // a thread of the host's may have another device current (or none yet)
        if (cudaGetDevice(&now) != cudaSuccess || (now != device && cudaSetDevice(device) != cudaSuccess)) return {};
        return lock_host_range(p, bytes);
    };
}

}  // namespace tessera::cuda
