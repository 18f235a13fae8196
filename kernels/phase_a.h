// Matching phase A (ARCHITECTURE.md section 3): locally-dominant rounds within D over a
// fixed residue set, the backend's hook. partition/matching.cpp runs the round protocol and
// the exchanges between ranks; a PhaseARounds keeps every residue's state (matched flag,
// candidate partner, mate) where the backend works (host memory or device memory) and does
// the per-residue work, so that a round moves only border residues' states off the backend.
// Every decision is a function of the round's state alone (best_candidate is a minimum under
// the strict EdgeKey order; an edge is accepted when both ends point at each other, or at
// the ground), so every implementation gives the same mates, bit for bit.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/residue.h"
#include "kernels/residue_grid.h"
#include "kernels/types.h"

namespace tessera {

// Partner codes beside kPartnerGround and kPartnerNone (kernels/residue_grid.h).
inline constexpr int32_t kPartnerUnknown = -3;     // a halo residue's partner this rank does not hold
inline constexpr int32_t kPartnerUnsearched = -4;  // no search yet: the next search() looks

class PhaseARounds {
public:
    virtual ~PhaseARounds() = default;
    // Once per matching. res: the rank's residues and its halo's, sorted by id (alive and
    // unchanged until the last call); owned: res.size() flags, non-zero for this rank's own.
    // Only residues inside `area` are candidates; weights above `limit` are not. Every residue
    // starts free with kPartnerUnsearched.
    virtual void bind(std::span<const Residue> res, std::span<const uint8_t> owned, const Window& area, int64_t cell,
                      int64_t limit, int64_t H, int64_t W) = 0;
    // (a) Every owned free residue whose partner is kPartnerUnsearched or was taken gets
    // best_candidate()'s partner. Returns the owned free residues with a partner (not
    // kPartnerNone): 0 everywhere ends phase A.
    virtual int64_t search() = 0;
    // The state of residues locals[k]: partner (local index, kPartnerGround, or negative for
    // none) and matched flag, for the owners' messages to halo holders.
    virtual void export_states(std::span<const int32_t> locals, int32_t* partner, uint8_t* matched) = 0;
    // Halo residues' states as their owners sent them (partner: local index or a negative code).
    virtual void import_states(std::span<const int32_t> locals, const int32_t* partner, const uint8_t* matched) = 0;
    // (c) Accepts the locally-dominant edges among free residues, each at its lower-id end:
    // halo == false, owned residues with the ground or an owned partner (no halo state needed);
    // halo == true, every edge touching a halo residue. Reads the round's state only.
    virtual void decide(bool halo) = 0;
    // Marks the ends of the edges decided since the last commit as matched.
    virtual void commit() = 0;
    // mate[i] for every residue: its partner's local index, kPartnerGround, or kPartnerNone.
    virtual void mates(int32_t* mate) = 0;
};

// The host implementation: best_candidate over a ResidueGrid, searches on OpenMP threads.
class HostPhaseARounds final : public PhaseARounds {
public:
    void bind(std::span<const Residue> res, std::span<const uint8_t> owned, const Window& area, int64_t cell,
              int64_t limit, int64_t H, int64_t W) override;
    int64_t search() override;
    void export_states(std::span<const int32_t> locals, int32_t* partner, uint8_t* matched) override;
    void import_states(std::span<const int32_t> locals, const int32_t* partner, const uint8_t* matched) override;
    void decide(bool halo) override;
    void commit() override;
    void mates(int32_t* mate) override;

private:
    std::span<const Residue> res_;
    std::vector<uint8_t> owned_, matched_;
    std::vector<int32_t> own_list_, partner_, mate_, which_;
    std::vector<std::pair<int32_t, int32_t>> accepted_;  // (i, partner) decided this round
    ResidueGrid grid_;
    int64_t limit_ = 0, H_ = 0, W_ = 0;
};

}  // namespace tessera
