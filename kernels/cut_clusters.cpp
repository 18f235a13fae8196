// Section 3's rule, serially: every residue starts as an open cluster (charge +-1); while an
// open cluster exists, the smallest candidate edge (weight, lower id, higher id) leaving any
// open cluster is accepted and joins its two ends. A cluster is open while its charge is not
// zero and it does not hold the ground. Lazy queue: an entry is a node's best edge leaving its
// cluster when it was computed; clusters only grow, so it stays a lower bound, and it is exact
// when its far end is still outside.
#include "kernels/cut_clusters.h"

#include <algorithm>
#include <cstdlib>
#include <queue>

#include "kernels/residue_grid.h"

namespace tessera {

namespace {

struct Entry {
    EdgeKey key;
    int32_t node, target;
    bool operator>(const Entry& o) const { return o.key < key; }
};

class Clusters {
public:
    Clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius)
        : res_(res), H_(H), W_(W), radius_(radius), n_(static_cast<int32_t>(res.size())) {
        for (const ClusterResidue& x : res)
            for (int64_t l : x.lake)
                if (l >= 0) lake_ids_.push_back(l);
        std::sort(lake_ids_.begin(), lake_ids_.end());
        lake_ids_.erase(std::unique(lake_ids_.begin(), lake_ids_.end()), lake_ids_.end());
        const int32_t L = static_cast<int32_t>(lake_ids_.size());
        ground_ = n_ + L;
        const size_t N = static_cast<size_t>(ground_) + 1;
        parent_.resize(N), size_.assign(N, 1), next_.resize(N), charge_.assign(N, 0);
        for (size_t v = 0; v < N; ++v) parent_[v] = next_[v] = static_cast<int32_t>(v);
        for (int32_t i = 0; i < n_; ++i) charge_[static_cast<size_t>(i)] = res[static_cast<size_t>(i)].res.sign;
        // Each lake's residues, ascending (the lake's edges in key order).
        adj_start_.assign(static_cast<size_t>(L) + 1, 0);
        for (const ClusterResidue& x : res)
            for (int s = 0; s < 2; ++s)
                if (x.lake[s] >= 0 && (s == 0 || x.lake[1] != x.lake[0])) ++adj_start_[static_cast<size_t>(lake_index(x.lake[s])) + 1];
        for (size_t k = 1; k < adj_start_.size(); ++k) adj_start_[k] += adj_start_[k - 1];
        adj_.resize(static_cast<size_t>(adj_start_.back()));
        cursor_.assign(adj_start_.begin(), adj_start_.end() - 1);
        std::vector<int64_t> fill(cursor_);
        for (int32_t i = 0; i < n_; ++i) {
            const ClusterResidue& x = res[static_cast<size_t>(i)];
            for (int s = 0; s < 2; ++s)
                if (x.lake[s] >= 0 && (s == 0 || x.lake[1] != x.lake[0])) adj_[static_cast<size_t>(fill[static_cast<size_t>(lake_index(x.lake[s]))]++)] = i;
        }
        // Residue cells over the set's bounding box.
        if (n_ > 0) {
            int64_t r0 = H, r1 = 0, c0 = W, c1 = 0;
            for (const ClusterResidue& x : res) {
                r0 = std::min<int64_t>(r0, x.res.r), r1 = std::max<int64_t>(r1, x.res.r);
                c0 = std::min<int64_t>(c0, x.res.c), c1 = std::max<int64_t>(c1, x.res.c);
            }
            plain_.reserve(res.size());
            for (const ClusterResidue& x : res) plain_.push_back(x.res);
            grid_.build(plain_, {}, Window{r0, c0, r1 - r0 + 1, c1 - c0 + 1}, 8);
        }
    }

    void run(std::vector<Cut>& out, ClusterStats& st) {
        for (int32_t i = 0; i < n_; ++i) push(i);
        while (!pq_.empty()) {
            const Entry e = pq_.top();
            pq_.pop();
            const int32_t a = find(e.node);
            if (!open(a)) continue;  // a closed cluster waits until an open one takes it
            const int32_t t = find(e.target);
            if (t == a) {
                push(e.node);
                continue;
            }
            if (e.key.hi == kGroundId) {
                out.push_back(make_ground_cut(res_[static_cast<size_t>(e.node)].res, H_, W_));
                ++st.ground_cuts;
            } else if (e.key.hi >= kLakeKeyBase) {
                ++st.lake_joins;
            } else {
                out.push_back(make_pair_cut(res_[static_cast<size_t>(e.node)].res, res_[static_cast<size_t>(e.target)].res));
                ++st.pairs;
            }
            const bool t_was_open = open(t);
            if (t_was_open) {
                unite(a, t);
                if (open(find(a))) push(e.node);
            } else {
                std::vector<int32_t>& members = scratch_;
                members.clear();
                for (int32_t m = t;;) {
                    members.push_back(m);
                    m = next_[static_cast<size_t>(m)];
                    if (m == t) break;
                }
                unite(a, t);
                if (open(find(a))) {
                    push(e.node);
                    for (int32_t m : members) push(m);
                }
            }
        }
    }

private:
    int32_t lake_index(int64_t id) const {
        return static_cast<int32_t>(std::lower_bound(lake_ids_.begin(), lake_ids_.end(), id) - lake_ids_.begin());
    }
    int32_t find(int32_t x) {
        while (parent_[static_cast<size_t>(x)] != x) {
            parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
            x = parent_[static_cast<size_t>(x)];
        }
        return x;
    }
    // unite() keeps the ground node its class's root.
    bool open(int32_t root) const { return root != ground_ && charge_[static_cast<size_t>(root)] != 0; }
    // Joins two roots; the ground stays its class's root, otherwise the larger class's root.
    void unite(int32_t a, int32_t b) {
        if (b == ground_ || (a != ground_ && size_[static_cast<size_t>(b)] > size_[static_cast<size_t>(a)])) std::swap(a, b);
        parent_[static_cast<size_t>(b)] = a;
        size_[static_cast<size_t>(a)] += size_[static_cast<size_t>(b)];
        charge_[static_cast<size_t>(a)] += charge_[static_cast<size_t>(b)];
        std::swap(next_[static_cast<size_t>(a)], next_[static_cast<size_t>(b)]);  // splice the member rings
    }

