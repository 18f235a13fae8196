// score: per-component cycle-count accuracy of an unwrapped phase against the truth.
//
// Usage: score UNW.f32 TRUTH.f32 ROWS COLS [--labels LABELS.u32] [--coherence C.f32 --min-coherence X]
//        score UNW.f32 TRUTH.f32 ROWS COLS --per-region [--coherence C.f32 --min-coherence X]
//   valid pixel   : truth finite (a valid pixel whose unwrapped value is NaN counts as wrong)
//   components    : --labels (raw uint32, 0 = no component -> wrong), or else the 4-connected
//                   regions of finite unwrapped pixels
//   per component : the most common offset rint((unw - truth) / 2pi) over its valid pixels
//                   (ties: the smaller offset); the pixels having it are correct
// Prints: fraction_correct=0.xxxxxx valid=N correct=M components=K
//
// --per-region (issue 13's quality table): the score a user sees, whatever the components.
//   regions       : the 4-connected regions of valid pixels (finite truth, and coherence >= X
//                   with --coherence); no labels are used (a split into components does not
//                   excuse a wrong offset)
//   per region    : the most common offset rint((unw - truth) / 2pi) over its pixels with a
//                   finite output (ties: the smaller offset); a pixel is correct when its output
//                   is finite and carries its region's offset
//   one offset    : the single most common offset over all valid pixels (ties: the smaller)
// Prints: per_region_correct=F fraction_one_offset=F regions=N regions_all_right=N valid=N
//         correct=N one_offset=N output_regions=N output_regions_ge100=N
//   (output_regions: 4-connected regions of finite output pixels, for an unwrapper that has
//    no labels; _ge100: those of at least 100 pixels, tessera's default --min-component-size)
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

// 4-connected regions of the pixels where keep(k) holds: labels 1, 2, ... in raster order of
// their first pixel, 0 elsewhere. Returns the number of regions; sizes[l] = pixels of region l.
template <class Keep>
uint32_t label_regions(long H, long W, Keep keep, std::vector<uint32_t>& label, std::vector<uint64_t>& sizes) {
    const size_t N = size_t(H) * size_t(W);
    label.assign(N, 0);
    sizes.assign(1, 0);
    std::vector<size_t> stack;
    uint32_t next = 0;
    for (size_t s = 0; s < N; ++s) {
        if (label[s] || !keep(s)) continue;
        label[s] = ++next;
        uint64_t count = 0;
        stack.push_back(s);
        while (!stack.empty()) {
            const size_t k = stack.back();
            stack.pop_back();
            ++count;
            const size_t r = k / W, c = k % W;
            auto visit = [&](size_t n) {
                if (!label[n] && keep(n)) {
                    label[n] = next;
                    stack.push_back(n);
                }
            };
            if (c > 0) visit(k - 1);
            if (c + 1 < size_t(W)) visit(k + 1);
            if (r > 0) visit(k - W);
            if (r + 1 < size_t(H)) visit(k + W);
        }
        sizes.push_back(count);
    }
    return next;
}

int per_region(long H, long W, const std::vector<float>& unw, const std::vector<float>& truth) {
    const size_t N = size_t(H) * size_t(W);
    std::vector<uint32_t> region;
    std::vector<uint64_t> region_size;
    const uint32_t regions =
        label_regions(H, W, [&](size_t k) { return std::isfinite(truth[k]); }, region, region_size);

    // (region, offset) for every valid pixel with a finite output; sort, then the mode per region.
    const double two_pi = 2.0 * M_PI;
    uint64_t valid = 0;
    std::vector<std::pair<uint32_t, int64_t>> ro;
    ro.reserve(N);
    for (size_t k = 0; k < N; ++k) {
        if (!region[k]) continue;
        ++valid;
        if (!std::isfinite(unw[k])) continue;
        const double d = (double(unw[k]) - double(truth[k])) / two_pi;
        ro.emplace_back(region[k], static_cast<int64_t>(std::llrint(d)));
    }
    std::sort(ro.begin(), ro.end());
    uint64_t correct = 0, all_right = 0;
    for (size_t i = 0; i < ro.size();) {
        size_t j = i;
        uint64_t best = 0;  // the first maximal run is the smaller offset (sorted)
        while (j < ro.size() && ro[j].first == ro[i].first) {
            size_t e = j;
            while (e < ro.size() && ro[e] == ro[j]) ++e;
            best = std::max<uint64_t>(best, e - j);
            j = e;
        }
        correct += best;
        if (best == region_size[ro[i].first]) ++all_right;
        i = j;
    }
    // The single most common offset of the whole scene.
    std::vector<int64_t> off(ro.size());
    for (size_t i = 0; i < ro.size(); ++i) off[i] = ro[i].second;
    std::sort(off.begin(), off.end());
    uint64_t one = 0;
    for (size_t i = 0; i < off.size();) {
        size_t e = i;
        while (e < off.size() && off[e] == off[i]) ++e;
        one = std::max<uint64_t>(one, e - i);
        i = e;
    }
    std::vector<uint32_t>().swap(region);

    std::vector<uint32_t> out_label;
    std::vector<uint64_t> out_size;
    const uint32_t out_regions =
        label_regions(H, W, [&](size_t k) { return std::isfinite(unw[k]); }, out_label, out_size);
    uint64_t out_ge100 = 0;
    for (uint32_t l = 1; l <= out_regions; ++l) out_ge100 += out_size[l] >= 100;

    const double frac = valid ? double(correct) / double(valid) : 0.0;
    const double frac_one = valid ? double(one) / double(valid) : 0.0;
    std::printf("per_region_correct=%.6f fraction_one_offset=%.6f regions=%u regions_all_right=%llu valid=%llu "
                "correct=%llu one_offset=%llu output_regions=%u output_regions_ge100=%llu\n",
                frac, frac_one, regions, static_cast<unsigned long long>(all_right),
                static_cast<unsigned long long>(valid), static_cast<unsigned long long>(correct),
                static_cast<unsigned long long>(one), out_regions,
                static_cast<unsigned long long>(out_ge100));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr,
                     "usage: score UNW.f32 TRUTH.f32 ROWS COLS [--labels LABELS.u32 | --per-region] "
                     "[--coherence C.f32 --min-coherence X]\n");
        return 2;
    }
    const long H = std::strtol(argv[3], nullptr, 10), W = std::strtol(argv[4], nullptr, 10);
    const char* labels_path = nullptr;
    const char* coherence_path = nullptr;
    double min_coherence = 0.0;
    bool by_region = false;
    for (int i = 5; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--labels" && i + 1 < argc)
            labels_path = argv[++i];
        else if (a == "--coherence" && i + 1 < argc)
            coherence_path = argv[++i];
        else if (a == "--min-coherence" && i + 1 < argc)
            min_coherence = std::strtod(argv[++i], nullptr);
        else if (a == "--per-region")
            by_region = true;
        else
            die("unknown argument " + a);
    }
    if (H < 1 || W < 1) die("bad ROWS/COLS");
    if (by_region && labels_path) die("--labels has no meaning with --per-region (regions come from the truth)");
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
    if (by_region) return per_region(H, W, unw, truth);

    std::vector<uint32_t> label;
    if (labels_path) {
        label = read_raw<uint32_t>(labels_path, N);
    } else {
        // 4-connected components of finite unwrapped pixels, labels 1, 2, ...
        std::vector<uint64_t> sizes;
        label_regions(H, W, [&](size_t k) { return std::isfinite(unw[k]); }, label, sizes);
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
