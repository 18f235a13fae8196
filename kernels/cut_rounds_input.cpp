#include "kernels/cut_rounds_input.h"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cut_rounds_check.h"

namespace tessera {

namespace {

// in.adj_start and in.adj from in.lake_node: each lake's residues, ascending (a counting sort by
// lake). On threads, each a contiguous block of residues whose entries follow the blocks before it
// in every lake, so the lists are the serial scan's; serial where the threads' counts (threads x
// lakes) would be large.
void lake_adjacency(RoundInput& in) {
    const int64_t n = in.n, L = in.L;
    const int32_t first = in.n, grounded = in.n + in.L;
    auto each_entry = [&](int64_t i0, int64_t i1, auto&& fn) {
        for (int64_t i = i0; i < i1; ++i)
            for (int s = 0; s < 2; ++s) {
                const int32_t ln = in.lake_node[2 * static_cast<size_t>(i) + static_cast<size_t>(s)];
                if (ln >= first && ln < grounded) fn(i, static_cast<size_t>(ln - first));
            }
    };
    const int64_t T = n >= 65536 ? std::max(1, omp_get_max_threads()) : 1;
    const bool threaded = T > 1 && T * L <= (int64_t{1} << 24);
    const int64_t parts = threaded ? T : 1;
    // count[t * L + l]: block t's entries of lake l, then where block t writes its first of them.
    std::vector<int64_t> count(static_cast<size_t>(parts * L), 0);
    auto block = [&](int64_t t) { return std::pair{n * t / parts, n * (t + 1) / parts}; };
#pragma omp parallel for schedule(static, 1) if (threaded)
    for (int64_t t = 0; t < parts; ++t) {
        const auto [i0, i1] = block(t);
        int64_t* c = count.data() + t * L;
        each_entry(i0, i1, [&](int64_t, size_t l) { ++c[l]; });
    }
    in.adj_start.assign(static_cast<size_t>(L) + 1, 0);
    int64_t at = 0;
    for (int64_t l = 0; l < L; ++l) {
        in.adj_start[static_cast<size_t>(l)] = static_cast<int32_t>(at);
        for (int64_t t = 0; t < parts; ++t) {
            const int64_t c = count[static_cast<size_t>(t * L + l)];
            count[static_cast<size_t>(t * L + l)] = at;
            at += c;
        }
    }
    in.adj_start[static_cast<size_t>(L)] = static_cast<int32_t>(at);
    in.adj.resize(static_cast<size_t>(at));
#pragma omp parallel for schedule(static, 1) if (threaded)
    for (int64_t t = 0; t < parts; ++t) {
        const auto [i0, i1] = block(t);
        int64_t* next = count.data() + t * L;
        each_entry(i0, i1, [&](int64_t i, size_t l) { in.adj[static_cast<size_t>(next[l]++)] = static_cast<int32_t>(i); });
    }
}

}  // namespace

bool make_round_input(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius, RoundInput& in,
                      bool bitmap) {
    const int64_t n = static_cast<int64_t>(res.size());
    // One pass: the weights' and the box's bounds, and whether any residue touches a lake.
    int64_t w_max = 0, r0 = H, c0 = W, r1 = -1, c1 = -1;
    int64_t lakes = 0;
#pragma omp parallel for schedule(static) reduction(max : w_max, r1, c1) reduction(min : r0, c0) reduction(+ : lakes) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) {
        const ClusterResidue& x = res[static_cast<size_t>(i)];
        w_max = std::max(w_max, ground_choice(x.res.r, x.res.c, H, W).weight);
        r0 = std::min<int64_t>(r0, x.res.r), r1 = std::max<int64_t>(r1, x.res.r);
        c0 = std::min<int64_t>(c0, x.res.c), c1 = std::max<int64_t>(c1, x.res.c);
        lakes += (x.lake[0] >= 0) + (x.lake[1] >= 0);
    }
    const std::vector<int64_t> lake_ids = lakes > 0 ? lake_ids_of(res) : std::vector<int64_t>{};
    const int64_t L = static_cast<int64_t>(lake_ids.size());
    if (n + L + 2 >= std::numeric_limits<int32_t>::max()) return false;
    RankKeys keys;
    if (!RankKeys::fit(n, L, w_max, keys)) return false;

