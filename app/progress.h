// Progress on stderr for long runs (issue 16; quiet with -q): what the run is, at its start;
// a line per finished stage; and, while chunks pass, on a terminal one live line (stage,
// chunks done of total, rate, time left) redrawn at most 4 times a second, in a log (stderr
// not a terminal, as under SLURM) a line every few seconds (TESSERA_PROGRESS_SECONDS, 10).
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/lap.h"

namespace tessera {

class Progress {
public:
    explicit Progress(bool quiet)
        : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0), start_(Clock::now()), last_(start_) {
        if (const char* s = std::getenv("TESSERA_PROGRESS_SECONDS")) log_every_ = std::atof(s);
    }

    // The size and plan, before any work.
    void begin(const std::string& line) {
        if (quiet_) return;
        std::fprintf(stderr, "tessera: %s\n", line.c_str());
        start_ = last_ = Clock::now();
    }

    void stage(const char* name, double seconds) {
        if (quiet_) return;
        clear_live();
        std::fprintf(stderr, "tessera: %-13s %8.3f s\n", name, seconds);
    }

    // `done` of `total` chunks of pass `what` finished; `pixels` processed in all passes so far
    // out of `pixels_total`.
    void chunk(const char* what, int64_t done, int64_t total, double pixels, double pixels_total) {
        if (quiet_) return;
        const auto now = Clock::now();
        const double since = std::chrono::duration<double>(now - last_).count();
        const bool last = done == total;
        if (tty_ ? (since < 0.25 && !last) : (since < log_every_)) return;
        last_ = now;
        const double t = std::chrono::duration<double>(now - start_).count();
        const double rate = t > 0 ? pixels / t : 0, left = rate > 0 ? (pixels_total - pixels) / rate : 0;
        char line[160];
        std::snprintf(line, sizeof line, "tessera: %s chunk %lld/%lld, %.1f Mpx/s, %.0f s left", what,
                      static_cast<long long>(done), static_cast<long long>(total), rate / 1e6, left);
        if (tty_) {
            std::fprintf(stderr, "\r%-79s", line);
            live_ = true;
        } else {
            std::fprintf(stderr, "%s\n", line);
        }
        std::fflush(stderr);
    }

private:
    using Clock = std::chrono::steady_clock;
    void clear_live() {
        if (live_) std::fprintf(stderr, "\r%79s\r", ""), live_ = false;
    }
    bool quiet_, tty_, live_ = false;
    double log_every_ = 10.0;
    Clock::time_point start_, last_;
};

}  // namespace tessera
