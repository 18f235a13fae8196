// Section 3.6: components left to long ground cuts reach each other first.
#include "kernels/far_reach.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

namespace tessera {

namespace {

// A union-find that threads join at once: a root links under a smaller root by compare and
// swap; finds halve paths (a parent only ever moves to an ancestor).
class SharedParents {
public:
    explicit SharedParents(size_t n) : p_(n) {
        for (size_t i = 0; i < n; ++i) p_[i] = static_cast<int64_t>(i);
    }
    int64_t find(int64_t x) {
        for (;;) {
            int64_t px = load(x);
            if (px == x) return x;
            const int64_t gp = load(px);
            if (gp != px) __atomic_compare_exchange_n(&p_[static_cast<size_t>(x)], &px, gp, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
            x = gp;
        }
    }
    void join(int64_t a, int64_t b) {
        for (;;) {
            a = find(a), b = find(b);
            if (a == b) return;
            if (a > b) std::swap(a, b);
            int64_t expect = b;
            if (__atomic_compare_exchange_n(&p_[static_cast<size_t>(b)], &expect, a, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
        }
    }

    // After every join: x's parent becomes its root, so root(x) is one read.
    void settle(int64_t x) { __atomic_store_n(&p_[static_cast<size_t>(x)], find(x), __ATOMIC_RELAXED); }
    int64_t root(int64_t x) const { return p_[static_cast<size_t>(x)]; }

private:
    int64_t load(int64_t x) const { return __atomic_load_n(&p_[static_cast<size_t>(x)], __ATOMIC_ACQUIRE); }
    std::vector<int64_t> p_;
};

bool long_ground(const Cut& c, int64_t H, int64_t W, int64_t R) {
    return c.id_b == kGroundId && ground_choice(c.ra, c.ca, H, W).weight > R;
}

// Members by cells of side far_R + 1: a pair within far_R lies in one cell or two adjacent ones.
class Cells {
public:
    Cells(std::span<const FarMember> m, int64_t W, int64_t far_R) : side_(far_R + 1), ncc_((W + side_ - 1) / side_), cell_(m.size()) {
        for (size_t i = 0; i < m.size(); ++i) cell_[i] = {key(m[i].res.r / side_, m[i].res.c / side_), i};
        std::sort(cell_.begin(), cell_.end());
    }
    // f(j) for every member j >= from in the 3 x 3 cells around (r, c).
    template <class F>
    void around(int64_t r, int64_t c, size_t from, F&& f) const {
        const int64_t cy = r / side_, cx = c / side_;
        for (int64_t dy = -1; dy <= 1; ++dy)
            for (int64_t dx = -1; dx <= 1; ++dx) {
                if (cx + dx < 0 || cx + dx >= ncc_ || cy + dy < 0) continue;
                const int64_t k = key(cy + dy, cx + dx);
                auto it = std::lower_bound(cell_.begin(), cell_.end(), std::pair<int64_t, size_t>{k, from});
                for (; it != cell_.end() && it->first == k; ++it) f(it->second);
            }
    }

private:
    int64_t key(int64_t y, int64_t x) const { return y * ncc_ + x; }
    int64_t side_, ncc_;
    std::vector<std::pair<int64_t, size_t>> cell_;
};

int64_t l1(const Residue& a, const Residue& b) { return std::abs(int64_t{a.r} - b.r) + std::abs(int64_t{a.c} - b.c); }

}  // namespace

bool has_long_ground_cut(std::span<const Cut> cuts, int64_t H, int64_t W, int64_t R) {
    // On the host's threads: most scenes have none, so every cut is looked at (1.5 M at 32768² holes).
    const auto n = static_cast<int64_t>(cuts.size());
    bool any = false;
#pragma omp parallel for schedule(static) reduction(|| : any) if (n >= 65536)
    for (int64_t i = 0; i < n; ++i) any = any || long_ground(cuts[static_cast<size_t>(i)], H, W, R);
    return any;
}

std::vector<Residue> grounded_near(std::span<const ClusterResidue> set, std::span<const uint8_t> grounded,
                                   std::span<const FarMember> far, int64_t W, int64_t far_R) {
    std::vector<Residue> out;
    if (far.empty() || grounded.empty()) return out;
    const Cells cells(far, W, far_R);
    for (size_t i = 0; i < set.size(); ++i) {
        if (!grounded[i]) continue;
        bool near = false;
        cells.around(set[i].res.r, set[i].res.c, 0, [&](size_t j) { near = near || l1(set[i].res, far[j].res) <= far_R; });
        if (near) out.push_back(set[i].res);
    }
    return out;
}

FarTake take_far_components(std::span<const ClusterResidue> set, std::vector<Cut>& cuts, int64_t H, int64_t W,
                            int64_t R) {
    FarTake t;
    const size_t n = set.size();
    auto index = [&](int64_t id) {
        auto it = std::lower_bound(set.begin(), set.end(), id, [](const ClusterResidue& x, int64_t v) { return x.res.id < v; });
        if (it == set.end() || it->res.id != id) throw std::logic_error("take_far_components: a cut's residue is not in its set");
        return static_cast<int64_t>(it - set.begin());
    };
    // On threads: a mosaic's seams leave long cuts among millions of residues. Roots link under
    // smaller roots, so each component's root is its smallest index whatever the order.
    const int64_t nc = static_cast<int64_t>(cuts.size());
    SharedParents uf(n);
#pragma omp parallel for schedule(static, 4096)
    for (int64_t k = 0; k < nc; ++k) {
        const Cut& c = cuts[static_cast<size_t>(k)];
        if (c.id_b != kGroundId) uf.join(index(c.id_a), index(c.id_b));
    }
    std::vector<std::pair<int64_t, int64_t>> shore;  // (inner lake, residue index)
    for (size_t i = 0; i < n; ++i)
        for (int64_t l : set[i].lake)
            if (l >= 0) shore.push_back({l, static_cast<int64_t>(i)});
    std::sort(shore.begin(), shore.end());
    for (size_t k = 1; k < shore.size(); ++k)
        if (shore[k].first == shore[k - 1].first) uf.join(shore[k].second, shore[k - 1].second);
#pragma omp parallel for schedule(static, 4096)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) uf.settle(i);

    // Per root: bit 0 another way to the ground, bit 1 a long ground cut; charge and size only
    // for the roots with a long cut (few: the arrays stay one word and one byte a residue).
    constexpr uint8_t kNear = 1, kFar = 2;
    std::vector<uint8_t> way(n, 0);
    for (size_t i = 0; i < n; ++i)
        if (set[i].lake[0] == kGroundedLake || set[i].lake[1] == kGroundedLake) way[static_cast<size_t>(uf.root(static_cast<int64_t>(i)))] |= kNear;
    for (const Cut& c : cuts)
        if (c.id_b == kGroundId) way[static_cast<size_t>(uf.root(index(c.id_a)))] |= long_ground(c, H, W, R) ? kFar : kNear;
    std::unordered_map<int64_t, std::pair<int64_t, int64_t>> far;  // root -> (charge, size)
    for (size_t i = 0; i < n; ++i) {
        const int64_t r = uf.root(static_cast<int64_t>(i));
        if (way[static_cast<size_t>(r)] & kFar) {
            auto& [q, size] = far[r];
            q += set[i].res.sign, ++size;
        }
    }
    const size_t before = cuts.size();
    cuts.erase(std::remove_if(cuts.begin(), cuts.end(),
                              [&](const Cut& c) {
                                  return long_ground(c, H, W, R) && far[uf.root(index(c.id_a))].second <= kFarMembers;
                              }),
               cuts.end());
    t.dropped = static_cast<int64_t>(before - cuts.size());
    // Roots are each component's smallest index, so its smallest id (the set is sorted by id).
    t.grounded.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const int64_t r = uf.root(static_cast<int64_t>(i));
        const uint8_t w = way[static_cast<size_t>(r)];
        t.grounded[i] = (w & kNear) != 0;
        if (w == kFar) {
            const auto& [q, size] = far[r];
            if (q != 0 && size <= kFarMembers) t.members.push_back({set[i].res, set[static_cast<size_t>(r)].res.id});
        }
    }
    return t;
}

void reach_far(std::vector<FarMember> m, std::vector<Residue> targets, int64_t H, int64_t W, int64_t far_R,
               std::vector<Cut>& out, ClusterStats& stats) {
    if (m.empty()) return;
    std::sort(m.begin(), m.end(), [](const FarMember& a, const FarMember& b) {
        return a.comp != b.comp ? a.comp < b.comp : a.res.id < b.res.id;
    });
    const size_t n = m.size();
    // Components in comp order; each one's charge and nearest image side (weight, id).
    std::vector<int64_t> comp_of(n), charge;
    std::vector<EdgeKey> ground;
    std::vector<size_t> ground_member;
    for (size_t i = 0; i < n; ++i) {
        if (i == 0 || m[i].comp != m[i - 1].comp) {
            charge.push_back(0);
            ground.push_back(EdgeKey{});
            ground_member.push_back(i);
        }
        const size_t c = charge.size() - 1;
        comp_of[i] = static_cast<int64_t>(c);
        charge[c] += m[i].res.sign;
        const EdgeKey g{ground_choice(m[i].res.r, m[i].res.c, H, W).weight, m[i].res.id, kGroundId};
        if (g < ground[c]) ground[c] = g, ground_member[c] = i;
    }
    const size_t nc = charge.size();

    // To the ground through a grounded component: its residue nearest a member (the key's order).
    std::vector<int64_t> ground_target(nc, -1);
    const Cells cells(m, W, far_R);
    for (size_t t = 0; t < targets.size(); ++t) {
        const Residue& y = targets[t];
        cells.around(y.r, y.c, 0, [&](size_t i) {
            const int64_t w = l1(m[i].res, y);
            if (w > far_R) return;
            const EdgeKey k = pair_key(w, m[i].res.id, y.id);
            const size_t c = static_cast<size_t>(comp_of[i]);
            if (k < ground[c]) ground[c] = k, ground_member[c] = i, ground_target[c] = static_cast<int64_t>(t);
        });
    }

    // Candidate edges: the smallest member pair of each two components within far_R.
    struct Edge {
        int64_t a, b;  // components, a < b
        EdgeKey key;
        size_t i, j;  // members
    };
    // Component by component (members are by comp), each pair's smallest kept at once: a seam's
    // dense members would otherwise list every pair.
    std::vector<Edge> edges, local;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && comp_of[j] == comp_of[i]) ++j;
        local.clear();
        for (size_t k = i; k < j; ++k)
            cells.around(m[k].res.r, m[k].res.c, j, [&](size_t q) {  // later components only
                const int64_t w = l1(m[k].res, m[q].res);
                if (w <= far_R) local.push_back({comp_of[k], comp_of[q], pair_key(w, m[k].res.id, m[q].res.id), k, q});
            });
        std::sort(local.begin(), local.end(), [](const Edge& p, const Edge& q) { return p.b != q.b ? p.b < q.b : p.key < q.key; });
        for (size_t k = 0; k < local.size(); ++k)
            if (k == 0 || local[k].b != local[k - 1].b) edges.push_back(local[k]);
        i = j;
    }

