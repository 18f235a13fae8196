// Seconds between successive calls (per-stage timings; TESSERA_TRACE profiling).
#pragma once
#include <chrono>
#include <cstdlib>

namespace tessera {

class Lap {
public:
    double next() {
        const auto now = std::chrono::steady_clock::now();
        const double s = std::chrono::duration<double>(now - last_).count();
        last_ = now;
        return s;
    }
    double next_ms() { return next() * 1e3; }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// TESSERA_TRACE set: profiling lines on stderr.
inline bool trace_on() { return std::getenv("TESSERA_TRACE") != nullptr; }

}  // namespace tessera
