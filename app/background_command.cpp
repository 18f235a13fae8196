// `tessera background` (app/background_command.h).
#include "app/background_command.h"

#include "app/memory_budget.h"
#include "app/progress.h"
#include "pipeline/rank_device.h"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "io/hdf5_writer.h"
#include "io/result_georef.h"
#include "io/result_sink.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "partition/comm.h"
#include "partition/surface_fit.h"
#include "backend/backend.h"

namespace tessera {

// --- shared support ---------------------------------------------------------------

bool has_suffix(const std::string& path, std::initializer_list<const char*> suffixes) {
    std::string p = path;
    std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* s : suffixes) {
        const std::string suf(s);
        if (p.size() >= suf.size() && p.compare(p.size() - suf.size(), suf.size(), suf) == 0) return true;
    }
    return false;
}

namespace {

bool is_hdf5_file(const std::string& in) { return has_suffix(in, {".h5", ".hdf5", ".he5"}); }

// The last path component of an HDF5 dataset name ("/a/b" -> "b").
std::string dataset_leaf(const std::string& name) {
    const auto slash = name.find_last_of('/');
    return slash == std::string::npos ? name : name.substr(slash + 1);
}

}  // namespace

std::string resolve_raster_input(const std::string& in, const std::string& dataset) {
    if (in.rfind("HDF5:", 0) == 0) {
        if (!dataset.empty()) throw InputError(in, "--dataset is given but IN already names a dataset");
        return in;
    }
    if (is_hdf5_file(in)) {
        std::string d = dataset.empty() ? std::string("unwrapped_phase") : dataset;
        while (!d.empty() && d.front() == '/') d.erase(d.begin());
        if (!std::filesystem::exists(in)) throw InputError(in, "no such file");
        return "HDF5:\"" + in + "\"://" + d;
    }
    if (!dataset.empty()) throw InputError(in, "--dataset applies to HDF5 inputs (.h5) only");
    return in;
}

GeoRef input_georef(const std::string& in, const RasterInfo& info) {
    GeoRef geo;
    geo.has_geotransform = info.has_geotransform;
    geo.geotransform = info.geotransform;
    geo.projection_wkt = info.projection_wkt;
    if (is_hdf5_file(in)) {
        GeoRef h5;
        if (read_result_georef(in, h5)) return h5;
    }
    return geo;
}

// --- the command ------------------------------------------------------------------

