// Section 3's rule on one scene's residue set (one rank holds the image): the host rule
// (kernels/cut_clusters.h) against the device rule (kernels/cuda/cut_rule.h), same run, same
// machine; the cuts compared bit for bit. With TESSERA_TRACE the host rule prints its own split.
//   tessera_bench_cut_rule --case holes --size 16384 --radius 16 --repeat 3
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "app/synth.h"
#include "kernels/cuda/cut_rule.h"
#include "kernels/cuda/region.h"
#include "kernels/cut_clusters.h"
#include "tests/support/scene_clusters.h"

using namespace tessera;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    std::string name = "holes";
    int64_t size = 4096, radius = 16;
    int repeat = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
        if (a == "--case") name = next();
        else if (a == "--size") size = std::stoll(next());
        else if (a == "--radius") radius = std::stoll(next());
        else if (a == "--repeat") repeat = std::stoi(next());
    }
    if (cuda::device_count() == 0) {
        std::fprintf(stderr, "tessera_bench_cut_rule: no CUDA device visible\n");
        MPI_Finalize();
        return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    const SynthScene s = make_scene(name, size, size, 1);
    const std::vector<ClusterResidue> res = testing::scene_cluster_residues(s);
    std::fprintf(stderr, "scene %s %lld² and its residue set in %.1f s: %zu residues\n", name.c_str(),
                 static_cast<long long>(size), ms_since(t0) / 1e3, res.size());

    std::vector<Cut> host, dev;
    ClusterStats hs, ds;
    std::vector<double> host_ms, dev_ms;
    std::vector<cuda::DeviceRuleTimes> dev_t;
    bool identical = true, refused = false;
    for (int r = 0; r <= repeat; ++r) {  // r = 0: warm-up (module load, pool, page faults)
        host.clear(), hs = ClusterStats{};
        t0 = std::chrono::steady_clock::now();
        cut_clusters(res, s.rows, s.cols, radius, host, hs);
        const double h = ms_since(t0);
        dev.clear(), ds = ClusterStats{};
        cuda::DeviceRuleTimes t;
        t0 = std::chrono::steady_clock::now();
        refused = !cuda::cut_clusters_on_device(res, s.rows, s.cols, radius, dev, ds, &t);
        const double d = ms_since(t0);
        if (refused) break;
        identical = identical && dev == host && ds.pairs == hs.pairs && ds.ground_cuts == hs.ground_cuts &&
                    ds.lake_joins == hs.lake_joins;
        if (r == 0) continue;
        host_ms.push_back(h), dev_ms.push_back(d), dev_t.push_back(t);
        std::fprintf(stderr,
                     "run %d: host %.1f ms; device %.1f ms = host setup %.1f + upload/init %.1f + wide rounds %.1f (%d) + "
                     "one-block rounds %.1f (%d, %d launches) + sort %.1f + download %.1f + cuts %.1f; %d rounds, %lld node searches\n",
                     r, h, d, t.setup, t.rounds.upload, t.rounds.wide, t.rounds.wide_rounds, t.rounds.block,
                     t.rounds.block_rounds, t.rounds.block_launches, t.rounds.sort, t.rounds.download, t.cuts, t.rounds.rounds,
                     static_cast<long long>(t.rounds.searched));
    }
    if (refused) {
        std::printf("| %s | %lld² | %zu | device rule refused (keys do not fit 64 bits) |\n", name.c_str(),
                    static_cast<long long>(size), res.size());
        MPI_Finalize();
        return 1;
    }
    std::printf("| %s | %lld² | %zu | %lld | %d | %.1f | %.1f | %.2f | %s |\n", name.c_str(), static_cast<long long>(size),
                res.size(), static_cast<long long>(host.size()), omp_get_max_threads(), median(host_ms), median(dev_ms),
                median(host_ms) / median(dev_ms), identical ? "identical" : "DIFFERENT");
    MPI_Finalize();
    return identical ? 0 : 2;
}
