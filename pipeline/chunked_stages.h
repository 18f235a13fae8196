// A rank's region unwrapped in chunks (docs/ARCHITECTURE.md section 5.1, issue 16): row bands
// of whole tiles of the own window, each filled three times (residues and lake runs; cuts,
// union-find and border states; apply), so that a rank holds one chunk's arrays plus its
// residues, cuts and tile component records, never the whole window. A chunk border is a row of
// tile borders, handled as the region handles the borders between its tiles, so the result is
// bit for bit unwrap_region's on the whole window, for any chunk height.
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "io/scratch_file.h"
#include "kernels/ground_lakes.h"
#include "kernels/invariant.h"
#include "kernels/label_width.h"
#include "kernels/lap.h"
#include "kernels/region.h"
#include "kernels/residue.h"
#include "kernels/residue_lists.h"
#include "kernels/vector_memory.h"
#include "partition/comm.h"
#include "partition/error_agreement.h"
#include "partition/global_solve.h"
#include "partition/lake_exchange.h"
#include "partition/matching.h"
#include "partition/rank_grid.h"
#include "pipeline/chunk_cuts.h"
#include "pipeline/chunk_run.h"
#include "pipeline/correct_cycles.h"
#include "kernels/host_buffer.h"
#include "pipeline/unwrap_region.h"

namespace tessera {

// The chunks of `own`: bands of `tile_rows` tile rows (the last one shorter).
inline std::vector<Window> chunk_windows(const Window& own, const TileGrid& tiles, int64_t tile_rows) {
    std::vector<Window> out;
    const int64_t step = std::max<int64_t>(tile_rows, 1) * tiles.tile;
    for (int64_t r = own.row0; r < own.row0 + own.rows; r += step)
        out.push_back({r, own.col0, std::min(step, own.row0 + own.rows - r), own.cols});
    return out;
}

namespace chunked {

// A chunk's inputs as filled (phase and flags over its buffer), kept from pass 1 for passes 2 and
// 3 when the plan allows (section 5.1: Plan::inputs_kept): pass 1's own arrays, taken over once
// its work on the chunk (which only reads them) is done.
struct KeptInput {
    HostBuffer<float> phase;
    HostBuffer<uint8_t> flags;
    // Region::host_locker's handles of phase and flags (declared after them: released first).
    std::shared_ptr<void> phase_locked, flags_locked;
};

// Which of a chunk's arrays a pass needs: passes 1 and 2 (residues and lake runs; cuts,
// union-find and border states) read and mark the inputs only, pass 3 writes labels and cycles.
enum class ChunkUse { inputs, all };

// Pass 3's labels and cycles for one chunk at a time, as large as the largest chunk's buffer.
struct ResultArrays {
    HostBuffer<uint32_t> label;
    HostBuffer<int32_t> cycles;
    std::shared_ptr<void> label_locked, cycles_locked;  // Region::host_locker's (released before the arrays)
};

// Pass 3's ResultArrays handed from chunk to chunk (section 5.1): fresh ones were faulted in, zeroed
// by the kernel and page-locked again for every chunk. Thread-safe (loads ahead, writes behind);
// it must outlive every ChunkArrays that holds a set of it.
class ResultPool {
public:
    ResultPool(size_t pixels, bool with_cycles) : pixels_(pixels), with_cycles_(with_cycles) {}
    std::unique_ptr<ResultArrays> take() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (!free_.empty()) {
                std::unique_ptr<ResultArrays> r = std::move(free_.back());
                free_.pop_back();
                return r;
            }
        }
        return std::make_unique<ResultArrays>(
            ResultArrays{HostBuffer<uint32_t>(pixels_), HostBuffer<int32_t>(with_cycles_ ? pixels_ : 0), {}, {}});
    }
    void give(std::unique_ptr<ResultArrays> r) {
        std::lock_guard<std::mutex> lock(mu_);
        free_.push_back(std::move(r));
    }

private:
    size_t pixels_;
    bool with_cycles_;
    std::mutex mu_;
    std::vector<std::unique_ptr<ResultArrays>> free_;
};

// One chunk's host arrays over its buffer window (first touched on the host's threads), the
// phase and flags taken over from a KeptInput when one is given; labels and cycles a set of
// `results`' for ChunkUse::all (given back with the arrays), none (null in `a`) for ChunkUse::inputs.
struct ChunkArrays {
    HostBuffer<float> phase;
    HostBuffer<uint8_t> flags;
    std::unique_ptr<ResultArrays> results;
    ResultPool* pool = nullptr;
    std::shared_ptr<void> phase_locked, flags_locked;  // KeptInput's (released before the arrays)
    RegionArrays a;

