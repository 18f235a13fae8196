// Test support: a synthetic scene folded as the unwrapper's input is (phase 0 and kInvalid where
// the phase is not finite or the coherence is 0; kLowCoherence below `min_coherence`).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "app/synth.h"
#include "kernels/types.h"

namespace tessera::testing {

struct SceneInput {
    int64_t H = 0, W = 0;
    std::vector<float> phase;
    std::vector<uint8_t> flags;
};

inline SceneInput scene_input(const SynthScene& s, float min_coherence = 0.0f) {
    SceneInput in{s.rows, s.cols, std::vector<float>(s.wrapped.size()), std::vector<uint8_t>(s.wrapped.size())};
    for (size_t i = 0; i < s.wrapped.size(); ++i) {
        const bool ok = std::isfinite(s.wrapped[i]) && s.coherence[i] > 0.0f;
        in.phase[i] = ok ? s.wrapped[i] : 0.0f;
        in.flags[i] = ok ? (s.coherence[i] < min_coherence ? kLowCoherence : 0) : kInvalid;
    }
    return in;
}

}  // namespace tessera::testing
