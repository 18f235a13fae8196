// score: per-component cycle-count accuracy of an unwrapped phase against the truth.
//
// Usage: score UNW.f32 TRUTH.f32 ROWS COLS [--labels LABELS.u32] [--coherence C.f32 --min-coherence X]
//   valid pixel   : truth finite (a valid pixel whose unwrapped value is NaN counts as wrong)
//   components    : --labels (raw uint32, 0 = no component -> wrong), or else the 4-connected
//                   regions of finite unwrapped pixels
//   per component : the most common offset rint((unw - truth) / 2pi) over its valid pixels
//                   (ties: the smaller offset); the pixels having it are correct
// Prints: fraction_correct=0.xxxxxx valid=N correct=M components=K
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "score: %s\n", msg.c_str());
    std::exit(2);
}

template <class T>
std::vector<T> read_raw(const char* path, size_t n) {
    std::vector<T> v(n);
    FILE* f = std::fopen(path, "rb");
    if (!f) die(std::string("cannot open ") + path);
    size_t got = std::fread(v.data(), sizeof(T), n, f);
    std::fclose(f);
    if (got != n) die(std::string("short read from ") + path);
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: score UNW.f32 TRUTH.f32 ROWS COLS [--labels LABELS.u32] [--coherence C.f32 --min-coherence X]\n");
        return 2;
    }
    const long H = std::strtol(argv[3], nullptr, 10), W = std::strtol(argv[4], nullptr, 10);
    const char* labels_path = nullptr;
    const char* coherence_path = nullptr;
    double min_coherence = 0.0;
    for (int i = 5; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--labels" && i + 1 < argc)
            labels_path = argv[++i];
        else if (a == "--coherence" && i + 1 < argc)
            coherence_path = argv[++i];
        else if (a == "--min-coherence" && i + 1 < argc)
            min_coherence = std::strtod(argv[++i], nullptr);
        else
            die("unknown argument " + a);
    }
    if (H < 1 || W < 1) die("bad ROWS/COLS");
    const size_t N = size_t(H) * size_t(W);
    const std::vector<float> unw = read_raw<float>(argv[1], N);
    std::vector<float> truth = read_raw<float>(argv[2], N);
    // Decorrelated pixels (coherence below the threshold) carry no phase to get right:
    // they leave the score for every unwrapper alike.
    if (coherence_path) {
        const std::vector<float> coh = read_raw<float>(coherence_path, N);
        for (size_t k = 0; k < N; ++k)
            if (!(coh[k] >= min_coherence)) truth[k] = NAN;
    }

    std::vector<uint32_t> label;
    if (labels_path) {
        label = read_raw<uint32_t>(labels_path, N);
    } else {
        // 4-connected components of finite unwrapped pixels, labels 1, 2, ...
        label.assign(N, 0);
        std::vector<size_t> stack;
        uint32_t next = 0;
        for (size_t s = 0; s < N; ++s) {
            if (label[s] || !std::isfinite(unw[s])) continue;
            label[s] = ++next;
            stack.push_back(s);
            while (!stack.empty()) {
                const size_t k = stack.back();
                stack.pop_back();
                const size_t r = k / W, c = k % W;
                auto visit = [&](size_t n) {
                    if (!label[n] && std::isfinite(unw[n])) {
                        label[n] = next;
                        stack.push_back(n);
                    }
                };
                if (c > 0) visit(k - 1);
                if (c + 1 < size_t(W)) visit(k + 1);
                if (r > 0) visit(k - W);
                if (r + 1 < size_t(H)) visit(k + W);
            }
        }
    }

    // (component, offset) for every valid pixel that can be right at all; sort and take the mode.
    const double two_pi = 2.0 * M_PI;
    uint64_t valid = 0;
    std::vector<std::pair<uint32_t, int64_t>> lo;
    lo.reserve(N);
    for (size_t k = 0; k < N; ++k) {
        if (!std::isfinite(truth[k])) continue;
        ++valid;
        if (!std::isfinite(unw[k]) || label[k] == 0) continue;
        const double d = (double(unw[k]) - double(truth[k])) / two_pi;
        lo.emplace_back(label[k], static_cast<int64_t>(std::llrint(d)));
    }
    std::sort(lo.begin(), lo.end());
    uint64_t correct = 0, components = 0;
    for (size_t i = 0; i < lo.size();) {
        size_t j = i;
        uint64_t best = 0;
        while (j < lo.size() && lo[j].first == lo[i].first) {
            size_t e = j;
            while (e < lo.size() && lo[e] == lo[j]) ++e;
            best = std::max<uint64_t>(best, e - j);
            j = e;
        }
        correct += best;
        ++components;
        i = j;
    }
    const double frac = valid ? double(correct) / double(valid) : 0.0;
    std::printf("fraction_correct=%.6f valid=%llu correct=%llu components=%llu\n", frac,
                static_cast<unsigned long long>(valid), static_cast<unsigned long long>(correct),
                static_cast<unsigned long long>(components));
    return 0;
}
