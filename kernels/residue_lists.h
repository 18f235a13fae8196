// Residue lists found in parts (a streamed region's chunks) made one list.
#pragma once
#include <vector>

#include "kernels/residue.h"

namespace tessera {

// The parts one after another, copied on threads into one fresh list; each part is freed as
// it is copied. Parts in ascending id order, each ahead of the next, give a list in id order.
ResidueList joined(std::vector<ResidueList>& parts);

}  // namespace tessera