    ChunkArrays(const TileGrid& tiles, const Window& own, ResultPool& results, std::unique_ptr<KeptInput> kept = {},
                ChunkUse use = ChunkUse::all)
        : ChunkArrays(buffer(tiles, own), tiles, use == ChunkUse::all ? &results : nullptr, std::move(kept)) {}
    ~ChunkArrays() {
        if (pool && results) pool->give(std::move(results));
    }
    ChunkArrays(const ChunkArrays&) = delete;
    ChunkArrays& operator=(const ChunkArrays&) = delete;
    // The phase and flags handed on (pass 1 keeping them); this chunk's arrays are done with.
    std::unique_ptr<KeptInput> take_inputs() {
        return std::make_unique<KeptInput>(
            KeptInput{std::move(phase), std::move(flags), std::move(phase_locked), std::move(flags_locked)});
    }
    // The phase and flags page-locked for every pass that uses them (Region::host_locker), once.
    void lock_inputs(const HostLocker& lock) {
        if (!phase_locked) phase_locked = lock(phase.data(), phase.size() * sizeof(float));
        if (!flags_locked) flags_locked = lock(flags.data(), flags.size());
    }
    // The same for the labels and cycles: once for each set of the pool.
    void lock_results(const HostLocker& lock) {
        if (!results) return;
        ResultArrays& r = *results;
        if (!r.label_locked) r.label_locked = lock(r.label.data(), r.label.size() * sizeof(uint32_t));
        if (!r.cycles_locked && r.cycles.size()) r.cycles_locked = lock(r.cycles.data(), r.cycles.size() * sizeof(int32_t));
    }

    // A chunk's buffer window: its own rows and columns and the next ones where the image goes on.
    static Window buffer(const TileGrid& tiles, const Window& own) {
        const int64_t r1 = own.row0 + own.rows, c1 = own.col0 + own.cols;
        return {own.row0, own.col0, own.rows + (r1 < tiles.H ? 1 : 0), own.cols + (c1 < tiles.W ? 1 : 0)};
    }
private:
    ChunkArrays(const Window& buf, const TileGrid& tiles, ResultPool* results_from, std::unique_ptr<KeptInput> kept)
        : phase(kept ? std::move(kept->phase) : HostBuffer<float>(static_cast<size_t>(buf.size()))),
          flags(kept ? std::move(kept->flags) : HostBuffer<uint8_t>(static_cast<size_t>(buf.size()))),
          results(results_from ? results_from->take() : nullptr),
          pool(results_from),
          phase_locked(kept ? std::move(kept->phase_locked) : nullptr),
          flags_locked(kept ? std::move(kept->flags_locked) : nullptr),
          a{tiles.H, tiles.W, buf, phase.data(), flags.data(), results ? results->label.data() : nullptr,
            results && results->cycles.size() ? results->cycles.data() : nullptr} {
        TESSERA_INVARIANT(phase.size() == static_cast<size_t>(buf.size()) && flags.size() == phase.size(),
                          "kept input of another chunk");
        TESSERA_INVARIANT(!results || results->label.size() >= static_cast<size_t>(buf.size()),
                          "a result set smaller than a chunk");
    }
};

// The pixel states solve_global asks for (the own window's outer rows and columns and the
// reference pixel), kept from the chunks as they pass.
class BorderStates {
public:
    void keep(const Window& w, std::vector<PixelState> s) { kept_.push_back({w, std::move(s)}); }
    std::vector<PixelState> strip(const Window& w) const {
        std::vector<PixelState> out;
        out.reserve(static_cast<size_t>(w.size()));
        for (int64_t r = w.row0; r < w.row0 + w.rows; ++r)
            for (int64_t c = w.col0; c < w.col0 + w.cols; ++c) out.push_back(at(r, c));
        return out;
    }

private:
    PixelState at(int64_t r, int64_t c) const {
        for (const auto& [w, s] : kept_)
            if (w.contains(r, c)) return s[static_cast<size_t>((r - w.row0) * w.cols + (c - w.col0))];
        TESSERA_INVARIANT(false, "chunked solve: a pixel state that no chunk kept");
        return {};
    }
    std::vector<std::pair<Window, std::vector<PixelState>>> kept_;
};

