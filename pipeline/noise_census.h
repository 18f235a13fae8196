// `--guide-window auto` (docs/ARCHITECTURE.md section 2.2): before a run, count the plaquettes
// of the phase that hold a residue; above 5 % of the reliable ones the run takes the 5 x 5 guide.
#pragma once
#include "io/phase_source.h"
#include "kernels/residue_census.h"

namespace tessera {

inline constexpr int kAutoGuideWindow = 5;  // the window auto takes

// The census of the plaquettes whose top-left pixel lies in `own` and on a sampled row (every
// row of an image up to 8192 rows; else rows 0-511 of every 8192, or of every 16384 above 2^31
// pixels: section 2.2), read from `in`
// in bands. Summed over the ranks' own windows it is the image's, whatever the ranks.
ResidueCensus residue_census(const PhaseSource& in, const Window& own);
// The same from a region's arrays already filled (a.buf holds own and the pixel beyond it below
// and to the right, where the image goes on): an in-core run counts what it read.
ResidueCensus residue_census(const RegionArrays& a, const Window& own);

// How many of an H x W image's plaquette rows the census counts (every one up to 8192 rows).
int64_t census_rows(int64_t H, int64_t W);

// The window auto takes for the whole image's census: kAutoGuideWindow when residues lie on
// more than 5 % of its plaquettes, else 0 (none).
int auto_guide_window(const ResidueCensus& image);

}  // namespace tessera
