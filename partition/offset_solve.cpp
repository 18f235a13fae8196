#include "partition/offset_solve.h"
#include "kernels/invariant.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "kernels/union_find.h"

namespace tessera {

OffsetSolution solve_offsets(std::span<const ComponentRecord> records, std::span<const Constraint> constraints,
                             int64_t min_size) {
    const size_t n = records.size();
    if (n > 0xffffffffu) throw std::runtime_error("offset solve: more than 2^32 tile components");
    OffsetSolution s;
    auto index_of = [&](int64_t root) {
        auto it = std::lower_bound(records.begin(), records.end(), root,
                                   [](const ComponentRecord& r, int64_t v) { return r.root < v; });
        TESSERA_INVARIANT(it != records.end() && it->root == root, "offset solve: constraint on unknown component");
        return static_cast<uint32_t>(it - records.begin());
    };
    // Record order is root order, so "smaller index is the root" holds in compact indices too.
    std::vector<uint64_t> nodes(n);
    for (uint32_t i = 0; i < n; ++i) nodes[i] = uf::pack(i, 0);
    for (const Constraint& c : constraints)
        if (!uf::unite(nodes.data(), index_of(c.a), index_of(c.b), c.delta)) ++s.conflicts;
    uf::flatten(nodes.data(), static_cast<uint32_t>(n));

    s.global_root.resize(n);
    s.offset.resize(n);
    s.label.assign(n, 0);
    std::vector<int64_t> total(n, 0);
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t r = uf::parent(nodes[i]);
        s.global_root[i] = records[r].root;
        s.offset[i] = uf::potential(nodes[i]);
        total[r] += records[i].size;
    }
    std::vector<uint32_t> roots;
    for (uint32_t i = 0; i < n; ++i)
        if (uf::parent(nodes[i]) == i && total[i] > 0) roots.push_back(i);
    s.components = static_cast<int64_t>(roots.size());
    std::sort(roots.begin(), roots.end(), [&](uint32_t a, uint32_t b) {
        return total[a] != total[b] ? total[a] > total[b] : records[a].root < records[b].root;
    });
    std::vector<uint32_t> root_label(n, 0);
    for (size_t k = 0; k < roots.size(); ++k) {
        if (total[roots[k]] < std::max<int64_t>(min_size, 1)) break;
        root_label[roots[k]] = static_cast<uint32_t>(k + 1);
        ++s.labelled;
    }
    if (!roots.empty()) s.largest = total[roots[0]];
    for (uint32_t i = 0; i < n; ++i) s.label[i] = root_label[uf::parent(nodes[i])];
    return s;
}

}  // namespace tessera
