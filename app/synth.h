// Synthetic scenes with known truth (`tessera synth`), for the demo, tests and benchmarks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// Cases: "bowl" (smooth deformation bowls + ramp, light noise), "topo" (fractal
// topography, coherence-dependent noise), "holes" (topo plus decorrelated holes
// and a nodata river cutting the scene), "fringes" (noisy concentric fringes); and "noisy"
// (topo's topography with the noise of a two-look interferogram under a smooth coherence field),
// which is not one of synth_case_names' four (`--case all`).
struct SynthScene {
    std::string name;
    int64_t rows = 0, cols = 0;
    std::vector<float> wrapped;    // in [-pi, pi); NaN where nodata (river)
    std::vector<float> coherence;  // [0, 1]; 0 where nodata
    std::vector<float> truth;      // unwrapped truth; wrapped = wrap(truth + noise); NaN where nodata
};

const std::vector<std::string>& synth_case_names();

// Deterministic for (name, rows, cols, seed) on any machine (integer hash RNG, no std distributions).
// Throws std::invalid_argument for an unknown case name or rows/cols < 2.
SynthScene make_scene(const std::string& name, int64_t rows, int64_t cols, uint64_t seed);

// The three files write_scene makes for case `name` in `dir`: wrapped, coherence, truth.
std::vector<std::string> scene_files(const std::string& name, const std::string& dir);

// Writes <dir>/<name>_wrapped.tif (nodata NaN), <name>_coherence.tif, <name>_truth.tif (nodata NaN)
// through unique temporaries (io/output_set.h: left to the active OutputSet when there is one).
// Returns the path of the wrapped-phase file.
std::string write_scene(const SynthScene& scene, const std::string& dir);

}  // namespace tessera
