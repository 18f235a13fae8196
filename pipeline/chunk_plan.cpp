#include "pipeline/chunk_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "io/input_error.h"

namespace tessera {

ChunkBytes chunk_bytes_per_pixel(bool cuda, bool cycles, bool scratch, bool write_behind) {
    // Two chunks' arrays (phase 4, flags 1, labels 4, k 4): the next one is read ahead (and a
    // third being written, with write_behind); on the CPU the Region's own beside them
    // (union-find words, tile scratch: 18, measured from the peak RSS against the chunk height at 4096^2).
    const int64_t arrays = (write_behind ? 3 : 2) * (4 + 1 + 4 + (cycles ? 4 : 0));
    const int64_t words = scratch ? kScratchOwnBytes : 0;
    return cuda ? ChunkBytes{arrays + 2 * words, 24} : ChunkBytes{arrays + 18 + words, 0};
}

ChunkBytes in_core_bytes_per_pixel(bool cuda, bool cycles) {
    return {4 + 1 + 4 + 1 + (cycles ? 4 : 0) + 16, cuda ? 24 : 0};
}

Plan make_plan(const PlanRequest& req, const std::string& input) {
    Plan plan;
    plan.grid = make_rank_grid(TileGrid(req.H, req.W, req.tile), req.ranks, req.rank_grid, input);
    const ChunkBytes per = chunk_bytes_per_pixel(req.cuda, req.cycles, req.scratch, req.write_behind);
    // The largest rank window decides: every rank takes chunks of the same tile rows.
    int64_t max_rows = 0, max_cols = 0;  // own rows, buffer columns
    for (int r = 0; r < plan.grid.size(); ++r)
        max_rows = std::max(max_rows, plan.grid.own(r).rows), max_cols = std::max(max_cols, plan.grid.buffer(r).cols);
    const int64_t tile = plan.grid.tiles.tile, trows = (max_rows + tile - 1) / tile;
    int64_t max_buf = 0;  // pixels of the largest buffer window
    for (int r = 0; r < plan.grid.size(); ++r) max_buf = std::max(max_buf, plan.grid.buffer(r).size());
    const ChunkBytes whole = in_core_bytes_per_pixel(req.cuda, req.cycles);
    auto fits = [](int64_t limit, int64_t bytes) { return limit < 0 || bytes <= limit; };
    const int64_t host_stages = req.host_limit < 0 ? -1 : req.host_limit - req.host_reserved;
    if (req.host_limit >= 0 && host_stages < (int64_t{1} << 20))
        throw InputError(input, "--memory-limit " + format_bytes(req.host_limit) + " is less than a rank holds before it "
                                "reads a pixel (" + format_bytes(req.host_reserved) +
                                ": libraries, open inputs, GDAL's block cache); raise it");
    if (req.chunk_rows <= 0 && fits(host_stages, max_buf * whole.host) &&
        fits(req.device_limit, max_buf * whole.device) && (!req.cuda || max_buf <= kDeviceWindowPixels)) {
        plan.tile_rows = trows, plan.chunks = 1, plan.passes = 1;
        plan.host_bytes = max_buf * whole.host, plan.device_bytes = max_buf * whole.device;
        plan.read_bytes = req.H * req.W * req.input_bytes_per_pixel;
        plan.write_bytes = req.H * req.W * req.output_bytes_per_pixel;
        return plan;
    }
    plan.streamed = true;
    auto rows_fitting = [&](int64_t limit, int64_t reserved, int64_t bytes, const char* what) {
        if (limit < 0 || bytes == 0) return trows;
        const int64_t row_bytes = max_cols * bytes;
        const int64_t fit = static_cast<int64_t>(static_cast<double>(limit - reserved) * kChunkShare) / row_bytes - 1;  // halo row
        if (fit < tile)
            throw InputError(input, std::string(what) + " " + format_bytes(limit) +
                                        (reserved > 0 ? " (" + format_bytes(limit - reserved) + " of it for the stages)"
                                                      : std::string()) +
                                        " holds no row of tiles: " +
                                        std::to_string(tile) + " rows of " + std::to_string(max_cols) +
                                        " pixels need about " + format_bytes((tile + 1) * row_bytes) + " (" +
                                        std::to_string(bytes) + " B a pixel, " +
                                        std::to_string(static_cast<int>(kChunkShare * 100)) +
                                        " % of the limit for them); raise it, use more ranks or a smaller --tile-size");
        return std::min(trows, fit / tile);
    };
    // Tile rows a chunk may have when `kept` bytes of the host's share are taken already.
    auto chunk_rows = [&](int64_t kept) {
        const int64_t reserved = req.host_reserved + static_cast<int64_t>(static_cast<double>(kept) / kChunkShare);
        int64_t rows = std::min(rows_fitting(req.host_limit, reserved, per.host, "--memory-limit"),
                                rows_fitting(req.device_limit, 0, per.device, "--gpu-memory-limit"));
        if (req.cuda) rows = std::min(rows, std::max<int64_t>(1, (kDeviceWindowPixels / max_cols - 1) / tile));
        rows = std::min(rows, (trows + kMinStreamedChunks - 1) / kMinStreamedChunks);
        if (req.chunk_rows > 0) rows = std::clamp<int64_t>(req.chunk_rows / tile, 1, trows);
        return std::max<int64_t>(rows, 1);
    };
    auto kept_at = [&](int64_t rows) {
        int64_t b = 0;
        for (int r = 0; r < plan.grid.size(); ++r) b = std::max(b, kept_input_bytes(plan.grid, r, rows));
        return b;
    };
    auto chunk_px = [&](int64_t rows) { return (std::min(rows * tile, max_rows) + 1) * max_cols; };
    auto fits_beside = [&](int64_t rows, int64_t kept) {
        return host_stages < 0 ||
               static_cast<double>(chunk_px(rows) * per.host + kept) <= static_cast<double>(host_stages) * kChunkShare;
    };
    plan.tile_rows = chunk_rows(0);
    // The inputs as read kept beside the chunks (read once, not three times) when the host's share
    // holds both; where the chunks fill it, they give up room for the inputs if these take at most
    // half of it (smaller chunks cost less than two more reads).
    if (req.keep_inputs) {
        int64_t kept = kept_at(plan.tile_rows);
        if (!fits_beside(plan.tile_rows, kept) && req.chunk_rows <= 0 &&
            static_cast<double>(kept) <= 0.5 * static_cast<double>(host_stages) * kChunkShare) {
            int64_t rows = chunk_rows(kept);
            while (rows > 1 && !fits_beside(rows, kept_at(rows))) --rows;  // more chunks keep more halo rows
            if (fits_beside(rows, kept_at(rows))) plan.tile_rows = rows, kept = kept_at(rows);
        }
        plan.inputs_kept = fits_beside(plan.tile_rows, kept);
        plan.kept_bytes = plan.inputs_kept ? kept : 0;
        int64_t own_px = 0;
        for (int r = 0; r < plan.grid.size(); ++r) own_px = std::max(own_px, plan.grid.own(r).size());
        // Not past the kernel's background writeback: pages made that early would go to disk before
        // their data came and be dirtied again (the 20 GB of the 4.92 Gpx mosaic, session 34).
        plan.output_ready_early = plan.inputs_kept && fits_beside(plan.tile_rows, kept + 4 * own_px) &&
                                  (req.writeback_from < 0 || 4 * own_px <= req.writeback_from);
    }
    plan.chunks = (trows + plan.tile_rows - 1) / plan.tile_rows;
    plan.passes = 3;
    plan.write_behind = req.write_behind;
    plan.host_bytes = chunk_px(plan.tile_rows) * per.host + plan.kept_bytes;
    plan.device_bytes = chunk_px(plan.tile_rows) * per.device;
    plan.reads = plan.inputs_kept ? 1 : 3;
    plan.write_bytes = req.H * req.W * req.output_bytes_per_pixel;
    if (req.scratch) {
        // Pass 3 reads the scratch pass 2 wrote instead of the inputs.
        for (int r = 0; r < plan.grid.size(); ++r) {
            const int64_t b = scratch_bytes(plan.grid, r, plan.tile_rows);
            plan.scratch_bytes = std::max(plan.scratch_bytes, b), plan.scratch_total += b;
        }
        plan.reads = plan.inputs_kept ? 1 : 2;
        plan.write_bytes += plan.scratch_total;
    }
    plan.read_bytes = plan.reads * req.H * req.W * req.input_bytes_per_pixel + plan.scratch_total;
    return plan;
}

namespace {

// Pixels of `rank`'s chunk buffers (own rows plus the halo row and column where the image goes on).
int64_t chunk_buffer_pixels(const RankGrid& grid, int rank, int64_t tile_rows) {
    const Window own = grid.own(rank);
    const int64_t step = std::max<int64_t>(tile_rows, 1) * grid.tiles.tile;
    const int64_t buf_cols = own.cols + (own.col0 + own.cols < grid.tiles.W ? 1 : 0);
    int64_t px = 0;
    for (int64_t r = own.row0; r < own.row0 + own.rows; r += step) {
        const int64_t rows = std::min(step, own.row0 + own.rows - r);
        px += (rows + (r + rows < grid.tiles.H ? 1 : 0)) * buf_cols;
    }
    return px;
}

}  // namespace

int64_t scratch_bytes(const RankGrid& grid, int rank, int64_t tile_rows) {
    return chunk_buffer_pixels(grid, rank, tile_rows) * kScratchBufferBytes + grid.own(rank).size() * kScratchOwnBytes;
}

int64_t kept_input_bytes(const RankGrid& grid, int rank, int64_t tile_rows) {
    return chunk_buffer_pixels(grid, rank, tile_rows) * kScratchBufferBytes;
}

int64_t parse_bytes(const std::string& text, const std::string& option) {
    const std::string bad = option + " " + text + ": expected a size such as 4G, 512M or 1000000 (bytes)";
    if (text.empty()) throw InputError::everywhere(bad);
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (...) {
        throw InputError::everywhere(bad);
    }
    double scale = 1;
    const std::string unit = text.substr(used);
    if (unit == "K" || unit == "k") scale = 1024.0;
    else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
    else if (!unit.empty()) throw InputError::everywhere(bad);
    if (!(v > 0) || !std::isfinite(v) || v * scale > 9.0e18) throw InputError::everywhere(bad);
    return static_cast<int64_t>(v * scale);
}

std::string format_bytes(int64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

}  // namespace tessera
