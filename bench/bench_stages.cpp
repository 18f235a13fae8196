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
#include <cstdlib>
#include <cstring>
#include <new>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/types.h"
#include "app/synth.h"
#include "bench/device_parts.h"
#include "pipeline/unwrap_region.h"

using namespace tessera;

namespace {

// Host arrays of one scene, allocated once and reused by every run; page-locked
// (cudaMallocHost) for the CUDA backend unless --pageable, as a GPU pipeline's own buffers are.
template <class T>
struct HostArray {
    T* p = nullptr;
    size_t n = 0;
    bool pinned = false;
    HostArray(size_t n_, bool pin) : n(n_) {
        if (pin && (p = static_cast<T*>(bench::pinned_alloc(n * sizeof(T))))) {
            pinned = true;
            return;
        }
        p = static_cast<T*>(std::malloc(n * sizeof(T)));
        if (!p) throw std::bad_alloc();
    }
    ~HostArray() {
        if (pinned) {
            bench::pinned_free(p);
            return;
        }
        std::free(p);
    }
    HostArray(const HostArray&) = delete;
    HostArray& operator=(const HostArray&) = delete;
};

struct Buffers {
    HostArray<float> u;
    HostArray<uint8_t> flags;
    HostArray<uint32_t> label;
    HostArray<int32_t> k;
    Buffers(size_t n, bool pin) : u(n, pin), flags(n, pin), label(n, pin), k(n, pin) {}
};

struct Run {
    std::map<std::string, double> stage;
    double total = 0;
    int label_bytes = 4;
};

// Unwraps the scene into b (cycles only when asked: a check needs them, a timing does not).
Run run(const SynthScene& s, Backend backend, int64_t tile, Buffers& b, bool cycles) {
    Run out;
    const size_t n = s.wrapped.size();
#pragma omp parallel for
    for (size_t i = 0; i < n; ++i) {
        const bool ok = std::isfinite(s.wrapped[i]);
        b.u.p[i] = ok ? s.wrapped[i] : 0.0f;
        b.flags.p[i] = ok ? 0 : kInvalid;
    }
    RegionArrays a{s.rows, s.cols, Window{0, 0, s.rows, s.cols}, b.u.p, b.flags.p, b.label.p, cycles ? b.k.p : nullptr};
    UnwrapParams p;
    p.backend = backend;
    p.narrow_labels = true;  // as the scene pipeline stores them (kernels/label_width.h)
    auto t = std::chrono::steady_clock::now();
    const auto t0 = t;
    out.label_bytes = unwrap_image(a, tile, p, [&](const char* name) {
        const auto now = std::chrono::steady_clock::now();
        out.stage[name] += std::chrono::duration<double>(now - t).count();
        t = now;
    }).label_bytes;
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
    bool check = false, pinned = true;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
        if (a == "--case") name = next();
        else if (a == "--size") size = std::stoll(next());
        else if (a == "--tile-size") tile = std::stoll(next());
        else if (a == "--backend") backend = next();
        else if (a == "--repeat") repeat = std::stoi(next());
        else if (a == "--check") check = true;
        else if (a == "--pageable") pinned = false;
    }
    const Backend b = backend == "cuda" ? Backend::kCuda : Backend::kCpu;
    const auto tg = std::chrono::steady_clock::now();
    const SynthScene s = make_scene(name, size, size, 1);
    std::fprintf(stderr, "scene %s %lldx%lld in %.1f s\n", name.c_str(), static_cast<long long>(size),
                 static_cast<long long>(size), std::chrono::duration<double>(std::chrono::steady_clock::now() - tg).count());
    Buffers buf(s.wrapped.size(), pinned && b == Backend::kCuda);
    run(s, b, tile, buf, false);  // warm-up: allocations, module load, page faults
    std::map<std::string, std::vector<double>> st;
    std::vector<double> total;
    for (int r = 0; r < repeat; ++r) {
        const Run last = run(s, b, tile, buf, false);
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
    if (b == Backend::kCuda) {
        // The same scene from device memory: per-stage times (each synchronised) and the total.
        const std::vector<bench::ResidentRun> runs = bench::resident_stage_runs(s, tile, buf.u.p, buf.flags.p, buf.label.p, repeat);
        std::map<std::string, std::vector<double>> rs;
        std::vector<double> rt;
        for (const bench::ResidentRun& last : runs) {
            for (const auto& [k, v] : last.stage) rs[k].push_back(v);
            rt.push_back(last.total);
        }
        if (!rt.empty()) {
            const double rtot = median(rt);
            std::printf("| %s | %lld² | cuda resident | - | - | %.4f |", name.c_str(), static_cast<long long>(size), rtot);
            for (const char* k : {"upload", "residues", "matching", "rasterise", "union_find", "offset_solve", "apply"})
                std::printf(" %.4f |", rs.count(k) ? median(rs[k]) : 0.0);
            std::printf(" - | - | %.2f |\n", px / rtot / 1e9);
        }
    }
    int rc = 0;
    if (check && b == Backend::kCuda) {
        const size_t n = s.wrapped.size();
        Buffers ref(n, false);
        const int lb = run(s, Backend::kCpu, tile, ref, true).label_bytes;
        const bool same = run(s, b, tile, buf, true).label_bytes == lb && std::memcmp(ref.u.p, buf.u.p, n * 4) == 0 &&
                          std::memcmp(ref.label.p, buf.label.p, n * static_cast<size_t>(lb)) == 0 &&
                          std::memcmp(ref.k.p, buf.k.p, n * 4) == 0;
        std::fprintf(stderr, "check vs cpu backend (labels %d B): %s\n", lb, same ? "bit-identical" : "DIFFERENT");
        rc = same ? 0 : 1;
    }
    MPI_Finalize();
    return rc;
}