    // Section 3.3's rounds over the components: every open cluster (charge not 0, no ground)
    // takes its smallest leaving edge; all taken edges are accepted at once.
    SharedParents uf(nc);
    std::vector<uint8_t> grounded(nc, 0);
    auto open = [&](int64_t r) { return charge[static_cast<size_t>(r)] != 0 && !grounded[static_cast<size_t>(r)]; };
    constexpr int64_t kGroundPick = -1;
    std::vector<EdgeKey> best(nc);
    std::vector<int64_t> pick(nc);  // an edge index, or kGroundPick - component
    for (;;) {
        bool any = false;
        for (size_t c = 0; c < nc; ++c) best[c] = EdgeKey{}, pick[c] = 0;
        for (size_t e = 0; e < edges.size(); ++e) {
            const int64_t ra = uf.find(edges[e].a), rb = uf.find(edges[e].b);
            if (ra == rb) continue;
            for (int64_t r : {ra, rb})
                if (open(r) && edges[e].key < best[static_cast<size_t>(r)])
                    best[static_cast<size_t>(r)] = edges[e].key, pick[static_cast<size_t>(r)] = static_cast<int64_t>(e);
        }
        for (size_t c = 0; c < nc; ++c) {
            const int64_t r = uf.find(static_cast<int64_t>(c));
            if (open(r) && ground[c] < best[static_cast<size_t>(r)])
                best[static_cast<size_t>(r)] = ground[c], pick[static_cast<size_t>(r)] = kGroundPick - static_cast<int64_t>(c);
        }
        std::vector<int64_t> taken;
        for (size_t r = 0; r < nc; ++r)
            if (uf.find(static_cast<int64_t>(r)) == static_cast<int64_t>(r) && open(static_cast<int64_t>(r))) {
                any = true;
                taken.push_back(pick[r]);
            }
        if (!any) break;
        std::sort(taken.begin(), taken.end());
        taken.erase(std::unique(taken.begin(), taken.end()), taken.end());  // an edge both ends took
        std::vector<int64_t> to_ground;
        for (int64_t p : taken) {
            if (p <= kGroundPick) {
                const size_t c = static_cast<size_t>(kGroundPick - p);
                const Residue& x = m[ground_member[c]].res;
                if (ground_target[c] < 0) {
                    out.push_back(make_ground_cut(x, H, W));
                    ++stats.ground_cuts;
                } else {
                    out.push_back(make_pair_cut(x, targets[static_cast<size_t>(ground_target[c])]));
                    ++stats.pairs;
                }
                to_ground.push_back(static_cast<int64_t>(c));
            } else {
                const Edge& e = edges[static_cast<size_t>(p)];
                const int64_t ra = uf.find(e.a), rb = uf.find(e.b);
                if (ra == rb) throw std::logic_error("reach_far: a round's edges closed a cycle");
                out.push_back(make_pair_cut(m[e.i].res, m[e.j].res));
                ++stats.pairs;
                uf.join(ra, rb);  // the larger root links under the smaller
                const int64_t r = std::min(ra, rb), o = std::max(ra, rb);
                charge[static_cast<size_t>(r)] += charge[static_cast<size_t>(o)];
                grounded[static_cast<size_t>(r)] |= grounded[static_cast<size_t>(o)];
            }
        }
        for (int64_t c : to_ground) grounded[static_cast<size_t>(uf.find(c))] = 1;
    }
}

}  // namespace tessera
