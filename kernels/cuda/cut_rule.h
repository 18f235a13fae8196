// Section 3's rule for one closed set of residues on the device (kernels/cuda/cut_rounds.h),
// as kernels/cut_clusters.h takes it and with the same result: the same cuts in cut_order.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cut_clusters.h"
#include "kernels/cuda/cut_rounds.h"

namespace tessera::cuda {

// Where the device rule's time went: the rounds', and the host's setup and cut making (ms).
struct DeviceRuleTimes {
    RoundTimes rounds;
    double setup = 0, cuts = 0;
};

// Appends the cuts of `res` to `out`, adds its counts to `stats`. False, with nothing changed,
// when the set does not fit the device's 64-bit keys (the caller keeps the host rule).
bool cut_clusters_on_device(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                            std::vector<Cut>& out, ClusterStats& stats, DeviceRuleTimes* times = nullptr);
// The same with the parked cluster's tuning (tests: small ones run every path on small sets).
bool cut_clusters_on_device(std::span<const ClusterResidue> res, int64_t H, int64_t W, int64_t radius,
                            std::vector<Cut>& out, ClusterStats& stats, DeviceRuleTimes* times, const RoundTuning& tune);

}  // namespace tessera::cuda