BackgroundReport run_background(const BackgroundOptions& opt, MPI_Comm mpi_comm) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    Comm comm(mpi_comm);
    const int rank = comm.rank(), size = comm.size();
    const int64_t node_ranks = size > 1 ? comm.node_local_rank().second : 1;  // collective: before the checks
    BackgroundReport rep;
    Lap laps;
    auto lap = [&] { return comm.max(laps.next()); };  // the slowest rank's (collective)

    std::unique_ptr<RasterReader> in;
    GeoRef geo;
    bool out_h5 = false;
    agree_on_errors(comm, [&] {
        if (opt.degree < 0 || opt.degree > kMaxSurfaceDegree)
            throw InputError(opt.input, "--degree " + std::to_string(opt.degree) + " out of range 0.." +
                                            std::to_string(kMaxSurfaceDegree));
        const std::string name = resolve_raster_input(opt.input, opt.dataset);
        in = std::make_unique<RasterReader>(name, opt.band);
        const RasterInfo& info = in->info();
        if (!opt.mask.empty()) {
            const RasterInfo mi = RasterReader(opt.mask, 1).info();
            if (mi.rows != info.rows || mi.cols != info.cols)
                throw InputError(opt.mask, "size " + std::to_string(mi.cols) + "x" + std::to_string(mi.rows) +
                                               " (cols x rows) differs from the input's " +
                                               std::to_string(info.cols) + "x" + std::to_string(info.rows));
        }
        if (has_suffix(opt.output, {".h5", ".hdf5"}))
            out_h5 = true;
        else if (!has_suffix(opt.output, {".tif", ".tiff"}))
            throw InputError(opt.output, "output must end in .h5 (HDF5) or .tif (GeoTIFF)");
        // Never an input, only a regular file, an existing one only with --overwrite (issue 14).
        check_outputs({opt.output}, {opt.input, opt.mask}, opt.overwrite);
        check_disk_space({{opt.output, info.rows * info.cols * 4 + (1 << 20)}});  // float32, before deflate
        // The rank's row band: phase 4, valid 1, mask 1, fitted result 4, and slack 2 (bytes a pixel).
        const int64_t band = (info.rows + size - 1) / size;
        check_memory(opt.input, band * info.cols * 12, band, info.cols, node_ranks);
        geo = input_georef(opt.input, info);
    });
    select_rank_device(comm, opt.backend, -1, /*share=*/true);
    rep.backend = backend_name(opt.backend);
    const RasterInfo& info = in->info();
    const int64_t H = info.rows, W = info.cols;
    rep.rows = H;
    rep.cols = W;
    rep.output_dataset = opt.dataset.empty() ? std::string("unwrapped_phase") : dataset_leaf(opt.dataset);

    // HDF5 output, created before any work so that a bad output fails first; removed unless
    // committed.
    const std::string h5_path = out_h5 ? opt.output : std::string();
    std::unique_ptr<Hdf5Writer> out;
    if (!h5_path.empty())
        agree_on_errors(comm, [&] { out = std::make_unique<Hdf5Writer>(h5_path, mpi_comm, H, W); });

    // This rank's row band (any split gives the same bits: kernels/background.h).
    const int64_t r0 = H * rank / size, r1 = H * (rank + 1) / size;
    const Window own{r0, 0, r1 - r0, W};
    std::vector<float> z(static_cast<size_t>(own.size()));
    std::vector<uint8_t> valid(static_cast<size_t>(own.size())), mask;
    agree_on_errors(comm, [&] {
        in->read_phase(own, z.data(), valid.data(), W);
        if (!opt.mask.empty()) {
            mask.resize(static_cast<size_t>(own.size()));
            RasterReader(opt.mask, 1).read_mask(own, mask.data(), W);
        }
    });
    rep.read_seconds = lap();
    int64_t nvalid = 0;
    for (uint8_t v : valid) nvalid += v != 0;
    rep.valid = comm.sum(nvalid);
    const uint8_t* mk = opt.mask.empty() ? nullptr : mask.data();
    ResidualSums rs;
    // The backend's band (section 5); either gives the same bits. CUDA: the fit's time
    // includes the upload.
    const std::unique_ptr<SurfaceBand> band = backend_ops(opt.backend).surface_band(z.data(), valid.data(), mk, own, W, H, W);
    agree_on_errors(comm, [&] {
        try {
            rep.fit = fit_surface(*band, opt.degree, comm);
        } catch (const SurfaceFitError& e) {
            throw InputError(opt.input, e.what());  // the same on every rank
        }
    });
    rep.fit_seconds = lap();
    rs = band->subtract(rep.fit);
    const double sq = comm.sum(rs.sum_sq);
    rep.subtract_seconds = lap();
    rep.residual_rms = rep.fit.count > 0 ? std::sqrt(sq / static_cast<double>(rep.fit.count)) : 0.0;

    const double nan = std::nan("");
    if (out) {
        std::vector<Attribute> attrs = {
            {"software", std::string("tessera ") + TESSERA_VERSION},
            {"command", std::string("background")},
            {"input", opt.input},
            {"mask", opt.mask},
            {"band", int64_t{opt.band}},
            {"rows", H},
            {"cols", W},
            {"degree", int64_t{opt.degree}},
            {"surface_coefficients", rep.fit.coeffs},
            {"surface", describe_surface(rep.fit)},
            {"surface_coordinates", std::string("x = 2 col / (W - 1) - 1, y = 2 row / (H - 1) - 1; terms 1, x, y, "
                                                "x^2, x y, y^2, ... (total degree, then power of y)")},
            {"fitted_pixels", rep.fit.count},
            {"valid_pixels", rep.valid},
            {"residual_rms", rep.residual_rms},
            {"ranks", int64_t{size}},
            {"backend", rep.backend},
            {"geotransform", std::vector<double>(geo.geotransform.begin(), geo.geotransform.end())},
            {"has_geotransform", int64_t{geo.has_geotransform}},
            {"projection", geo.projection_wkt},
            {"nodata", nan},
        };
        out->set_deflate(0);
        out->write_f32(rep.output_dataset, own, z.data(), W,
                       {{"description", std::string("input minus the fitted degree-") + std::to_string(opt.degree) +
                                            " surface; NaN where invalid"},
                        {"_FillValue", nan}});
        out->write_attributes(attrs);
        out->commit();
    }
    if (!out_h5) {
        // GDAL cannot write one file from many processes: rank 0 writes the ranks' bands as
        // they arrive (partition/strip_gather.h), from memory.
        write_geotiff_from_ranks(comm, opt.output, H, W, geo, own, z.data(), W);
    }
    rep.write_seconds = lap();
    rep.seconds = comm.max(std::chrono::duration<double>(clock::now() - t0).count());
    return rep;
}