// Where a chunk's state lies in the scratch (--scratch, section 5.1): its buffer's phase and
// flags (cut bits placed), then its union-find words and root list (UnionFindState).
struct ScratchSlot {
    int64_t offset = 0;
    size_t nodes = 0, roots = 0;
};

// Pass 2's write of chunk state at `end` (advanced past it).
inline ScratchSlot keep_state(ScratchFile& f, int64_t& end, const RegionArrays& a, const UnionFindState& s) {
    const ScratchSlot slot{end, s.nodes.size(), s.roots.size()};
    const size_t nb = static_cast<size_t>(a.buf.size());
    auto put = [&](const void* p, size_t bytes) { f.write(end, p, bytes), end += static_cast<int64_t>(bytes); };
    put(a.phase, nb * sizeof(float));
    put(a.flags, nb);
    put(s.nodes.data(), s.nodes.size() * sizeof(uint64_t));
    put(s.roots.data(), s.roots.size() * sizeof(uint64_t));
    return slot;
}

// Pass 3's read of what keep_state wrote: phase and flags into a, the union-find returned.
inline UnionFindState read_state(const ScratchFile& f, const ScratchSlot& slot, const RegionArrays& a) {
    UnionFindState s;
    s.nodes.resize(slot.nodes), s.roots.resize(slot.roots);
    const size_t nb = static_cast<size_t>(a.buf.size());
    int64_t at = slot.offset;
    auto get = [&](void* p, size_t bytes) { f.read(at, p, bytes), at += static_cast<int64_t>(bytes); };
    get(a.phase, nb * sizeof(float));
    get(a.flags, nb);
    get(s.nodes.data(), s.nodes.size() * sizeof(uint64_t));
    get(s.roots.data(), s.roots.size() * sizeof(uint64_t));
    return s;
}

// A scratch transfer's failure, kept from any thread and agreed on after the pass, as the
// reads' failures are: ranks hold unequal chunk counts, so never inside a pass (section 5.1).
class KeptError {
public:
    void keep(std::exception_ptr e) {
        const std::lock_guard<std::mutex> lock(m_);
        if (!e_) e_ = std::move(e);
    }
    bool failed() {
        const std::lock_guard<std::mutex> lock(m_);
        return e_ != nullptr;
    }
    void agree(Comm& comm) {
        agree_on_errors(comm, [&] {
            if (e_) std::rethrow_exception(e_);
        });
    }

private:
    std::mutex m_;
    std::exception_ptr e_;
};

// A row's union-find state kept in pass 2 for the cycle correction (section 4.1): root (-1:
// unreliable), potential and phase, from which the final u follows once the offsets are known.
struct RowState {
    int64_t root;
    int32_t k;
    float phase;
};

inline std::vector<RowState> row_state(std::span<const PixelState> s) {
    std::vector<RowState> out;
    out.reserve(s.size());
    for (const PixelState& p : s) out.push_back({(p.flags & kUnreliable) ? int64_t{-1} : p.root, p.k, p.phase});
    return out;
}

}  // namespace chunked

