// `tessera plan` (app/plan_command.h).
#include "app/plan_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "app/memory_budget.h"
#include "backend/backend.h"
#include "io/raster_reader.h"
#include "pipeline/chunk_plan.h"

namespace tessera {

namespace {

struct PlanCli {
    std::string input, coherence, mask, rank_grid, memory_limit = "auto", gpu_memory_limit = "auto", backend = "auto";
    int band = 1, ranks = 1, ranks_per_node = 0;
    int64_t tile_size = 512, chunk_rows = 0;
    bool save_cycles = false;
};

void print_plan(const PlanCli& c) {
    const RasterInfo info = RasterReader(c.input, c.band).info();
    const Backend b = resolve_backend(c.backend);
    const BackendOps& ops = backend_ops(b);
    const int per_node = c.ranks_per_node > 0 ? c.ranks_per_node : c.ranks;
    PlanRequest q;
    q.H = info.rows, q.W = info.cols, q.tile = c.tile_size, q.ranks = c.ranks, q.rank_grid = c.rank_grid;
    q.cuda = b == Backend::kCuda, q.cycles = c.save_cycles;
    const int64_t avail = available_memory();
    const int64_t given = c.memory_limit != "auto" ? parse_bytes(c.memory_limit, "--memory-limit") : -1;
    q.host_limit = given > 0 ? given : avail < 0 ? -1 : avail / per_node;
    q.host_reserved = memory_reserved(q.host_limit, given > 0);
    q.device_limit = c.gpu_memory_limit != "auto" ? parse_bytes(c.gpu_memory_limit, "--gpu-memory-limit")
                                                  : ops.device_free_bytes();
    q.input_bytes_per_pixel = (info.is_complex ? 8 : 4) + (c.coherence.empty() ? 0 : 4) + (c.mask.empty() ? 0 : 1);
    q.output_bytes_per_pixel = 4 + 1 + (c.save_cycles ? 4 : 0);
    q.chunk_rows = c.chunk_rows;
    const Plan p = make_plan(q, c.input);
    const int64_t tile = p.grid.tiles.tile;
    auto limit = [](int64_t v) { return v < 0 ? std::string("none") : format_bytes(v); };
    std::printf("input        %s: %lld rows x %lld cols (%.2f Gpx)%s\n", c.input.c_str(), static_cast<long long>(q.H),
                static_cast<long long>(q.W), static_cast<double>(q.H) * static_cast<double>(q.W) / 1e9,
                info.is_complex ? ", complex" : "");
    std::printf("backend      %s\n", ops.name);
    std::printf("ranks        %d as %lld x %lld (rank rows x rank columns), %d per node; tiles of %lld\n", p.grid.size(),
                static_cast<long long>(p.grid.P), static_cast<long long>(p.grid.Q), per_node, static_cast<long long>(tile));
    std::printf("limits       host %s (%s of it reserved: the process before it reads, GDAL's cache), GPU %s per rank\n",
                limit(q.host_limit).c_str(), format_bytes(q.host_reserved).c_str(), limit(q.device_limit).c_str());
    if (p.in_core())
        std::printf("layout       each rank's window in one piece, 1 pass over the input\n");
    else
        std::printf("layout       chunks of %lld tile rows (%lld pixel rows), %lld on the largest rank, 3 passes over the "
                    "input\n",
                    static_cast<long long>(p.tile_rows), static_cast<long long>(p.tile_rows * tile),
                    static_cast<long long>(p.chunks));
    std::printf("memory       %s host%s per rank for the %s (plus residues, cuts and component records)\n",
                format_bytes(p.host_bytes).c_str(),
                p.device_bytes > 0 ? (", " + format_bytes(p.device_bytes) + " GPU").c_str() : "",
                p.in_core() ? "window" : "largest chunk");
    std::printf("I/O          reads %s, writes %s\n", format_bytes(p.read_bytes).c_str(), format_bytes(p.write_bytes).c_str());
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, std::function<void()>& run) {
    auto c = std::make_shared<PlanCli>();
    auto* sub = app.add_subcommand("plan", "print how `unwrap` would lay out a run (ranks, chunks, memory, I/O) without running it");
    sub->add_option("IN", c->input, "wrapped phase or complex interferogram (any GDAL raster)")->required();
    sub->add_option("--band", c->band, "band of IN (1-based)")->capture_default_str();
    sub->add_option("--coherence", c->coherence, "coherence raster (counted in the I/O)");
    sub->add_option("--mask", c->mask, "mask raster (counted in the I/O)");
    sub->add_option("--ranks", c->ranks, "MPI ranks of the run")->capture_default_str()->check(CLI::Range(1, 1 << 20));
    sub->add_option("--ranks-per-node", c->ranks_per_node, "ranks sharing one node's memory (default: all)");
    sub->add_option("--rank-grid", c->rank_grid, "PxQ ranks over the tile grid (default: automatic)");
    sub->add_option("--tile-size", c->tile_size, "tile side in pixels")->capture_default_str();
    sub->add_option("--memory-limit", c->memory_limit, "host bytes a rank may hold (4G, 512M, ...; auto)")->capture_default_str();
    sub->add_option("--gpu-memory-limit", c->gpu_memory_limit, "GPU bytes a rank may hold (auto: free on the device)")
        ->capture_default_str();
    sub->add_option("--backend", c->backend, "auto | cpu | cuda")->capture_default_str()->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    sub->add_option("--chunk-rows", c->chunk_rows, "chunks of this many rows (whole tiles), whatever the limits");
    sub->add_flag("--save-cycles", c->save_cycles, "k kept (4 bytes a pixel more)");
    run = [c] { print_plan(*c); };
    return sub;
}

}  // namespace tessera