CLI::App* add_background_command(CLI::App& app, std::function<void()>& run) {
    auto opt = std::make_shared<BackgroundOptions>();
    auto* sub = app.add_subcommand("background", "fit a 2-D polynomial surface by least squares and subtract it");
    sub->add_option("IN", opt->input,
                    "any GDAL raster (an unwrapped phase); X.h5 means HDF5:\"X.h5\"://unwrapped_phase")
        ->required();
    sub->add_option("OUT", opt->output, "result: .h5 (parallel HDF5) or .tif (GeoTIFF float32, NaN nodata)")
        ->required();
    sub->add_option("--degree", opt->degree, "polynomial degree 0..6")
        ->capture_default_str()
        ->check(CLI::Range(0, kMaxSurfaceDegree));
    sub->add_option("--mask", opt->mask, "raster of background pixels to fit (nonzero); default all valid pixels");
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
    sub->callback([&run, opt, backend] {
        run = [opt, backend] {
            opt->backend = resolve_backend(*backend);
            const BackgroundReport rep = run_background(*opt, MPI_COMM_WORLD);
            int rank = 0;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            if (opt->quiet || rank != 0) return;
            std::printf("tessera background: %s -> %s (%s backend)\n", opt->input.c_str(), opt->output.c_str(),
                        rep.backend.c_str());
            std::printf("  size %lld x %lld (rows x cols); degree %d (%d terms) fitted to %lld of %lld valid pixels%s\n",
                        static_cast<long long>(rep.rows), static_cast<long long>(rep.cols), rep.fit.degree,
                        surface_terms(rep.fit.degree), static_cast<long long>(rep.fit.count),
                        static_cast<long long>(rep.valid), opt->mask.empty() ? "" : " (masked)");
            std::printf("  surface = %s\n", describe_surface(rep.fit).c_str());
            std::printf("    with x = 2 col / (%lld - 1) - 1, y = 2 row / (%lld - 1) - 1\n",
                        static_cast<long long>(rep.cols), static_cast<long long>(rep.rows));
            std::printf("  coefficients:");
            for (size_t t = 0; t < rep.fit.coeffs.size(); ++t) {
                const auto [i, j] = surface_term(static_cast<int>(t));
                std::printf(" c%d%d=%.17g", i, j, rep.fit.coeffs[t]);
            }
            std::printf("\n  residual RMS %.6g over the fitted pixels\n", rep.residual_rms);
            std::printf("  %.3f s (read %.3f, fit %.3f, subtract %.3f, write %.3f)\n", rep.seconds, rep.read_seconds,
                        rep.fit_seconds, rep.subtract_seconds, rep.write_seconds);
        };
    });
    return sub;
}

}  // namespace tessera
