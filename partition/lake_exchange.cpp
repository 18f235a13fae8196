#include "partition/lake_exchange.h"

#include <algorithm>

namespace tessera {

namespace {

struct Link {  // piece `piece` of one rank touches pixel `pixel` of another's first row or column
    int64_t piece;
    int64_t pixel;
    int32_t grounded, pad = 0;
};

}  // namespace

LakeHalo LakeHalo::of(const RegionArrays& a, const Window& own) {
    LakeHalo h;
    const int64_t r1 = own.row0 + own.rows, c1 = own.col0 + own.cols;
    if (r1 < a.H)
        for (int64_t c = own.col0; c <= std::min(c1, a.W - 1); ++c)
            h.below.push_back((a.flags[a.index(r1, c)] & kUnreliable) != 0);
    if (c1 < a.W)
        for (int64_t r = own.row0; r < r1; ++r) h.right.push_back((a.flags[a.index(r, c1)] & kUnreliable) != 0);
    return h;
}

GlobalLakes::GlobalLakes(const RegionArrays& a, const RankGrid& grid, Comm& comm)
    : GlobalLakes(LakeRuns(a, grid.own(comm.rank())), LakeHalo::of(a, grid.own(comm.rank())), grid, comm) {}

GlobalLakes::GlobalLakes(LakeRuns runs, LakeHalo halo, const RankGrid& grid, Comm& comm)
    : own_(grid.own(comm.rank())), W_(grid.tiles.W), local_(std::move(runs)), halo_(std::move(halo)) {
    if (comm.size() == 1) return;
    const int64_t H = grid.tiles.H, W = W_, r1 = own_.row0 + own_.rows, c1 = own_.col0 + own_.cols;
    std::vector<Link> links;
    std::vector<Published> pub;
    // The columns published outside those rows: [col0, col0 + 2) and [c1 - 1, c1), merged when they meet.
    int64_t strip[2][2] = {{0, 0}, {0, 0}};
    if (own_.col0 > 0) strip[0][0] = own_.col0, strip[0][1] = std::min(own_.col0 + 2, c1);
    if (c1 < W) strip[1][0] = std::max(c1 - 1, own_.col0), strip[1][1] = c1;
    if (strip[0][1] > strip[0][0] && strip[1][1] > strip[1][0] && strip[1][0] <= strip[0][1])
        strip[0][1] = strip[1][1], strip[1][0] = strip[1][1] = 0;
    for (int64_t run = 0; run < local_.runs(); ++run) {
        const int64_t r = local_.run_row(run);
        const int64_t piece = local_.piece(run);
        const int32_t g = local_.piece_on_image_border(run);
        if (r == r1 - 1 && r1 < H)  // the halo row below: one link per unreliable stretch
            for (int64_t c = local_.run_c0(run); c < local_.run_c1(run); ++c)
                if (unreliable(r + 1, c) && (c == local_.run_c0(run) || !unreliable(r + 1, c - 1)))
                    links.push_back({piece, (r + 1) * W + c, g});
        if (local_.run_c1(run) == c1 && c1 < W && unreliable(r, c1)) links.push_back({piece, r * W + c1, g});
        // Published for the neighbours' lookups (section 3.1: a residue's lakes one dual step away
        // lie up to two pixels past its plaquette's top-left): the first two rows and columns and the
        // last row and column, where a neighbour lies beyond them; whole runs in those rows, else
        // the runs' parts in those columns.
        if ((own_.row0 > 0 && r < own_.row0 + 2) || (r1 < H && r == r1 - 1)) {
            pub.push_back({r, local_.run_c0(run), local_.run_c1(run), piece, g});
            continue;
        }
        for (int k = 0; k < 2; ++k) {
            const int64_t lo = std::max<int64_t>(local_.run_c0(run), strip[k][0]);
            const int64_t hi = std::min<int64_t>(local_.run_c1(run), strip[k][1]);
            if (lo < hi) pub.push_back({r, static_cast<int32_t>(lo), static_cast<int32_t>(hi), piece, g});
        }
    }
    const std::vector<Link> all_links = comm.allgatherv(links);
    pub_ = comm.allgatherv(pub);
    std::sort(pub_.begin(), pub_.end(),
              [](const Published& x, const Published& y) { return x.row != y.row ? x.row < y.row : x.c0 < y.c0; });
    // Union-find over the pieces that meet across ranks; a lake's id is its smallest piece.
    for (const Link& l : all_links) piece_ids_.push_back(l.piece);
    for (const Published& p : pub_) piece_ids_.push_back(p.piece);
    std::sort(piece_ids_.begin(), piece_ids_.end());
    piece_ids_.erase(std::unique(piece_ids_.begin(), piece_ids_.end()), piece_ids_.end());
    const size_t n = piece_ids_.size();
    std::vector<size_t> parent(n);
    std::vector<uint8_t> grounded(n, 0);
    for (size_t i = 0; i < n; ++i) parent[i] = i;
    auto index = [&](int64_t piece) {
        return static_cast<size_t>(std::lower_bound(piece_ids_.begin(), piece_ids_.end(), piece) - piece_ids_.begin());
    };
    auto find = [&](size_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    };
    auto join = [&](size_t x, size_t y) {
        x = find(x), y = find(y);
        if (x != y) parent[std::max(x, y)] = std::min(x, y);  // ids ascend with the index
    };
    for (const Published& p : pub_) grounded[index(p.piece)] |= static_cast<uint8_t>(p.grounded);
    for (const Link& l : all_links) {
        grounded[index(l.piece)] |= static_cast<uint8_t>(l.grounded);
        if (const Published* p = published_at(l.pixel / W, l.pixel % W)) join(index(l.piece), index(p->piece));
    }
    std::vector<uint8_t> class_grounded(n, 0);
    for (size_t i = 0; i < n; ++i) class_grounded[find(i)] |= grounded[i];
    piece_lake_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const size_t r = find(i);
        piece_lake_[i] = class_grounded[r] ? kGroundedLake : piece_ids_[r];
    }
    for (const Published& p : pub_)
        ring_published_ = ring_published_ || (p.row >= own_.row0 - 1 && p.row <= r1 + 1 && p.c1 >= own_.col0 - 1 && p.c0 <= c1 + 1);
}