    // Queues node v's best edge leaving its cluster (residue or lake; the ground has none).
    void push(int32_t v) {
        if (v == ground_) return;
        if (v >= n_) {
            push_lake(v);
            return;
        }
        const int32_t rv = find(v);
        const ClusterResidue& x = res_[static_cast<size_t>(v)];
        const Residue& a = x.res;
        const GroundChoice gc = ground_choice(a.r, a.c, H_, W_);
        Entry best{EdgeKey{gc.weight, a.id, kGroundId}, v, ground_};
        for (int s = 0; s < 2; ++s) {
            if (x.lake[s] == kGroundedLake) {
                const EdgeKey k{0, a.id, kGroundedLakeKey};
                if (k < best.key) best = {k, v, ground_};
            } else if (x.lake[s] >= 0) {
                const int32_t ln = n_ + lake_index(x.lake[s]);
                const EdgeKey k{0, a.id, kLakeKeyBase + x.lake[s]};
                if (find(ln) != rv && k < best.key) best = {k, v, ln};
            }
        }
        const ResidueGrid& g = grid_;
        const int64_t ci = (a.r - g.area.row0) / g.cell, cj = (a.c - g.area.col0) / g.cell;
        auto scan_cell = [&](int64_t y, int64_t xx) {
            if (y < 0 || y >= g.crows || xx < 0 || xx >= g.ccols) return;
            const int64_t cidx = y * g.ccols + xx;
            for (int64_t t = g.start[static_cast<size_t>(cidx)]; t < g.start[static_cast<size_t>(cidx) + 1]; ++t) {
                const int32_t j = g.items[static_cast<size_t>(t)];
                if (j == v) continue;
                const Residue& b = res_[static_cast<size_t>(j)].res;
                const int64_t w = std::abs(int64_t{b.r} - a.r) + std::abs(int64_t{b.c} - a.c);
                if (w > radius_ || w > best.key.w) continue;
                const EdgeKey k = pair_key(w, a.id, b.id);
                if (k < best.key && find(j) != rv) best = {k, v, j};
            }
        };
        const int64_t max_ring = radius_ / g.cell + 1;
        for (int64_t ring = 0; ring <= max_ring; ++ring) {
            const int64_t lower = ring == 0 ? 0 : (ring - 1) * g.cell + 1;
            if (lower > radius_ || lower > best.key.w) break;
            if (ring == 0) {
                scan_cell(ci, cj);
                continue;
            }
            for (int64_t xx = cj - ring; xx <= cj + ring; ++xx) scan_cell(ci - ring, xx), scan_cell(ci + ring, xx);
            for (int64_t y = ci - ring + 1; y <= ci + ring - 1; ++y) scan_cell(y, cj - ring), scan_cell(y, cj + ring);
        }
        pq_.push(best);
    }

    // A lake's edges all weigh 0 and come in its residues' id order: the first one outside.
    void push_lake(int32_t v) {
        const size_t l = static_cast<size_t>(v - n_);
        const int32_t rv = find(v);
        int64_t& cur = cursor_[l];
        while (cur < adj_start_[l + 1] && find(adj_[static_cast<size_t>(cur)]) == rv) ++cur;
        if (cur == adj_start_[l + 1]) return;
        const int32_t j = adj_[static_cast<size_t>(cur)];
        pq_.push({EdgeKey{0, res_[static_cast<size_t>(j)].res.id, kLakeKeyBase + lake_ids_[l]}, v, j});
    }

    std::span<const ClusterResidue> res_;
    int64_t H_, W_, radius_;
    int32_t n_, ground_ = 0;
    std::vector<int64_t> lake_ids_;
    std::vector<int32_t> parent_, size_, next_;
    std::vector<int64_t> charge_;
    std::vector<int64_t> adj_start_, cursor_;
    std::vector<int32_t> adj_, scratch_;
    std::vector<Residue> plain_;
    ResidueGrid grid_;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> pq_;
};

}  // namespace

void cut_clusters(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius, std::vector<Cut>& out,
                  ClusterStats& stats) {
    if (res.empty()) return;
    Clusters(res, H, W, radius).run(out, stats);
}

}  // namespace tessera
