// `tessera clahe` (app/clahe_command.h).
#include "app/memory_budget.h"
#include "app/progress.h"
#include "app/clahe_command.h"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/png_writer.h"
#include "partition/row_bands.h"
#include "io/output_set.h"
#include "io/output_path.h"
#include "io/raster_reader.h"
#include "partition/clahe.h"
#include "partition/comm.h"
#include "app/background_command.h"
#include "app/quicklook.h"
#include "backend/backend.h"
#include "pipeline/rank_device.h"

namespace tessera {

ClaheReport run_clahe(const ClaheOptions& opt, MPI_Comm mpi_comm) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    Comm comm(mpi_comm);
    const int rank = comm.rank(), size = comm.size();
    const int64_t node_ranks = size > 1 ? comm.node_local_rank().second : 1;  // collective: before the checks
    ClaheReport rep;
    Lap laps;
    auto lap = [&] { return comm.max(laps.next()); };  // the slowest rank's (collective)
    ClaheParams p = opt.params;
    if (p.nbins <= 0) p.nbins = p.out_bits == 16 ? 4096 : 256;
    rep.params = p;

    std::unique_ptr<RasterReader> in;
    GeoRef geo;
    bool png = false;
    agree_on_errors(comm, [&] {
        in = std::make_unique<RasterReader>(resolve_raster_input(opt.input, opt.dataset), opt.band);
        if (has_suffix(opt.output, {".png"}))
            png = true;
        else if (!has_suffix(opt.output, {".tif", ".tiff"}))
            throw InputError(opt.output, "output must end in .png or .tif");
        // Never the input, only a regular file, an existing one only with --overwrite (issue 14).
        check_outputs({opt.output}, {opt.input}, opt.overwrite);
        check_disk_space({{opt.output, in->info().rows * in->info().cols * (p.out_bits / 8) + (1 << 20)}});
        // The rank's row band (image 4, valid 1, result 2 bytes a pixel) and, on rank 0, the
        // gathered result.
        const int64_t band = (in->info().rows + size - 1) / size;
        check_memory(opt.input, band * in->info().cols * 7 + in->info().rows * in->info().cols * (p.out_bits / 8), band,
                     in->info().cols, node_ranks);
        try {
            make_clahe_grid(in->info().rows, in->info().cols, p);
        } catch (const std::invalid_argument& e) {
            throw InputError(opt.input, e.what());
        }
        if (png && (in->info().rows > 1000000 || in->info().cols > 1000000))
            throw InputError(opt.output, "image too large for a PNG; write a .tif");
        geo = input_georef(opt.input, in->info());
    });
    select_rank_device(comm, opt.backend, -1, /*share=*/true);
    rep.backend = backend_name(opt.backend);
    const BackendOps& kernels = backend_ops(opt.backend);  // chosen once (section 5); either gives the same bits
    const RasterInfo& info = in->info();
    const int64_t H = info.rows, W = info.cols;
    rep.rows = H;
    rep.cols = W;

    const int64_t r0 = H * rank / size, r1 = H * (rank + 1) / size;
    const Window own{r0, 0, r1 - r0, W};
    std::vector<float> img(static_cast<size_t>(own.size()));
    std::vector<uint8_t> valid(static_cast<size_t>(own.size()));
    agree_on_errors(comm, [&] {
        if (info.is_complex) {
            // An interferogram or SLC: equalise its amplitude (0 = no data).
            in->read_float(own, img.data(), W);
            for (size_t i = 0; i < img.size(); ++i) valid[i] = img[i] != 0.0f;
        } else {
            in->read_phase(own, img.data(), valid.data(), W);
        }
    });

    rep.read_seconds = lap();
    std::vector<uint8_t> out8;
    std::vector<uint16_t> out16;
    if (p.out_bits == 8)
        out8.resize(static_cast<size_t>(own.size()));
    else
        out16.resize(static_cast<size_t>(own.size()));
    agree_on_errors(comm, [&] {
        try {
            rep.range = p.out_bits == 8
                            ? kernels.clahe8(img.data(), valid.data(), own, W, H, W, p, comm, out8.data(), W)
                            : kernels.clahe16(img.data(), valid.data(), own, W, H, W, p, comm, out16.data(), W);
        } catch (const std::exception& e) {  // the same on every rank (parameters, no valid pixels)
            throw InputError(opt.input, e.what());
        }
    });
    rep.valid = rep.range.count;
    rep.clahe_seconds = lap();
    img = {};
    valid = {};

