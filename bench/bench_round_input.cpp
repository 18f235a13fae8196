// The device rule's host setup (kernels/cut_rounds_input.h make_round_input) on one scene's
// residue set as one rank hands it to the rule, with the scene's pixels below --min-coherence as
// lakes. Each repeat's time and a hash of the arrays made (equal across builds: same input).
// The first repeat takes fresh memory, as a run's only call does; later ones reuse it.
//   tessera_bench_round_input --case holes --size 16384 --min-coherence 0.3 --repeat 3
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/synth.h"
#include "kernels/cut_rounds_input.h"
#include "tests/support/scene_clusters.h"

using namespace tessera;

namespace {

uint64_t hash_of(const RoundInput& in) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](int64_t v) { h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull; };
    for (const auto* v : {&in.rr, &in.rc, &in.sign, &in.lake_node, &in.adj})
        for (const int32_t x : *v) mix(x);
    for (const int32_t x : in.adj_start) mix(x);
    for (const int64_t x : {int64_t{in.n}, int64_t{in.L}, in.r0, in.c0, in.rows, in.cols}) mix(x);
    return h;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    std::string name = "holes";
    int64_t size = 8192;
    uint64_t seed = 1;
    float min_coherence = 0.3f;
    int repeat = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
        if (a == "--case") name = next();
        else if (a == "--size") size = std::stoll(next());
        else if (a == "--seed") seed = std::stoull(next());
        else if (a == "--min-coherence") min_coherence = std::stof(next());
        else if (a == "--repeat") repeat = std::stoi(next());
    }
    const std::vector<ClusterResidue> res =
        testing::scene_cluster_residues(make_scene(name, size, size, seed), 512, min_coherence);
    std::printf("%s %lld², %zu residues\n", name.c_str(), static_cast<long long>(size), res.size());
    for (int r = 0; r < repeat; ++r) {
        RoundInput in;
        const auto t0 = std::chrono::steady_clock::now();
        const bool made = make_round_input(res, size, size, 16, in, /*bitmap=*/false);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::printf("make_round_input %.1f ms%s, %d lakes, %zu lake entries, arrays' hash %016llx\n", ms,
                    made ? "" : " (refused)", in.L, in.adj.size(), static_cast<unsigned long long>(hash_of(in)));
    }
    MPI_Finalize();
}
