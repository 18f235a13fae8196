// Section 3's rule on one scene's residue set (one rank holds the image): the host rule
// (kernels/cut_clusters.h) against the device rule (kernels/cuda/cut_rule.h), same run, same
// machine; the cuts compared bit for bit. With TESSERA_TRACE the host rule prints its own split.
//   tessera_bench_cut_rule --case holes --size 16384 --radius 16 --repeat 3
//   tessera_bench_cut_rule --case topo --size 2048 --mosaic 8 --variants "TESSERA_GRID_ROUNDS=0;TESSERA_BLOCK_FROM=4096"
//   (8 x 8 copies: a 16384² scene with seams; each run also under each setting, same residues)
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
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

// K x K copies of a scene side by side, as jobs/gpu/device_streamed.sh's NISAR-size VRT mosaic.
SynthScene mosaic_of(SynthScene base, int64_t K) {
    if (K <= 1) return base;
    SynthScene m;
    m.name = base.name + " mosaic", m.rows = K * base.rows, m.cols = K * base.cols;
    for (auto [from, to] : {std::pair{&base.wrapped, &m.wrapped}, std::pair{&base.coherence, &m.coherence},
                            std::pair{&base.truth, &m.truth}}) {
        if (from->empty()) continue;
        to->resize(static_cast<size_t>(m.rows * m.cols));
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < m.rows; ++r)
            for (int64_t c = 0; c < m.cols; ++c)
                (*to)[static_cast<size_t>(r * m.cols + c)] = (*from)[static_cast<size_t>((r % base.rows) * base.cols + c % base.cols)];
    }
    return m;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    std::string name = "holes";
    int64_t size = 4096, radius = 16;
    int repeat = 3;
    // --variants: environment settings of the device rule (kernels/cuda/cut_rounds.cu) run beside the default.
    std::vector<std::vector<std::pair<std::string, std::string>>> variants;
    std::vector<std::string> variant_names;
    int64_t mosaic = 1;  // K: the scene is K x K copies of the case (seams: long tails of open clusters)
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
        if (a == "--case") name = next();
        else if (a == "--size") size = std::stoll(next());
        else if (a == "--radius") radius = std::stoll(next());
        else if (a == "--repeat") repeat = std::stoi(next());
        else if (a == "--mosaic") mosaic = std::stoll(next());
        else if (a == "--variants") {  // "K=V K2=V;K=V": each run also under each setting
            std::stringstream all(next());
            for (std::string one; std::getline(all, one, ';');) {
                std::stringstream kvs(one);
                variants.emplace_back(), variant_names.push_back(one);
                for (std::string kv; kvs >> kv;)
                    if (const size_t eq = kv.find('='); eq != std::string::npos)
                        variants.back().emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
            }
        }
    }
    if (cuda::device_count() == 0) {
        std::fprintf(stderr, "tessera_bench_cut_rule: no CUDA device visible\n");
        MPI_Finalize();
        return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    const SynthScene s = mosaic_of(make_scene(name, size, size, 1), mosaic);
    const std::vector<ClusterResidue> res = testing::scene_cluster_residues(s);
    std::fprintf(stderr, "scene %s %lld² and its residue set in %.1f s: %zu residues\n", s.name.c_str(),
                 static_cast<long long>(s.rows), ms_since(t0) / 1e3, res.size());

    std::vector<Cut> host, dev;
    ClusterStats hs, ds;
    std::vector<double> host_ms, dev_ms;
    bool identical = true, refused = false;
    std::vector<std::vector<double>> variant_ms(variants.size());
    // One device run, checked against the host rule's cuts; its split on stderr.
    auto device_run = [&](int r, const char* what) {
        dev.clear(), ds = ClusterStats{};
        cuda::DeviceRuleTimes t;
        t0 = std::chrono::steady_clock::now();
        refused = !cuda::cut_clusters_on_device(res, s.rows, s.cols, radius, dev, ds, &t);
        const double d = ms_since(t0);
        if (refused) return d;
        identical = identical && dev == host && ds.pairs == hs.pairs && ds.ground_cuts == hs.ground_cuts &&
                    ds.lake_joins == hs.lake_joins;
        if (r > 0)
            std::fprintf(stderr,
                         "run %d%s: device %.1f ms = host setup %.1f + upload/init %.1f + wide rounds %.1f (%d) + "
                         "grid rounds %.1f (%d, %d launches) + one-block rounds %.1f (%d, %d launches) + sort %.1f + "
                         "download %.1f + cuts %.1f; %d rounds, %lld node searches\n",
                         r, what, d, t.setup, t.rounds.upload, t.rounds.wide, t.rounds.wide_rounds, t.rounds.grid,
                         t.rounds.grid_rounds, t.rounds.grid_launches, t.rounds.block, t.rounds.block_rounds,
                         t.rounds.block_launches, t.rounds.sort, t.rounds.download, t.cuts, t.rounds.rounds,
                         static_cast<long long>(t.rounds.searched));
        return d;
    };
    for (int r = 0; r <= repeat; ++r) {  // r = 0: warm-up (module load, pool, page faults)
        host.clear(), hs = ClusterStats{};
        t0 = std::chrono::steady_clock::now();
        cut_clusters(res, s.rows, s.cols, radius, host, hs);
        const double h = ms_since(t0);
        if (r > 0) std::fprintf(stderr, "run %d: host %.1f ms\n", r, h);
        const double d = device_run(r, "");
        if (refused) break;
        for (size_t j = 0; j < variants.size(); ++j) {
            for (const auto& [k, v] : variants[j]) setenv(k.c_str(), v.c_str(), 1);
            const double dv = device_run(r, (" (" + variant_names[j] + ")").c_str());
            for (const auto& kv : variants[j]) unsetenv(kv.first.c_str());
            if (r > 0) variant_ms[j].push_back(dv);
        }
        if (r > 0) host_ms.push_back(h), dev_ms.push_back(d);
    }
    if (refused) {
        std::printf("| %s | %lld² | %zu | device rule refused (keys do not fit 64 bits) |\n", s.name.c_str(),
                    static_cast<long long>(s.rows), res.size());
        MPI_Finalize();
        return 1;
    }
    std::printf("| %s | %lld² | %zu | %lld | %d | %.1f | %.1f | %.2f | %s |\n", s.name.c_str(), static_cast<long long>(s.rows),
                res.size(), static_cast<long long>(host.size()), omp_get_max_threads(), median(host_ms), median(dev_ms),
                median(host_ms) / median(dev_ms), identical ? "identical" : "DIFFERENT");
    for (size_t j = 0; j < variants.size(); ++j)
        std::printf("| %s, %s | %lld² | %zu | %lld | %d | %.1f | %.1f | %.2f | %s |\n", s.name.c_str(),
                    variant_names[j].c_str(), static_cast<long long>(s.rows), res.size(), static_cast<long long>(host.size()),
                    omp_get_max_threads(), median(host_ms), median(variant_ms[j]), median(host_ms) / median(variant_ms[j]),
                    identical ? "identical" : "DIFFERENT");
    MPI_Finalize();
    return identical ? 0 : 2;
}