    const void* data = p.out_bits == 8 ? static_cast<const void*>(out8.data()) : out16.data();
    const size_t px = p.out_bits == 8 ? 1 : 2;
    if (png) {
        std::vector<uint8_t> whole;
        if (rank == 0) whole.resize(static_cast<size_t>(H * W) * px);
        stream_bands_to_root(
            comm, H, W, data, px,
            [&](int64_t row0, int64_t n, const void* d) {
                std::memcpy(whole.data() + static_cast<size_t>(row0 * W) * px, d, static_cast<size_t>(n * W) * px);
            },
            opt.output);
        std::string err;
        if (rank == 0) {
            try {
                write_png(opt.output, H, W, 1, p.out_bits, whole.data());
            } catch (const std::exception& e) {
                err = e.what();
            }
        }
        if (comm.max(int64_t{!err.empty()}))
            throw InputError::everywhere(rank == 0 ? err : opt.output + ": PNG output failed");
    } else {
        std::unique_ptr<GeoTiffWriter> tif;
        std::string err;
        if (rank == 0) {
            try {
                GeoRef g = geo;
                g.compress = true;
                tif = std::make_unique<GeoTiffWriter>(
                    opt.output, H, W, p.out_bits == 8 ? GeoTiffWriter::Pixel::kByte : GeoTiffWriter::Pixel::kUInt16, g,
                    std::nullopt);
            } catch (const std::exception& e) {
                err = e.what();
            }
        }
        if (comm.max(int64_t{!err.empty()}))
            throw InputError::everywhere(rank == 0 ? err : opt.output + ": GeoTIFF output failed");
        stream_bands_to_root(
            comm, H, W, data, px, [&](int64_t row0, int64_t n, const void* d) { tif->write_rows(row0, n, d); },
            opt.output);
        if (rank == 0) {
            try {
                tif->finish();
            } catch (const std::exception& e) {
                err = e.what();
            }
        }
        if (comm.max(int64_t{!err.empty()}))
            throw InputError::everywhere(rank == 0 ? err : opt.output + ": GeoTIFF output failed");
    }
    rep.write_seconds = lap();
    rep.seconds = comm.max(std::chrono::duration<double>(clock::now() - t0).count());
    return rep;
}

CLI::App* add_clahe_command(CLI::App& app, std::function<void()>& run) {
    auto opt = std::make_shared<ClaheOptions>();
    auto tiles = std::make_shared<std::string>("8x8");
    auto range = std::make_shared<std::vector<double>>();
    opt->params.nbins = 0;
    auto* sub = app.add_subcommand("clahe", "contrast-limited adaptive histogram equalisation to a PNG or GeoTIFF");
    sub->add_option("IN", opt->input,
                    "any GDAL raster (amplitude, intensity, unwrapped phase; complex: amplitude); "
                    "X.h5 means HDF5:\"X.h5\"://unwrapped_phase")
        ->required();
    sub->add_option("OUT", opt->output, "OUT.png or OUT.tif (8- or 16-bit, one band)")->required();
    sub->add_option("--tiles", *tiles, "tile grid ROWSxCOLS (need not divide the image)")->capture_default_str();
    sub->add_option("--clip-limit", opt->params.clip_limit,
                    "OpenCV's clipLimit: clip = limit * tile pixels / bins; 0 = no clipping")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--bits", opt->params.out_bits, "output bits per pixel, 8 or 16")
        ->capture_default_str()
        ->check(CLI::IsMember({8, 16}));
    sub->add_option("--bins", opt->params.nbins, "histogram bins 2..65536 (default 256 for 8-bit, 4096 for 16-bit)")
        ->check(CLI::Range(2, 65536));
    sub->add_option("--range", *range, "LO HI: value range (default: min and max of the valid pixels)")
        ->expected(2)
        ->allow_extra_args(false);
    auto* band =
        sub->add_option("--band", opt->band, "band of IN (1-based)")->capture_default_str()->check(CLI::Range(1, 65535));
    auto* ds = sub->add_option("--dataset", opt->dataset, "dataset of an HDF5 IN (default unwrapped_phase)");
    band->excludes(ds);
    auto backend = std::make_shared<std::string>("auto");
    sub->add_option("--backend", *backend, "auto (CUDA when a GPU is visible) | cpu | cuda")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    sub->add_flag("-q,--quiet", opt->quiet, "no summary");
    sub->add_flag("--overwrite", opt->overwrite, "replace output files that exist (regular files only; without it an existing output is an error)");
    sub->callback([&run, opt, tiles, range, backend] {
        run = [opt, tiles, range, backend] {
            opt->backend = resolve_backend(*backend);
            const auto x = tiles->find('x');
            try {
                if (x == std::string::npos) throw std::invalid_argument("x");
                size_t used = 0;
                opt->params.tile_rows = std::stoi(tiles->substr(0, x), &used);
                if (used != x) throw std::invalid_argument("x");
                opt->params.tile_cols = std::stoi(tiles->substr(x + 1), &used);
                if (used != tiles->size() - x - 1) throw std::invalid_argument("x");
            } catch (const std::exception&) {
                throw InputError::everywhere("--tiles " + *tiles + ": expected ROWSxCOLS, e.g. 8x8");
            }
            if (!range->empty()) {
                opt->params.fixed_range = true;
                opt->params.lo = (*range)[0];
                opt->params.hi = (*range)[1];
            }
            const ClaheReport rep = run_clahe(*opt, MPI_COMM_WORLD);
            int rank = 0;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            if (opt->quiet || rank != 0) return;
            std::printf("tessera clahe: %s -> %s (%s backend)\n", opt->input.c_str(), opt->output.c_str(),
                        rep.backend.c_str());
            std::printf("  size %lld x %lld (rows x cols), %lld valid pixels, range [%.9g, %.9g]\n",
                        static_cast<long long>(rep.rows), static_cast<long long>(rep.cols),
                        static_cast<long long>(rep.valid), rep.range.lo, rep.range.hi);
            std::printf("  %dx%d tiles, clip limit %g, %d bins, %d-bit output\n", rep.params.tile_rows,
                        rep.params.tile_cols, rep.params.clip_limit, rep.params.nbins, rep.params.out_bits);
            std::printf("  %.3f s (read %.3f, clahe %.3f, write %.3f)\n", rep.seconds, rep.read_seconds,
                        rep.clahe_seconds, rep.write_seconds);
        };
    });
    return sub;
}

}  // namespace tessera
