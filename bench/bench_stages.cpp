// Per-stage timing of the unwrapper on a synthetic scene held in memory, for either
// backend (README "Performance"; ARCHITECTURE.md section 8). With --check the CUDA
// result is compared bit for bit with the CPU backend's.
//   tessera_bench_stages --case topo --size 8192 --backend cuda --repeat 5 --check
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/types.h"
#include "src/synth.h"
#include "src/unwrap_region.h"

using namespace tessera;

namespace {

struct Run {
    std::vector<float> u;
    std::vector<uint32_t> label;
    std::vector<int32_t> k;
    std::map<std::string, double> stage;
    double total = 0;
};

Run run(const SynthScene& s, Backend b, int64_t tile) {
    Run out;
    const size_t n = s.wrapped.size();
    out.u.resize(n);
    out.label.resize(n);
    out.k.resize(n);
    std::vector<uint8_t> flags(n);
#pragma omp parallel for
    for (size_t i = 0; i < n; ++i) {
        const bool ok = std::isfinite(s.wrapped[i]);
        out.u[i] = ok ? s.wrapped[i] : 0.0f;
        flags[i] = ok ? 0 : kInvalid;
    }
    RegionArrays a{s.rows, s.cols, Window{0, 0, s.rows, s.cols}, out.u.data(), flags.data(), out.label.data(),
                   out.k.data()};
    UnwrapParams p;
    p.backend = b;
    auto t = std::chrono::steady_clock::now();
    const auto t0 = t;
    unwrap_image(a, tile, p, [&](const char* name) {
        const auto now = std::chrono::steady_clock::now();
        out.stage[name] += std::chrono::duration<double>(now - t).count();
        t = now;
    });
    out.total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    std::string name = "topo", backend = "cpu";
    int64_t size = 4096, tile = 512;
    int repeat = 3;
    bool check = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
        if (a == "--case") name = next();
        else if (a == "--size") size = std::stoll(next());
        else if (a == "--tile-size") tile = std::stoll(next());
        else if (a == "--backend") backend = next();
        else if (a == "--repeat") repeat = std::stoi(next());
        else if (a == "--check") check = true;
    }
    const Backend b = backend == "cuda" ? Backend::kCuda : Backend::kCpu;
    const auto tg = std::chrono::steady_clock::now();
    const SynthScene s = make_scene(name, size, size, 1);
    std::fprintf(stderr, "scene %s %lldx%lld in %.1f s\n", name.c_str(), static_cast<long long>(size),
                 static_cast<long long>(size), std::chrono::duration<double>(std::chrono::steady_clock::now() - tg).count());
    run(s, b, tile);  // warm-up: allocations, module load, page faults
    std::map<std::string, std::vector<double>> st;
    std::vector<double> total;
    Run last;
    for (int r = 0; r < repeat; ++r) {
        last = run(s, b, tile);
        for (const auto& [k, v] : last.stage) st[k].push_back(v);
        total.push_back(last.total);
    }
    const double px = static_cast<double>(size) * static_cast<double>(size);
    const double up = st.count("upload") ? median(st["upload"]) : 0, down = st.count("download") ? median(st["download"]) : 0;
    const double tot = median(total);
    // "Device-resident": every stage but the host<->device copies.
    const double resident = tot - up - down;
    std::printf("| %s | %lld² | %s | %d | %.4f | %.4f |", name.c_str(), static_cast<long long>(size), backend.c_str(),
                omp_get_max_threads(), tot, resident);
    for (const char* k : {"upload", "residues", "matching", "rasterise", "union_find", "offset_solve", "apply", "download"})
        std::printf(" %.4f |", st.count(k) ? median(st[k]) : 0.0);
    std::printf(" %.2f | %.2f |\n", px / tot / 1e9, px / resident / 1e9);
    int rc = 0;
    if (check && b == Backend::kCuda) {
        const Run ref = run(s, Backend::kCpu, tile);
        const bool same = std::memcmp(ref.u.data(), last.u.data(), ref.u.size() * 4) == 0 && ref.label == last.label &&
                          ref.k == last.k;
        std::fprintf(stderr, "check vs cpu backend: %s\n", same ? "bit-identical" : "DIFFERENT");
        rc = same ? 0 : 1;
    }
    MPI_Finalize();
    return rc;
}
