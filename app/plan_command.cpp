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
#include "pipeline/noise_census.h"
#include "pipeline/unwrap_pipeline.h"

namespace tessera {

namespace {

struct PlanCli {
    UnwrapOptions opt;  // the layout options, as `unwrap` takes them
    std::string memory_limit = "auto", gpu_memory_limit = "auto", backend = "auto";
    int ranks = 1, ranks_per_node = 0;
};

void print_plan(PlanCli& c) {
    const RasterInfo info = RasterReader(c.opt.input, c.opt.band).info();
    c.opt.backend = resolve_backend(c.backend);
    const BackendOps& ops = backend_ops(c.opt.backend);
    const int per_node = c.ranks_per_node > 0 ? c.ranks_per_node : c.ranks;
    PlanRequest q = plan_request(c.opt, info, c.ranks);
    const int64_t avail = available_memory();
    const int64_t given = c.memory_limit != "auto" ? parse_bytes(c.memory_limit, "--memory-limit") : -1;
    q.host_limit = given > 0 ? given : avail < 0 ? -1 : avail / per_node;
    q.host_reserved = memory_reserved(q.host_limit, given > 0);
    q.writeback_from = writeback_threshold();
    q.device_limit = c.gpu_memory_limit != "auto" ? parse_bytes(c.gpu_memory_limit, "--gpu-memory-limit")
                                                  : ops.device_free_bytes();
    const Plan p = make_plan(q, c.opt.input);
    const int64_t tile = p.grid.tiles.tile;
    auto limit = [](int64_t v) { return v < 0 ? std::string("none") : format_bytes(v); };
    std::printf("input        %s: %lld rows x %lld cols (%.2f Gpx)%s\n", c.opt.input.c_str(), static_cast<long long>(q.H),
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
        std::printf("layout       chunks of %lld tile rows (%lld pixel rows), %lld on the largest rank, %s\n",
                    static_cast<long long>(p.tile_rows), static_cast<long long>(p.tile_rows * tile),
                    static_cast<long long>(p.chunks),
                    p.inputs_kept ? ("3 passes over the input read once, kept in memory (" + format_bytes(p.kept_bytes) +
                                     " a rank" + (c.opt.scratch.empty() ? "" : "; the third over the scratch") + ")")
                                        .c_str()
                    : c.opt.scratch.empty() ? "3 passes over the input"
                                            : "2 passes over the input, the third over the scratch");
    std::printf("memory       %s host%s per rank for the %s (plus residues, cuts and component records)\n",
                format_bytes(p.host_bytes).c_str(),
                p.device_bytes > 0 ? (", " + format_bytes(p.device_bytes) + " GPU").c_str() : "",
                p.in_core() ? "window" : p.inputs_kept ? "largest chunk and the kept input" : "largest chunk");
    std::printf("I/O          reads %s, writes %s%s\n", format_bytes(p.read_bytes).c_str(), format_bytes(p.write_bytes).c_str(),
                p.scratch_total > 0 ? " (scratch included)" : "");
    // `unwrap`'s default --guide-window auto (docs/ARCHITECTURE.md 2.2); --guide-window 0 skips it.
    const int64_t counted = census_rows(q.H, q.W);
    std::printf("census       --guide-window auto (unwrap's default; 0 skips it): %lld of %lld plaquette rows, %s\n",
                static_cast<long long>(counted), static_cast<long long>(q.H - 1),
                p.in_core() ? "counted as the run reads them"
                            : ("read first (about " + format_bytes(counted * q.W * (c.opt.coherence.empty() ? 4 : 8)) +
                               " of the phase" + (c.opt.coherence.empty() ? "" : " and coherence") + ")").c_str());
    if (!c.opt.scratch.empty())
        std::printf("scratch      %s\n",
                    p.in_core() ? "none (the window is taken in one piece)"
                                : (format_bytes(p.scratch_bytes) + " on the largest rank, " + format_bytes(p.scratch_total) +
                                   " in all, in " + c.opt.scratch + ": written by pass 2, read by pass 3 instead of the input")
                                      .c_str());
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, std::function<void()>& run) {
    auto c = std::make_shared<PlanCli>();
    auto* sub = app.add_subcommand("plan", "print how `unwrap` would lay out a run (ranks, chunks, memory, I/O) without running it");
    sub->add_option("IN", c->opt.input, "wrapped phase or complex interferogram (any GDAL raster)")->required();
    sub->add_option("--band", c->opt.band, "band of IN (1-based)")->capture_default_str();
    sub->add_option("--coherence", c->opt.coherence, "coherence raster (counted in the I/O)");
    sub->add_option("--mask", c->opt.mask, "mask raster (counted in the I/O)");
    sub->add_option("--ranks", c->ranks, "MPI ranks of the run")->capture_default_str()->check(CLI::Range(1, 1 << 20));
    sub->add_option("--ranks-per-node", c->ranks_per_node, "ranks sharing one node's memory (default: all)");
    sub->add_option("--rank-grid", c->opt.rank_grid, "PxQ ranks over the tile grid (default: automatic)");
    sub->add_option("--tile-size", c->opt.tile_size, "tile side in pixels (not given: halved as needed for the ranks)")
        ->capture_default_str()
        ->each([c](const std::string&) { c->opt.tile_size_given = true; });
    sub->add_option("--memory-limit", c->memory_limit, "host bytes a rank may hold (4G, 512M, ...; auto)")->capture_default_str();
    sub->add_option("--gpu-memory-limit", c->gpu_memory_limit, "GPU bytes a rank may hold (auto: free on the device)")
        ->capture_default_str();
    sub->add_option("--backend", c->backend, "auto | cpu | cuda")->capture_default_str()->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    sub->add_option("--chunk-rows", c->opt.chunk_rows, "chunks of this many rows (whole tiles), whatever the limits");
    sub->add_option("--scratch", c->opt.scratch, "a directory for the scratch (counted in the I/O; not checked)");
    sub->add_flag("--save-cycles", c->opt.save_cycles, "k kept (4 bytes a pixel more)");
    run = [c] { print_plan(*c); };
    return sub;
}

}  // namespace tessera
