// Stage progress on stderr for long runs (quiet with -q).
#pragma once
#include <chrono>
#include <cstdio>

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

// Seconds between successive calls, for per-stage timings.
class Lap {
public:
    double next() {
        const auto now = std::chrono::steady_clock::now();
        const double s = std::chrono::duration<double>(now - last_).count();
        last_ = now;
        return s;
    }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace tessera