    in = RoundInput{};
    in.n = static_cast<int32_t>(n), in.L = static_cast<int32_t>(L), in.H = H, in.W = W, in.radius = radius;
    in.keys = keys;
    if (n > 0) in.r0 = r0, in.c0 = c0, in.rows = r1 - r0 + 1, in.cols = c1 - c0 + 1;
    in.rr.resize(res.size()), in.rc.resize(res.size()), in.sign.resize(res.size());
    in.lake_node.resize(2 * res.size());
    auto node_of = [&](int64_t l) {
        return l == kGroundedLake ? in.n + in.L
                                  : in.n + static_cast<int32_t>(std::lower_bound(lake_ids.begin(), lake_ids.end(), l) - lake_ids.begin());
    };
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) {
        const ClusterResidue& x = res[static_cast<size_t>(i)];
        in.rr[static_cast<size_t>(i)] = x.res.r, in.rc[static_cast<size_t>(i)] = x.res.c, in.sign[static_cast<size_t>(i)] = x.res.sign;
        for (int s = 0; s < 2; ++s) {
            const int64_t l = x.lake[s];
            const bool none = l == kNoLake || (s == 1 && l == x.lake[0]);
            in.lake_node[2 * static_cast<size_t>(i) + static_cast<size_t>(s)] = none ? -1 : node_of(l);
        }
    }
    if (L > 0)
        lake_adjacency(in);
    else
        in.adj_start.assign(1, 0);
    if (bitmap) in.occupied = PlaquetteBitmap(res, H, W);
    return true;
}

void cuts_from_codes(std::span<const ClusterResidue> res, std::span<const uint64_t> codes, int64_t H, int64_t W,
                     std::vector<Cut>& out) {
    const size_t first = out.size();
    out.resize(first + codes.size());
    const int64_t m = static_cast<int64_t>(codes.size());
#pragma omp parallel for schedule(static, 4096) if (m >= 65536)
    for (int64_t k = 0; k < m; ++k) {
        const uint64_t c = codes[static_cast<size_t>(k)];
        const Residue& a = res[static_cast<size_t>(c >> 32)].res;
        const uint32_t b = static_cast<uint32_t>(c);
        out[first + static_cast<size_t>(k)] =
            b == 0xffffffffu ? make_ground_cut(a, H, W) : make_pair_cut(a, res[b].res);
    }
}

