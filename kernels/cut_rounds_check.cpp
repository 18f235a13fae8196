#include "kernels/cut_rounds_check.h"

#include <cstdint>
#include <vector>

namespace tessera {

std::string round_state_fault(const RoundState& s) {
    const RoundCounts& c = *s.counts;
    const int32_t N = s.nodes(), round = c.round, G = s.G;
    auto num = [](int64_t v) { return std::to_string(v); };
    // The counts, for a fault's context.
    const std::string at = " before round " + num(round) + " (open " + num(c.open) + ", active " + num(c.active) + ", cold " +
                           num(c.ccount) + ", parked " + num(c.big) + " with " + num(c.bcount) + " members, hot " + num(c.hot) +
                           ", cuts " + num(c.cuts) + ", parks " + num(c.parks) + ", fulls " + num(c.fulls) + ", one open " +
                           num(c.linked_one) + ", pairs " + num(c.linked_pair) + ")";
    auto node = [](const char* what, int32_t v) { return std::string(what) + " " + std::to_string(v); };
    // Where each node is: 1 listed, 2 cold, 3 parked.
    std::vector<int8_t> where(static_cast<size_t>(N), 0);
    auto place = [&](const int32_t* list, int32_t m, int8_t kind, const char* what) -> std::string {
        if (m < 0 || m > N) return std::string(what) + " count " + std::to_string(m) + at;
        for (int32_t i = 0; i < m; ++i) {
            const int32_t v = list[i];
            if (v < 0 || v >= N) return node(what, v) + " out of range" + at;
            if (where[static_cast<size_t>(v)]) return node("node", v) + " twice (" + what + ")" + at;
            where[static_cast<size_t>(v)] = kind;
        }
        return {};
    };
    if (std::string f = place(s.active[round & 1], c.active, 1, "active"); !f.empty()) return f;
    if (std::string f = place(s.cpool[c.csel & 1], c.ccount, 2, "cold"); !f.empty()) return f;
    if (c.big >= 0)
        if (std::string f = place(s.bmem, c.bcount, 3, "parked"); !f.empty()) return f;
    // The open list: each open representative once, stamped.
    std::vector<int8_t> listed(static_cast<size_t>(N), 0);
    if (c.open < 0 || c.open > N) return "open count " + std::to_string(c.open) + at;
    for (int32_t i = 0; i < c.open; ++i) {
        const int32_t x = s.open[round & 1][i];
        if (x < 0 || x >= N || x == G) return node("open entry", x) + " out of range" + at;
        if (listed[static_cast<size_t>(x)]++) return node("cluster", x) + " open twice" + at;
        if (s.label[x] != x) return node("open cluster", x) + " labelled " + std::to_string(s.label[x]) + at;
        if (s.charge[x] == 0) return node("open cluster", x) + " has no charge" + at;
        if (s.stamp[x] != round)
            return node("open cluster", x) + " stamped " + num(s.stamp[x]) + " (charge " + num(s.charge[x]) + ", members " +
                   num(s.size[x]) + ", link " + num(s.link[x]) + ", listed " + num(i) + ")" + at;
    }
    for (int32_t v = 0; v < N; ++v) {
        if (v == G) continue;
        const int32_t x = s.label[v];
        if (x < 0 || x >= N) return node("node", v) + " labelled " + std::to_string(x) + at;
        if (x == v && x != G && s.charge[x] != 0 && !listed[static_cast<size_t>(v)])
            return node("open cluster", v) + " not on the open list" + at;
        const bool open = x != G && listed[static_cast<size_t>(x)];
        const int8_t w = where[static_cast<size_t>(v)];
        if (!open) {
            if (w) return node("node", v) + " of closed cluster " + std::to_string(x) + " still " +
                              (w == 1 ? "listed" : w == 2 ? "cold" : "parked") + at;
            continue;
        }
        if (x == c.big) {
            if (w != 3) return node("member", v) + " of the parked cluster " + std::to_string(x) + " not parked" + at;
            continue;
        }
        if (w == 0 || w == 3)
            return node("member", v) + " of open cluster " + std::to_string(x) + (w ? " parked" : " neither listed nor cold") + at;
        if (w == 2 && !(s.ctheta[x] <= s.key[v] && s.key[v] != RankKeys::kNone))
            return node("cold member", v) + " of cluster " + std::to_string(x) + ": its key below the cluster's ctheta" + at;
    }
    return {};
}

}  // namespace tessera
