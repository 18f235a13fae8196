// Stage progress on stderr for long runs (quiet with -q).
#pragma once
#include <cstdio>

#include "kernels/lap.h"

namespace tessera {

class Progress {
public:
    explicit Progress(bool quiet) : quiet_(quiet) {}
    void stage(const char* name, double seconds) const {
        if (!quiet_) std::fprintf(stderr, "tessera: %-13s %8.3f s\n", name, seconds);
    }

private:
    bool quiet_;
};


}  // namespace tessera