// Region: cpu::Region or cuda::Region. `tile_rows`: tile rows per chunk. Collective over comm
// (pipeline/chunk_run.h says what `run` holds).
template <class Region>
RegionStats unwrap_chunked(const RankGrid& grid, Comm& comm, const UnwrapParams& p, int64_t tile_rows,
                           bool with_cycles, const ChunkRun& run) {
    const Window own = grid.own(comm.rank());
    const TileGrid& tiles = grid.tiles;
    const int64_t H = tiles.H, W = tiles.W, r1 = own.row0 + own.rows, c1 = own.col0 + own.cols;
    const std::vector<Window> chunks = chunk_windows(own, tiles, tile_rows);
    const int64_t n_chunks = static_cast<int64_t>(chunks.size());
    // The sink's writes are collective: every rank takes as many rounds as the rank with most chunks.
    const int64_t rounds = comm.max(n_chunks);
    const ChunkFill& fill = run.fill;
    const ChunkSink& sink = run.sink;
    const auto& stage = run.stage;
    size_t largest = 0;
    for (const Window& cw : chunks) largest = std::max(largest, static_cast<size_t>(chunked::ChunkArrays::buffer(tiles, cw).size()));
    chunked::ResultPool results(largest, with_cycles);  // before anything that holds a chunk's arrays
    auto arrays = [&](int64_t i, std::unique_ptr<chunked::KeptInput> kept = {},
                      chunked::ChunkUse use = chunked::ChunkUse::all) {
        return std::make_unique<chunked::ChunkArrays>(tiles, chunks[static_cast<size_t>(i)], results, std::move(kept), use);
    };
    // Plan::inputs_kept (section 5.1): pass 1 keeps each chunk's inputs as filled (its arrays,
    // once worked on); pass 2 works on them and keeps them again, pass 3 takes them over (after
    // pass 2 with a scratch: dropped). Pass 2's cut bits in the flags are made anew by pass 3's
    // place_cuts (the block bits come from kUnreliable alone), so pass 3 sees pass 1's fill.
    std::vector<std::unique_ptr<chunked::KeptInput>> kept(run.keep_inputs ? static_cast<size_t>(n_chunks) : 0);
    // Chunk after chunk: load(i) gives chunk i (the next one loaded ahead, on its own thread,
    // when `ahead_ok`), use(i, loaded) works on it.
    // TESSERA_TRACE: each pass's time waiting for loads and working on chunks, on stderr.
    int pass_no = 0;
    double regions_ms = 0, ends_ms = 0;  // of `worked`: the Regions' construction (uploads) and their ends
    std::atomic<double> arrays_ms = 0, loads_ms = 0;  // the loads' time, and of it their arrays' (made or waited for)
    std::atomic<double> sink_ms = 0;  // the sink's writes (of `worked`, or beside it with write_behind)
    auto each_chunk = [&](bool ahead_ok, auto&& load, auto&& use) {
        std::future<decltype(load(int64_t{0}))> ahead;
        Lap lap;
        double waited = 0, worked = 0;
        for (int64_t i = 0; i < n_chunks; ++i) {
            auto loaded = ahead.valid() ? ahead.get() : load(i);
            waited += lap.next_ms();
            if (ahead_ok && i + 1 < n_chunks) ahead = std::async(std::launch::async, load, i + 1);
            use(i, loaded);
            worked += lap.next_ms();
        }
        ++pass_no;
        if (trace_on())
            std::fprintf(stderr, "tessera: chunks/pass %d: waited for loads %9.1f ms, worked %9.1f ms (regions made %9.1f, "
                         "written %9.1f, ended %9.1f), %lld chunks; the loads took %9.1f ms (their arrays %9.1f)\n",
                         pass_no, waited, worked, regions_ms, sink_ms.load(), ends_ms, static_cast<long long>(n_chunks),
                         loads_ms.load(), arrays_ms.load());
        regions_ms = ends_ms = sink_ms = arrays_ms = loads_ms = 0;
    };
    // Kept inputs and result sets are page-locked once, by the loads (beside the work on the
    // chunk before), for the device of this thread.
    const HostLocker lock = Region::host_locker();
    // Pass 1 keeping its inputs makes chunk i + 1's arrays (first touched and page-locked) while
    // chunk i is filled: every chunk's inputs are held by the pass's end anyway, so the peak
    // stays (section 5.1).
    std::future<std::unique_ptr<chunked::ChunkArrays>> made_ahead;
    auto make_kept = [&](int64_t i) {
        auto ca = arrays(i, {}, chunked::ChunkUse::inputs);
        ca->lock_inputs(lock);
        return ca;
    };
    // Pass `now`'s load of chunk i: filled from the inputs, or from what pass 1 kept of them.
    auto load_for = [&](int now) {
        return [&, now](int64_t i) {
            const size_t at = static_cast<size_t>(i);
            const chunked::ChunkUse use = now < 3 ? chunked::ChunkUse::inputs : chunked::ChunkUse::all;
            Lap made;
            std::unique_ptr<chunked::ChunkArrays> ca;
            const bool filled = !(run.keep_inputs && now > 1);
            if (!filled) {
                ca = arrays(i, std::move(kept[at]), use);
            } else if (run.keep_inputs) {
                ca = made_ahead.valid() ? made_ahead.get() : make_kept(i);
                if (i + 1 < n_chunks) made_ahead = std::async(std::launch::async, make_kept, i + 1);
            } else {
                ca = arrays(i, {}, use);
            }
            ca->lock_results(lock);
            const double ms = made.next_ms();
            if (filled) fill(ca->a);
            arrays_ms += ms;
            loads_ms += ms + made.next_ms();
            return ca;
        };
    };
    // Copies of kept inputs may run beside the sink; fills only where read_ahead says.
    auto ahead_for = [&](int now) {
        return (run.read_ahead && (now > 1 || run.read_ahead_first_pass)) || (run.keep_inputs && now > 1);
    };
    // One pass: each chunk loaded and worked on by body(i, region, arrays).
    auto pass = [&](auto&& body) {
        const int now = pass_no + 1;
        each_chunk(ahead_for(now), load_for(now), [&](int64_t i, std::unique_ptr<chunked::ChunkArrays>& ca) {
            Lap made;
            {
                Region region(ca->a, chunks[static_cast<size_t>(i)], tiles);
                regions_ms += made.next_ms();
                body(i, region, ca->a);
                made.next_ms();
            }
            ends_ms += made.next_ms();
            if (run.keep_inputs && now < 3) kept[static_cast<size_t>(i)] = ca->take_inputs();
        });
    };
    // --scratch (section 5.1): pass 2 keeps each chunk's state in it, pass 3 reads it back
    // instead of filling from the inputs and running the union-find again.
    std::vector<chunked::ScratchSlot> slots(static_cast<size_t>(n_chunks));
    int64_t scratch_end = 0;
    chunked::KeptError scratch_error;
    RegionStats st;
    st.tiles = tiles.count();

    // Pass 1: residues and the lakes' runs (and the halo's unreliable pixels).
    std::vector<ResidueList> found;  // each chunk's, made one list after the pass
    RowRuns runs;
    LakeHalo halo;
    double found_ms = 0, runs_ms = 0;  // TESSERA_TRACE: find_residues, then the wait for the runs and their append
    pass([&](int64_t i, Region& region, const RegionArrays& a) {
            const Window& cw = chunks[static_cast<size_t>(i)];
            Lap body;
            // The lakes' runs from the host's flags (the fill's), beside the device's search where
            // the host is free in the stages (run.host_free, section 7).
            auto runs_of = [&] {
                RowRuns rr;
                rr.append_rows(a.flags + a.index(cw.row0, own.col0), a.buf.cols, cw.rows, own.col0, own.cols);
                return rr;
            };
            std::future<RowRuns> beside;
            if (run.host_free) beside = std::async(std::launch::async, runs_of);
            found.push_back(region.find_residues());
            found_ms += body.next_ms();
            runs.append(beside.valid() ? beside.get() : runs_of());
            runs_ms += body.next_ms();
            if (c1 < W)
                for (int64_t r = cw.row0; r < cw.row0 + cw.rows; ++r)
                    halo.right.push_back((a.flags[a.index(r, c1)] & kUnreliable) != 0);
            if (cw.row0 + cw.rows == r1 && r1 < H)
                for (int64_t c = own.col0; c <= std::min(c1, W - 1); ++c)
                    halo.below.push_back((a.flags[a.index(r1, c)] & kUnreliable) != 0);
            run.chunk_done(1, i + 1, n_chunks);
        });
    Lap join;
    ResidueList res = joined(found);
    if (trace_on())
        std::fprintf(stderr, "tessera: chunks/pass 1: residues found %.1f ms, then the lakes' runs %.1f ms; joined in %.1f ms\n",
                     found_ms, runs_ms, join.next_ms());
    stage("residues");
    MatchStats ms;
    std::vector<Cut> cuts;
    {
        const GlobalLakes lakes(LakeRuns(std::move(runs), own, H, W), std::move(halo), grid, comm);
        const LakeView view = lake_view(lakes);
        cuts = match_residues(res, view, grid, p.max_pair_distance, comm, ms, &Region::cut_clusters, p.far_reach);
    }
    if (run.residues_out) run.residues_out->assign(res.begin(), res.end());
    release(res);
    ChunkCuts chunk_cuts(cuts, chunks, H, W);  // each chunk's Region takes only the cuts that reach its rows
    st.residues = ms.residues, st.pairs = ms.pairs, st.ground_cuts = ms.ground_cuts;
    st.lake_joins = ms.lake_joins, st.lake_steps = ms.lake_steps, st.shared = ms.shared;
    stage("matching");

    // Pass 2: cuts, each chunk's union-find; the constraints across chunk borders from the
    // border rows' states, as the region finds those across its tile borders.
    RegionComponents comps;
    chunked::BorderStates borders;
    std::vector<PixelState> above;  // the previous chunk's last row
    // Section 4.1: each chunk's first and last kCorrectionReach rows (by global row), whose final
    // u the neighbouring chunks' correction reads; and the own window's border strips that deep,
    // which the ring sent to other ranks is made of (the solve reads their outer lines).
    const bool correcting = cycle_correction_on(p);
    const int64_t deep = correcting ? kCorrectionReach : 1;
    std::map<int64_t, std::vector<chunked::RowState>> edge_rows;
    double cuts_ms = 0, uf_ms = 0, strips_ms = 0;  // TESSERA_TRACE: pass 2's parts
    pass([&](int64_t i, Region& region, const RegionArrays& a) {
            const Window& cw = chunks[static_cast<size_t>(i)];
            Lap part;
            region.place_cuts(chunk_cuts.of(static_cast<size_t>(i)));
            cuts_ms += part.next_ms();
            RegionComponents c = region.union_find();
            uf_ms += part.next_ms();
            comps.records.insert(comps.records.end(), c.records.begin(), c.records.end());
            comps.constraints.insert(comps.constraints.end(), c.constraints.begin(), c.constraints.end());
            comps.conflicts += c.conflicts;
            // The chunk's first and last `edge` rows, in two strips (each a round trip to the device):
            // the constraints with the chunk above, and the edge rows the correction reads.
            const int64_t end = cw.row0 + cw.rows, edge = std::min<int64_t>(correcting ? kCorrectionReach : 1, cw.rows);
            const size_t cols = static_cast<size_t>(own.cols);
            const std::vector<PixelState> head = region.strip({cw.row0, own.col0, edge, own.cols}),
                                          tail = region.strip({end - edge, own.col0, edge, own.cols});
            for (size_t j = 0; j < above.size(); ++j) {
                const PixelState &pa = above[j], &pb = head[j];
                if (pa.flags & kBlockDown) continue;
                // k(b) - k(a) = -n(a->b)  =>  K(root b) - K(root a) = -n - k_b + k_a.
                comps.constraints.push_back({pa.root, pb.root, -wrap_count(pa.phase, pb.phase) - pb.k + pa.k});
            }
            above.assign(tail.end() - static_cast<std::ptrdiff_t>(cols), tail.end());
            if (correcting)
                for (int64_t y = 0; y < edge; ++y) {
                    const size_t at = static_cast<size_t>(y) * cols;
                    edge_rows[cw.row0 + y] = chunked::row_state(std::span(head).subspan(at, cols));
                    edge_rows[end - edge + y] = chunked::row_state(std::span(tail).subspan(at, cols));
                }
            auto keep_rows = [&](int64_t from, int64_t to) {  // the own window's rows from .. to - 1 within this chunk
                from = std::max(from, cw.row0), to = std::min(to, end);
                if (from < to) borders.keep({from, own.col0, to - from, own.cols}, region.strip({from, own.col0, to - from, own.cols}));
            };
            keep_rows(own.row0, own.row0 + deep);
            keep_rows(r1 - deep, r1);
            const int64_t deep_cols = std::min(deep, own.cols);
            borders.keep({cw.row0, own.col0, cw.rows, deep_cols}, region.strip({cw.row0, own.col0, cw.rows, deep_cols}));
            borders.keep({cw.row0, c1 - deep_cols, cw.rows, deep_cols}, region.strip({cw.row0, c1 - deep_cols, cw.rows, deep_cols}));
            if (p.reference && cw.contains(p.reference->first, p.reference->second))
                borders.keep({p.reference->first, p.reference->second, 1, 1},
                             region.strip({p.reference->first, p.reference->second, 1, 1}));
            if (run.scratch && !scratch_error.failed()) {
                try {
                    slots[static_cast<size_t>(i)] = chunked::keep_state(*run.scratch, scratch_end, a, region.take_union_find());
                } catch (...) {
                    scratch_error.keep(std::current_exception());
                }
            }
            strips_ms += part.next_ms();
            run.chunk_done(2, i + 1, n_chunks);
        });
    if (trace_on())
        std::fprintf(stderr, "tessera: chunks/pass 2: cuts placed %.1f ms, union-find %.1f ms, strips and states %.1f ms\n",
                     cuts_ms, uf_ms, strips_ms);
    if (run.scratch) scratch_error.agree(comm);
    stage("union_find");
    const GlobalSolution g = solve_global(comps, grid, comm, p.min_component_size, p.reference,
                                          [&](const Window& w) { return borders.strip(w); });
    st.conflicts = comm.sum(comps.conflicts) + g.conflicts;
    st.components = g.components, st.labelled = g.labelled, st.largest = g.largest;
    st.label_bytes = p.narrow_labels ? label_bytes_for(static_cast<uint64_t>(g.labelled)) : 4;
    stage("offset_solve");

    // Section 4.1: the final u beside each chunk (the ring from the other ranks, from the border
    // states; the rows of the chunks above and below, from pass 2's edge rows), before any correction.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    constexpr int64_t K = kCorrectionReach;
    const size_t wide = static_cast<size_t>(own.cols + 2 * K);
    RingHalo ring;
    struct HaloRows {  // K rows of own.cols + 2K, as CorrectionHalo's above and below
        std::vector<float> u;
        std::vector<uint32_t> label;
    };
    std::vector<HaloRows> halo_above(correcting ? static_cast<size_t>(n_chunks) : 0), halo_below(halo_above.size());
    int64_t corrected = 0;
    if (correcting) {
        const Solution sol{comps.records, g.offset, g.label};
        ring = ring_from_states(grid, comm, [&](const Window& w) { return borders.strip(w); }, sol);
        // Row r of the image beside the own window, with the ring's columns beside own rows.
        auto add_row = [&](HaloRows& h, int64_t r) {
            const size_t at = h.u.size();
            if (r < own.row0 || r >= r1) {  // the ring's
                const bool over = r < own.row0;
                const size_t from = static_cast<size_t>(over ? r - (own.row0 - K) : r - r1) * wide;
                const auto& u = over ? ring.above : ring.below;
                const auto& l = over ? ring.above_label : ring.below_label;
                h.u.insert(h.u.end(), u.begin() + static_cast<std::ptrdiff_t>(from), u.begin() + static_cast<std::ptrdiff_t>(from + wide));
                h.label.insert(h.label.end(), l.begin() + static_cast<std::ptrdiff_t>(from), l.begin() + static_cast<std::ptrdiff_t>(from + wide));
                return;
            }
            h.u.resize(at + wide, nan), h.label.resize(at + wide, 0);
            const size_t side = static_cast<size_t>((r - own.row0) * K);
            for (size_t k = 0; k < static_cast<size_t>(K); ++k) {
                h.u[at + k] = ring.left[side + k], h.label[at + k] = ring.left_label[side + k];
                h.u[at + wide - K + k] = ring.right[side + k], h.label[at + wide - K + k] = ring.right_label[side + k];
            }
            const auto it = edge_rows.find(r);
            TESSERA_INVARIANT(it != edge_rows.end(), "cycle correction: a chunk's edge row not kept");
            const std::vector<chunked::RowState>& s = it->second;
            for (size_t j = 0; j < s.size(); ++j) {
                const RingPixel px = final_pixel(s[j].root, s[j].k, s[j].phase, sol);
                h.u[at + K + j] = px.u, h.label[at + K + j] = px.label;
            }
        };
        for (int64_t i = 0; i < n_chunks; ++i) {
            const size_t at = static_cast<size_t>(i);
            const Window& cw = chunks[at];
            for (int64_t r = cw.row0 - K; r < cw.row0; ++r) add_row(halo_above[at], r);
            for (int64_t r = cw.row0 + cw.rows; r < cw.row0 + cw.rows + K; ++r) add_row(halo_below[at], r);
        }
        release(edge_rows);
    }

    // Pass 3: the same cuts and union-find again (or their state from the scratch), then each
    // chunk's share of the assignment, handed to the sink once its Region is gone. With
    // run.write_behind the sink runs on a thread of its own while the next chunk is worked on:
    // one sink call at a time, in chunk order (the writes are collective).
    const auto& recs = comps.records;
    auto apply_chunk = [&](int64_t i, Region& region) {
        const Window& cw = chunks[static_cast<size_t>(i)];
        auto below = [&](int64_t row) {
            return static_cast<size_t>(std::lower_bound(recs.begin(), recs.end(), row * W,
                                                        [](const ComponentRecord& x, int64_t v) { return x.root < v; }) -
                                       recs.begin());
        };
        const size_t b = below(cw.row0), e = below(cw.row0 + cw.rows);
        region.apply(ComponentAssignment{std::span(recs).subspan(b, e - b), std::span(g.offset).subspan(b, e - b),
                                         std::span(g.label).subspan(b, e - b), st.label_bytes});
        if (correcting) {
            const size_t at = static_cast<size_t>(i);
            const Window band{cw.row0, own.col0, cw.rows, own.cols};
            corrected += region.correct_cycles(ring.band(own, band, halo_above[at].u, halo_above[at].label, halo_below[at].u,
                                                         halo_below[at].label),
                                               correction_keep(p, W));
        }
        region.finish();
    };
    std::future<void> writing;  // the chunk being written (write_behind)
    auto written = [&] {
        if (writing.valid()) writing.get();  // a sink's failure surfaces here
    };
    auto hand_on = [&](int64_t i, std::unique_ptr<chunked::ChunkArrays> ca) {
        written();
        auto write = [&, i, ca = std::move(ca)] {
            // Behind a device's next chunk (its uploads, downloads and host parts) and the phase's
            // copy through the mapping (a thread of its own, all threads): the sink's own teams on
            // half the host's threads packed the labels faster (bench/results/gpu_h200_one_gpu.md, session 34).
            if (run.write_behind && run.host_free) omp_set_num_threads(std::max(1, omp_get_max_threads() / 2));
            Lap wrote;
            sink(ca->a, chunks[static_cast<size_t>(i)], st.label_bytes);
            sink_ms += wrote.next_ms();
            run.chunk_done(3, i + 1, n_chunks);
        };
        if (run.write_behind)
            writing = std::async(std::launch::async, std::move(write));
        else
            write();
    };
    const Window no_rows{own.row0 + own.rows, own.col0, 0, own.cols};
    if (run.scratch) kept.clear();  // pass 3 reads the scratch
    if (!run.scratch) {
        // A fill that may not run beside the sink (read_ahead off: the HDF5 library) waits for the write.
        auto load = [&, inner = load_for(3)](int64_t i) {
            if (!ahead_for(3)) written();
            return inner(i);
        };
        double uf3_ms = 0, apply_ms = 0, handed_ms = 0;  // TESSERA_TRACE: pass 3's parts (its ends in ends_ms)
        each_chunk(ahead_for(3), load, [&](int64_t i, std::unique_ptr<chunked::ChunkArrays>& ca) {
            Lap made;
            {
                Region region(ca->a, chunks[static_cast<size_t>(i)], tiles);
                regions_ms += made.next_ms();
                region.place_cuts(chunk_cuts.of(static_cast<size_t>(i)));
                (void)region.union_find();
                uf3_ms += made.next_ms();
                apply_chunk(i, region);
                apply_ms += made.next_ms();
            }
            ends_ms += made.next_ms();
            hand_on(i, std::move(ca));
            handed_ms += made.next_ms();
        });
        if (trace_on())
            std::fprintf(stderr, "tessera: chunks/pass 3: cuts and union-find %.1f ms, apply to finish %.1f ms, waits for the sink %.1f ms\n",
                         uf3_ms, apply_ms, handed_ms);
    } else {
        struct Restored {
            std::unique_ptr<chunked::ChunkArrays> ca;
            UnionFindState uf;
            bool ok = false;
        };
        // The scratch is plain reads (no HDF5 beside the writes): always read ahead.
        each_chunk(
            true,
            [&](int64_t i) {
                Restored r{arrays(i), {}, false};
                try {
                    r.uf = chunked::read_state(*run.scratch, slots[static_cast<size_t>(i)], r.ca->a);
                    r.ok = true;
                } catch (...) {
                    scratch_error.keep(std::current_exception());
                }
                return r;
            },
            [&](int64_t i, Restored& r) {
                if (!r.ok) {  // the sink's round still taken (collective writes); agreed on below
                    written();
                    sink(RegionArrays{}, no_rows, st.label_bytes);
                    return run.chunk_done(3, i + 1, n_chunks);
                }
                {
                    r.ca->lock_results(lock);
                    Region region(r.ca->a, chunks[static_cast<size_t>(i)], tiles);
                    region.restore_union_find(std::move(r.uf));
                    apply_chunk(i, region);
                }
                hand_on(i, std::move(r.ca));
            });
    }
    written();
    for (int64_t i = n_chunks; i < rounds; ++i) sink(RegionArrays{}, no_rows, st.label_bytes);
    if (run.scratch) scratch_error.agree(comm);  // after every rank's last sink round
    st.corrected = correcting ? comm.sum(corrected) : 0;
    stage("apply");
    st.bytes_sent = comm.bytes_sent();
    return st;
}

}  // namespace tessera
