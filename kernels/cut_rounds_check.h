// A check of the rounds' state between two rounds (kernels/cut_rounds.h; docs/ARCHITECTURE.md
// 3.3): what the lists say agrees with the labels. The serial loop runs it every round in the
// tests; the device's drivers run it on a copy of their state (TESSERA_CHECK_ROUNDS).
#pragma once

#include <string>

#include "kernels/cut_rounds.h"

namespace tessera {

// The first broken invariant, in words (empty: none). s: host arrays, counts between rounds.
//  - no node is listed, cold or parked twice;
//  - the open list holds each open cluster once (representatives: their own label), the parked
//    one included, and each is stamped with the round;
//  - every member of an open cluster is listed (active) or cold (the pool), the parked
//    cluster's members parked (bmem) instead; none else is listed or cold;
//  - a cold member's cached key is at least its cluster's ctheta.
std::string round_state_fault(const RoundState& s);

}  // namespace tessera
