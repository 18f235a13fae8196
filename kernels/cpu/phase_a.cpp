// Matching phase A's rounds on the host (kernels/phase_a.h).
#include "kernels/phase_a.h"

#include <algorithm>
#include <stdexcept>

namespace tessera {

void HostPhaseARounds::bind(std::span<const Residue> res, std::span<const uint8_t> owned, const Window& area,
                            int64_t cell, int64_t limit, int64_t H, int64_t W) {
    if (owned.size() != res.size()) throw std::invalid_argument("HostPhaseARounds::bind: owned flags differ in length");
    res_ = res;
    owned_.assign(owned.begin(), owned.end());
    own_list_.clear();
    for (size_t i = 0; i < owned.size(); ++i)
        if (owned[i]) own_list_.push_back(static_cast<int32_t>(i));
    grid_.build(res, {}, area, cell);
    limit_ = limit;
    H_ = H;
    W_ = W;
    matched_.assign(res.size(), 0);
    partner_.assign(res.size(), kPartnerUnsearched);
    mate_.assign(res.size(), kPartnerNone);
    accepted_.clear();
}

int64_t HostPhaseARounds::search() {
    which_.clear();
    for (int32_t i : own_list_) {
        if (matched_[i]) continue;
        const int32_t p = partner_[i];
        if (p == kPartnerUnsearched || (p >= 0 && matched_[p])) which_.push_back(i);
    }
    const int64_t m = static_cast<int64_t>(which_.size());
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t k = 0; k < m; ++k) {
        const int32_t i = which_[static_cast<size_t>(k)];
        partner_[i] = best_candidate(grid_, res_, matched_.data(), i, limit_, H_, W_).partner;
    }
    int64_t active = 0;
    for (int32_t i : own_list_) active += !matched_[i] && partner_[i] != kPartnerNone;
    return active;
}

void HostPhaseARounds::export_states(std::span<const int32_t> locals, int32_t* partner, uint8_t* matched) {
    for (size_t k = 0; k < locals.size(); ++k) partner[k] = partner_[locals[k]], matched[k] = matched_[locals[k]];
}

void HostPhaseARounds::import_states(std::span<const int32_t> locals, const int32_t* partner, const uint8_t* matched) {
    for (size_t k = 0; k < locals.size(); ++k) partner_[locals[k]] = partner[k], matched_[locals[k]] = matched[k];
}

void HostPhaseARounds::decide(bool halo) {
    auto decide_one = [&](int32_t i) {
        if (matched_[i]) return;
        const int32_t j = partner_[i];
        if (j == kPartnerGround) {
            if (!halo || !owned_[i]) accepted_.push_back({i, j});
        } else if (j >= 0 && (halo ? !(owned_[i] && owned_[j]) : owned_[j] != 0) && !matched_[j] &&
                   partner_[j] == i && res_[i].id < res_[j].id) {
            accepted_.push_back({i, j});
        }
    };
    if (halo)
        for (int32_t i = 0; i < static_cast<int32_t>(res_.size()); ++i) decide_one(i);
    else
        for (int32_t i : own_list_) decide_one(i);
}

void HostPhaseARounds::commit() {
    for (const auto& [i, j] : accepted_) {
        matched_[i] = 1;
        mate_[i] = j;
        if (j >= 0) matched_[j] = 1, mate_[j] = i;
    }
    accepted_.clear();
}

void HostPhaseARounds::mates(int32_t* mate) { std::copy(mate_.begin(), mate_.end(), mate); }

}  // namespace tessera
