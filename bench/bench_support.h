// What the benchmark programs share: medians of timed runs, markdown rows, bit comparisons.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace tessera::bench {

// Median milliseconds of `repeat` runs after a warm-up, `prepare` untimed before each.
inline double median_ms(int repeat, const std::function<void()>& prepare, const std::function<void()>& run) {
    prepare();
    run();  // warm-up
    std::vector<double> t;
    for (int i = 0; i < repeat; ++i) {
        prepare();
        const auto t0 = std::chrono::steady_clock::now();
        run();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (t.empty()) return 0;  // --check's reference runs only
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

inline void row(const char* what, int64_t n, const std::string& backend, double dev_ms, double h2h_ms) {
    const double ms = dev_ms > 0 ? dev_ms : h2h_ms;
    const double mpx = static_cast<double>(n) * static_cast<double>(n) / 1e6 / (ms / 1e3);
    char dev[32] = "-";
    if (dev_ms > 0) std::snprintf(dev, sizeof dev, "%.3f", dev_ms);
    std::printf("| %s | %lldx%lld | %s | %s | %.3f | %.0f |\n", what, static_cast<long long>(n),
                static_cast<long long>(n), backend.c_str(), dev, h2h_ms, mpx);
    std::fflush(stdout);
}

// Prints the comparison; 1 when they differ.
template <class T>
int check_same(const std::vector<T>& a, const std::vector<T>& b, const char* what) {
    const bool same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
    std::printf("check: %s: %s\n", what, same ? "bit-identical to the CPU backend" : "DIFFERS from the CPU backend");
    return same ? 0 : 1;
}

}  // namespace tessera::bench