const GlobalLakes::Published* GlobalLakes::published_at(int64_t r, int64_t c) const {
    auto it = std::upper_bound(pub_.begin(), pub_.end(), std::pair<int64_t, int64_t>{r, c},
                               [](const std::pair<int64_t, int64_t>& v, const Published& p) {
                                   return v.first != p.row ? v.first < p.row : v.second < p.c0;
                               });
    if (it == pub_.begin()) return nullptr;
    --it;
    return it->row == r && it->c0 <= c && c < it->c1 ? &*it : nullptr;
}

int64_t GlobalLakes::resolve(int64_t piece, bool grounded) const {
    auto it = std::lower_bound(piece_ids_.begin(), piece_ids_.end(), piece);
    if (it != piece_ids_.end() && *it == piece) return piece_lake_[static_cast<size_t>(it - piece_ids_.begin())];
    return grounded ? kGroundedLake : piece;
}

bool GlobalLakes::unreliable(int64_t r, int64_t c) const {
    if (own_.contains(r, c)) return local_.run_at(r, c) >= 0;
    const int64_t r1 = own_.row0 + own_.rows, c1 = own_.col0 + own_.cols;
    if (r == r1 && c >= own_.col0 && c - own_.col0 < static_cast<int64_t>(halo_.below.size()))
        return halo_.below[static_cast<size_t>(c - own_.col0)] != 0;
    if (c == c1 && r >= own_.row0 && r - own_.row0 < static_cast<int64_t>(halo_.right.size()))
        return halo_.right[static_cast<size_t>(r - own_.row0)] != 0;
    return false;
}

// Own pixels: one run lookup each (a residue's four corners ask for every one of them).
int64_t GlobalLakes::at(int64_t r, int64_t c) const {
    if (own_.contains(r, c)) {
        const int64_t run = local_.run_at(r, c);
        return run < 0 ? kNoLake : resolve(local_.piece(run), local_.piece_on_image_border(run));
    }
    const Published* p = published_at(r, c);  // every rank publishes what its neighbours' lookups reach
    return p ? resolve(p->piece, p->grounded != 0) : kNoLake;
}

bool GlobalLakes::none() const {
    auto any = [](const std::vector<uint8_t>& v) { return std::any_of(v.begin(), v.end(), [](uint8_t x) { return x != 0; }); };
    return local_.runs() == 0 && !any(halo_.below) && !any(halo_.right) && !ring_published_;
}

bool GlobalLakes::reaches_out(int64_t r, int64_t c) const {
    if (!own_.contains(r, c)) return published_at(r, c) != nullptr;
    const int64_t run = local_.run_at(r, c);
    return run >= 0 && local_.piece_on_window_border(run);
}

void GlobalLakes::ring(int64_t r, int64_t c, int64_t lake[8]) const {
    // (row, first column, pixels searched, which of them go to lake[], where)
    const int64_t rows[4] = {r - 1, r + 2, r, r + 1};
    for (int k = 0; k < 4; ++k) {
        const int64_t rr = rows[k];
        const bool wide = k >= 2;  // rows r and r + 1: columns c - 1 and c + 2
        const int64_t c0 = wide ? c - 1 : c;
        const int n = wide ? 4 : 2;
        int64_t* out[2] = {wide ? lake + 4 + (k - 2) : lake + 2 * k, wide ? lake + 6 + (k - 2) : lake + 2 * k + 1};
        const int pick[2] = {0, n - 1};
        if (own_.contains(rr, c0) && own_.contains(rr, c0 + n - 1)) {
            int64_t run[4];
            local_.runs_in(rr, c0, n, run);
            for (int j = 0; j < 2; ++j) {
                const int64_t x = run[pick[j]];
                *out[j] = x < 0 ? kNoLake : resolve(local_.piece(x), local_.piece_on_image_border(x));
            }
        } else {
            for (int j = 0; j < 2; ++j) *out[j] = at(rr, c0 + pick[j]);
        }
    }
}

void GlobalLakes::corners(int64_t r, int64_t c, int64_t lake[4], bool out[4]) const {
    for (int dr = 0; dr < 2; ++dr) {
        const int64_t rr = r + dr;
        int64_t* l = lake + 2 * dr;
        bool* o = out + 2 * dr;
        if (own_.contains(rr, c) && own_.contains(rr, c + 1)) {
            int64_t run[2];
            local_.runs_at(rr, c, run[0], run[1]);
            for (int k = 0; k < 2; ++k) {
                if (run[k] < 0) {
                    l[k] = kNoLake, o[k] = false;
                } else if (k == 1 && run[1] == run[0]) {
                    l[1] = l[0], o[1] = o[0];
                } else {
                    l[k] = resolve(local_.piece(run[k]), local_.piece_on_image_border(run[k]));
                    o[k] = local_.piece_on_window_border(run[k]);
                }
            }
        } else {
            for (int k = 0; k < 2; ++k) l[k] = at(rr, c + k), o[k] = reaches_out(rr, c + k);
        }
    }
}

}  // namespace tessera