void run_rounds_serial(const RoundInput& in, std::vector<uint64_t>& codes, RoundCounts& counts, const RoundTuning& tune,
                       uint64_t shuffle) {
    const size_t N = static_cast<size_t>(in.nodes());
    std::vector<int32_t> label(N), charge(N, 0), size(N, 1), target(N, -1), lake_cursor(in.adj_start.begin(), in.adj_start.end() - 1);
    std::vector<int32_t> next_member(N, -1), tail(N), old_tail(N, -1), link(N), stamp(N, 0), reopen_stamp(N, 0), scan_stamp(N, 0);
    std::vector<int32_t> active0(N), active1(N), open0(N), open1(N), reopened(N), bmem(N), hot0(N), hot1(N), wbuf(N);
    std::vector<int32_t> cstamp(N, 0), cpool0(N), cpool1(N);
    std::vector<uint64_t> key(N, RankKeys::kNone), best(N, RankKeys::kNone), cuts(N), repk(N), sample(kThetaSample);
    std::vector<uint64_t> ctheta(N, RankKeys::kNone), bound(N, RankKeys::kNone);
    std::vector<RingCursor> cursor(static_cast<size_t>(in.n));
    for (size_t v = 0; v < N; ++v) {
        label[v] = tail[v] = link[v] = static_cast<int32_t>(v);
        repk[v] = rep_key(1, static_cast<int32_t>(v));
    }
    repk[N - 1] = RankKeys::kNone;  // the ground represents its tree
    for (int32_t v = 0; v < in.n; ++v) charge[v] = in.sign[v], stamp[v] = 1, active0[v] = open0[v] = v;
    counts = RoundCounts{};
    counts.active = counts.open = in.n;
    RoundState s;
    s.n = in.n, s.L = in.L, s.G = in.n + in.L, s.H = in.H, s.W = in.W, s.radius = in.radius, s.tune = tune;
    s.rr = in.rr.data(), s.rc = in.rc.data(), s.lake_node = in.lake_node.data();
    s.adj_start = in.adj_start.data(), s.adj = in.adj.data(), s.occ = in.occupied.view(), s.keys = in.keys;
    s.label = label.data(), s.charge = charge.data(), s.size = size.data(), s.repk = repk.data();
    s.key = key.data(), s.target = target.data();
    s.cursor = cursor.data(), s.lake_cursor = lake_cursor.data(), s.next_member = next_member.data();
    s.tail = tail.data(), s.old_tail = old_tail.data(), s.best = best.data(), s.link = link.data();
    s.stamp = stamp.data(), s.reopen_stamp = reopen_stamp.data(), s.scan_stamp = scan_stamp.data();
    s.bmem = bmem.data(), s.hot[0] = hot0.data(), s.hot[1] = hot1.data(), s.sample = sample.data();
    s.active[1] = active0.data(), s.active[0] = active1.data(), s.open[1] = open0.data(), s.open[0] = open1.data();  // round 1's: [1]
    s.reopened = reopened.data(), s.cuts = cuts.data(), s.counts = &counts, s.wbuf = wbuf.data();
    s.ctheta = ctheta.data(), s.bound = bound.data(), s.cstamp = cstamp.data(), s.cpool[0] = cpool0.data(), s.cpool[1] = cpool1.data();
    std::vector<int32_t> order;
    // The device's drivers (kernels/cuda/cut_rounds.cu, ARCHITECTURE 3.3) put a barrier after each
    // step that runs and before a one-thread step when one was skipped since the last: counts that
    // threads read without a barrier since (skipped steps', the round's head, fused sift's) must
    // not change under them, or a late thread runs or skips a step the others did not.
    struct Read {
        int step;       // kRoundSteps: the round's head (open clusters and the round's work)
        int64_t value;
    };
    std::vector<Read> unsynced;
    auto count_of = [&](int step) -> int64_t {
        if (step == kRoundSteps) return (int64_t{counts.open} << 32) | static_cast<uint32_t>(s.work());
        return step == kSort ? counts.full : s.step_count(static_cast<RoundStep>(step));
    };
    auto barrier_after = [&](int by) {
        for (const Read& r : unsynced)
            if (count_of(r.step) != r.value && !counts.broken) {
                const std::string what =
                    r.step == kRoundSteps ? std::string("the round's head") : std::string("step ") + kStepNames[r.step] + "'s count";
                throw std::logic_error(std::string("cut rounds: step ") + kStepNames[by] + " changed what " + what +
                                       " reads, unsynchronised, in round " + std::to_string(counts.round));
            }
        unsynced.clear();
    };
    while (counts.open > 0) {
        unsynced.assign(1, Read{kRoundSteps, count_of(kRoundSteps)});
        for (int k = 0; k < kRoundSteps; ++k) {
            const RoundStep step = static_cast<RoundStep>(k);
            if (step == kSort) {  // the device sorts the sample in one block
                if (counts.full) {
                    std::sort(sample.begin(), sample.begin() + s.sample_size());
                    barrier_after(k);
                } else {
                    unsynced.push_back({k, 0});
                }
                continue;
            }
            if (step == kPick && s.one_open()) {  // the device's fused steps (beside sift)
                s.link_one();
                barrier_after(k);
                k = kWake;
                continue;
            }
            const int32_t count = s.step_count(step);
            if (count == 0) {
                unsynced.push_back({k, 0});
                continue;
            }
            if (single_step(step)) unsynced.clear();  // a barrier before it when a step was skipped
            if (shuffle == 0) {
                for (int32_t i = 0; i < count; ++i) s.step(step, i);
            } else {
                order.resize(static_cast<size_t>(count));
                for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
                for (size_t i = order.size(); i > 1; --i) {  // Fisher-Yates, splitmix64 draws
                    uint64_t z = (shuffle += 0x9e3779b97f4a7c15ull);
                    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull, z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
                    std::swap(order[i - 1], order[static_cast<size_t>((z ^ (z >> 31)) % i)]);
                }
                for (const int32_t i : order) s.step(step, i);
            }
            if (counts.broken)
                throw std::logic_error("cut rounds: step " + std::to_string(counts.broken) + " found the state broken");
            // The device's threads read a step's count while others run it: no step changes its own.
            if (s.step_count(step) != count)
                throw std::logic_error(std::string("cut rounds: step ") + kStepNames[k] + " changed its own count in round " +
                                       std::to_string(counts.round));
            if (step == kSift && s.one_open()) {
                unsynced.push_back({k, count});  // beside the fused steps, no barrier between
            } else {
                barrier_after(k);
            }
        }
        if (shuffle != 0 && counts.open > 0)  // the lists agree with the labels between rounds
            if (const std::string fault = round_state_fault(s); !fault.empty()) throw std::logic_error("cut rounds: " + fault);
    }
    codes.assign(cuts.begin(), cuts.begin() + counts.cuts);
    std::sort(codes.begin(), codes.end());
}

}  // namespace tessera
