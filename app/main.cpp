// tessera command line: unwrap, synth, info (README "Usage").
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/gdal_session.h"
#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/output_set.h"
#include "kernels/invariant.h"
#include "partition/mpi_process.h"
#include "app/background_command.h"
#include "app/batch.h"
#include "app/clahe_command.h"
#include "app/error_report.h"
#include "backend/backend.h"
#include "app/hologram_command.h"
#include "app/partner_files.h"
#include "app/plan_command.h"
#include "app/result_info.h"
#include "pipeline/chunk_plan.h"
#include "app/synth.h"
#include "pipeline/unwrap_pipeline.h"

namespace {

// "ROWSxCOLS", both whole numbers in 2..1000000; InputError saying what is wrong otherwise.
std::pair<int64_t, int64_t> parse_size(const std::string& s) {
    const std::string what = "--size " + s;
    const auto x = s.find_first_of("xX");
    if (x == std::string::npos)
        throw tessera::InputError::everywhere(what + ": expected ROWSxCOLS, e.g. 1024x1024 (no 'x' found)");
    auto number = [&](const std::string& part, const char* name) -> int64_t {
        if (part.empty() || part.size() > 7 || part.find_first_not_of("0123456789") != std::string::npos)
            throw tessera::InputError::everywhere(what + ": " + name + " '" + part +
                                                  "' is not a whole number in 2..1000000 (expected ROWSxCOLS, "
                                                  "e.g. 1024x1024)");
        const int64_t v = std::stoll(part);
        if (v < 2 || v > 1000000)
            throw tessera::InputError::everywhere(what + ": " + name + " " + part +
                                                  " is outside 2..1000000 (expected ROWSxCOLS)");
        return v;
    };
    return {number(s.substr(0, x), "ROWS"), number(s.substr(x + 1), "COLS")};
}

// `tessera info`: each file is described in a child process, so that a damaged file on which
// HDF5 itself crashes or loops ends in one line, never in a crash (30 s at most without progress:
// a large file's rows take longer in all).
// Returns the number of files that failed.
int run_info(const std::vector<std::string>& files) {
    int failed = 0;
    for (const std::string& f : files) {
        std::fflush(stdout);
        int fd[2];
        if (pipe(fd) != 0) throw std::runtime_error("info: cannot create a pipe");
        const pid_t pid = fork();
        if (pid < 0) throw std::runtime_error("info: cannot fork");
        if (pid == 0) {
            close(fd[0]);
            // A crash ends the child quietly (not Open MPI's backtrace handler), and nothing
            // the libraries print reaches the user: the parent reports in one line.
            for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
            if (const int devnull = open("/dev/null", O_WRONLY); devnull >= 0) dup2(devnull, 2);
            alarm(30);
            if (std::getenv("TESSERA_TEST_INFO_CRASH")) raise(SIGSEGV);  // tests: HDF5 crashing in the child
            std::string text;
            int code = 0;
            try {
                text = tessera::result_info(f, [] { alarm(30); });  // app/result_info.h
            } catch (const tessera::InputError& e) {
                text = e.what(), code = 2;
            } catch (const std::exception& e) {
                text = f + ": cannot be read (" + e.what() + ")", code = 2;
            }
            for (size_t off = 0; off < text.size();) {
                const ssize_t n = write(fd[1], text.data() + off, text.size() - off);
                if (n <= 0) break;
                off += static_cast<size_t>(n);
            }
            _exit(code);  // no MPI_Finalize, no atexit handlers of the parent's libraries
        }
        close(fd[1]);
        std::string text;
        char buf[65536];
        for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR);)
            if (n > 0) text.append(buf, static_cast<size_t>(n));
        close(fd[0]);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            if (files.size() > 1) std::printf("%s:\n", f.c_str());
            std::printf("%s", text.c_str());
            continue;
        }
        ++failed;
        if (WIFEXITED(st))
            std::fprintf(stderr, "tessera: error: %s\n", text.c_str());
        else
            std::fprintf(stderr, "tessera: error: %s: damaged file (HDF5 %s reading it)\n", f.c_str(),
                         WTERMSIG(st) == SIGALRM ? "did not finish in 30 s" : "crashed");
    }
    return failed;
}

void print_report(const tessera::UnwrapOptions& o, const tessera::UnwrapReport& r) {
    const double mpx = static_cast<double>(r.rows * r.cols) / 1e6;
    std::printf("tessera unwrap: %s -> %s\n", o.input.c_str(), o.output.c_str());
    std::printf("  size %lld x %lld (rows x cols), %lld valid pixels, %lld tiles of %lld\n",
                static_cast<long long>(r.rows), static_cast<long long>(r.cols), static_cast<long long>(r.valid),
                static_cast<long long>(r.tiles), static_cast<long long>(r.tile_size > 0 ? r.tile_size : o.tile_size));
    std::printf("  residues %lld: %lld pair cuts, %lld ground cuts, %lld discharged into lakes, %lld one-step cuts to the ground\n",
                static_cast<long long>(r.residues), static_cast<long long>(r.pairs),
                static_cast<long long>(r.ground_cuts), static_cast<long long>(r.lake_joins), static_cast<long long>(r.lake_steps));
    if (r.census.plaquettes > 0)
        std::printf("  residue census: %.2f %% of %lld plaquettes (docs/ARCHITECTURE.md 2.2): %s\n",
                    100.0 * static_cast<double>(r.census.residues) / static_cast<double>(r.census.plaquettes),
                    static_cast<long long>(r.census.plaquettes), r.guide_window > 1 ? "a noisy phase, guided" : "no guide");
    if (r.guide_window > 1)
        std::printf("  the phase unwrapped through its %dx%d guide (docs/ARCHITECTURE.md 2.1): the residues and cuts are the guide's\n",
                    r.guide_window, r.guide_window);
    std::printf("  components %lld, labelled %lld (min size %lld), largest %lld pixels, conflicts %lld, "
                "%lld pixels' cycles corrected\n",
                static_cast<long long>(r.components), static_cast<long long>(r.labelled),
                static_cast<long long>(o.min_component_size), static_cast<long long>(r.largest),
                static_cast<long long>(r.conflicts), static_cast<long long>(r.corrected));
    std::printf("  %lld rank(s) as %lldx%lld, %s backend; most bytes sent by a rank %lld\n",
                static_cast<long long>(r.ranks), static_cast<long long>(r.rank_rows),
                static_cast<long long>(r.rank_cols), o.backend == tessera::Backend::kCuda ? "cuda" : "cpu",
                static_cast<long long>(r.bytes_sent_max));
    std::printf("  %.3f s, %.1f Mpixel/s\n", r.total_seconds, mpx / r.total_seconds);
    for (const auto& [path, band] : tessera::geotiff_outputs(o)) std::printf("  GeoTIFF: %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    tessera::prefer_lone_process_transports();
    int provided = 0;  // calls from any thread, one at a time: a streamed run's writes (section 5.1)
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    // SIGINT / SIGTERM / SIGHUP remove this process's temporaries and end it (after MPI_Init,
    // so that these handlers are the ones in place).
    tessera::install_signal_cleanup();
    tessera::quiet_library_messages();  // GDAL's and HDF5's own messages never printed raw
    CLI::App app{"tessera: tiled, exact, MPI + GPU phase unwrapping"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("tessera ") + TESSERA_VERSION);

    tessera::UnwrapOptions uo;
    std::vector<int64_t> reference;
    auto* unwrap = app.add_subcommand("unwrap", "unwrap a wrapped phase or complex interferogram (any GDAL raster)");
    tessera::UnwrapBatchCli ub;  // IN... OUT, --from-hologram and its demodulation options
    tessera::add_unwrap_batch_options(unwrap, ub);
    auto* coherence_option = unwrap->add_option("--coherence", uo.coherence,
                       "coherence raster of the same size (0 or NaN = masked), or each input's own: a template with "
                       "{dir} {stem} {name} of the input, e.g. '{dir}/{name}.cor.tif'");
    auto* mask_option = unwrap->add_option("--mask", uo.mask, "mask raster of the same size (nonzero = valid), or a template as --coherence");
    unwrap->add_option("--coherence-band", uo.coherence_band, "band of the coherence raster (needed when it has several)")
        ->check(CLI::Range(1, 65535))
        ->needs(coherence_option);
    unwrap->add_option("--mask-band", uo.mask_band, "band of the mask raster (needed when it has several)")
        ->check(CLI::Range(1, 65535))
        ->needs(mask_option);
    unwrap->add_option("--band", uo.band, "band of IN (1-based)")->capture_default_str()->check(CLI::Range(1, 65535));
    unwrap->add_option("--tile-size", uo.tile_size,
                       "tile side in pixels (the result does not depend on it; not given: halved as needed for the ranks)")
        ->capture_default_str()
        ->each([&uo](const std::string&) { uo.tile_size_given = true; });
    unwrap->add_option("--cut-radius,--max-pair-distance", uo.max_pair_distance,
                       "R: longest cut between two residues (L1 pixels); farther ones join through others or ground")
        ->capture_default_str();
    unwrap->add_flag("!--no-far-reach", uo.far_reach,
                     "cut a cluster with nothing within R straight to the image side (no reach up to 4R for another "
                     "such cluster or a grounded one; docs/ARCHITECTURE.md 3.6)");
    unwrap->add_flag("!--no-cycle-correction", uo.correct_cycles,
                     "leave each pixel's cycles as the cuts give them (no correction from the median of its neighbours within two pixels; "
                     "docs/ARCHITECTURE.md 4.1)");
    std::string guide_window = "auto";
    unwrap->add_option("--guide-window", guide_window,
                       "N (odd): for a noisy phase (few looks), unwrap the argument of its N x N averaged phasors first, "
                       "then give each pixel the cycle that brings it nearest that (docs/ARCHITECTURE.md 2.1); 0: none; "
                       "auto: 5 when residues lie on more than 5 % of the plaquettes, else none (2.2)")
        ->capture_default_str()
        ->check([](const std::string& v) -> std::string {
            if (v == "auto") return "";
            if (v.empty() || v.size() > 2 || v.find_first_not_of("0123456789") != std::string::npos)
                return "must be auto or a number from 0 to " + std::to_string(tessera::kMaxGuideWindow);
            return "";
        });
    unwrap->add_option("--reference", reference, "ROW COL: pixel whose component gets k = 0 there")->expected(2)
        ->allow_extra_args(false);
    unwrap->add_option("--min-component-size", uo.min_component_size, "components smaller than this get label 0")
        ->capture_default_str();
    unwrap->add_option("--min-coherence", uo.min_coherence, "pixels below this coherence get label 0")
        ->capture_default_str();
    unwrap->add_option("--compress-phase", uo.compress_phase, "deflate level 0-9 of /unwrapped_phase (0 = none)")
        ->capture_default_str()
        ->check(CLI::Range(0, 9));
    unwrap->add_option("--quicklook", uo.quicklook,
                       "also write a PNG quicklook: unwrapped phase and components side by side (<= 1024 px)");
    unwrap->add_option("--geotiff", uo.geotiff, "also write the unwrapped phase as a GeoTIFF");
    unwrap->add_option("--conncomp-geotiff", uo.conncomp_geotiff,
                       "also write the connected components as a GeoTIFF (uint32, nodata 0)");
    unwrap->add_option("--dolphin", uo.dolphin,
                       "PREFIX: also write dolphin's PREFIX.unw.tif (float32, nodata 0) and PREFIX.unw.conncomp.tif "
                       "(uint16, nodata 65535)");
    unwrap->add_flag("--overviews", uo.overviews, "build internal overviews in the GeoTIFFs written");
    unwrap->add_flag("--save-cycles", uo.save_cycles, "write /cycles (int32 k)");
    unwrap->add_flag("--save-residues", uo.save_residues, "write /residues (int8 charges)");
    unwrap->add_flag("--save-cuts", uo.save_cuts, "write /branch_cuts (blocked-edge bits)");
    unwrap->add_flag("-q,--quiet", uo.quiet, "no progress or summary");
    unwrap->add_flag("--overwrite", uo.overwrite,
                     "replace output files that exist (regular files only; without it an existing output is an "
                     "error)");
    std::string backend_name = "auto";
    unwrap->add_option("--backend", backend_name, "auto (CUDA when a GPU is visible) | cpu | cuda")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    unwrap->add_option("--rank-grid", uo.rank_grid, "PxQ ranks over the tile grid (default: automatic)");
    unwrap->add_option("--device", uo.device, "CUDA device for every rank (default: the node-local rank's)");
    unwrap->add_flag("--share-gpus", uo.share_gpus, "allow more ranks than GPUs on a node");
    std::string memory_limit = "auto", gpu_memory_limit = "auto";
    unwrap->add_option("--memory-limit", memory_limit,
                       "host bytes a rank may hold (4G, 512M, ...); a larger window is taken in chunks (auto: what the "
                       "node has, shared by its ranks)")
        ->capture_default_str();
    unwrap->add_option("--gpu-memory-limit", gpu_memory_limit, "GPU bytes a rank may hold (auto: what is free on it)")
        ->capture_default_str();
    unwrap->add_option("--chunk-rows", uo.chunk_rows,
                       "take each rank's window in chunks of this many rows (whole tiles), whatever the limits");
    unwrap->add_option("--scratch", uo.scratch,
                       "a directory for a streamed run's scratch (13 bytes a pixel): the third pass reads it instead of "
                       "the inputs, without a second union-find (removed as the run ends)");

    auto* hologram = tessera::add_hologram_command(app);
    std::function<void()> run_background, run_clahe, run_plan;  // set by their subcommand's parse
    auto* background = tessera::add_background_command(app, run_background);
    auto* clahe = tessera::add_clahe_command(app, run_clahe);
    auto* plan = tessera::add_plan_command(app, run_plan);

    std::string synth_case = "topo", synth_size = "1024x1024", synth_dir;
    uint64_t synth_seed = 1;
    auto* synth = app.add_subcommand("synth", "write a synthetic scene with known truth as GeoTIFFs");
    synth->add_option("--case", synth_case, "bowl | topo | holes | fringes | all (these four) | noisy")->capture_default_str();
    synth->add_option("--size", synth_size, "ROWSxCOLS")->capture_default_str();
    synth->add_option("--seed", synth_seed, "random seed")->capture_default_str();
    synth->add_option("OUT_DIR", synth_dir, "output directory (created if missing)")->required();
    bool synth_overwrite = false;
    synth->add_flag("--overwrite", synth_overwrite,
                    "replace the scene's files if they exist (regular files only; without it an existing one is an error)");

    std::vector<std::string> info_paths;
    auto* info = app.add_subcommand("info", "describe tessera result files");
    info->add_option("FILE", info_paths, "result HDF5 file(s)")->required();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        MPI_Finalize();
        return rc;
    }

    // Every command ends through one error path (app/error_report.h, section 7).
    return tessera::run_reporting_errors([&]() -> int {
        if (*unwrap) {
            if (!reference.empty()) uo.reference = std::pair<int64_t, int64_t>{reference[0], reference[1]};
            uo.backend = tessera::resolve_backend(backend_name);
            uo.guide_window = guide_window == "auto" ? tessera::kGuideAuto : std::stoi(guide_window);
            if (memory_limit != "auto") uo.memory_limit = tessera::parse_bytes(memory_limit, "--memory-limit");
            if (gpu_memory_limit != "auto")
                uo.gpu_memory_limit = tessera::parse_bytes(gpu_memory_limit, "--gpu-memory-limit");
            uo.output = ub.output();
            const std::vector<std::string> inputs = tessera::expand_inputs(ub.input_items());
            if (tessera::unwrap_is_batch(ub, inputs, uo.output)) {
                // Many frames: spread over the ranks (holograms: and over each rank's lanes), each frame
                // unwrapped by one rank. The count is global: every rank finds it alike.
                const int conflicts = tessera::run_unwrap_batch(inputs, uo, uo.output, ub.frame_options());
                TESSERA_INVARIANT_EVERYWHERE(conflicts == 0, std::to_string(conflicts) + " union-find conflicts");
                return 0;
            }
            uo.input = inputs[0];
            tessera::use_own_partners(uo, MPI_COMM_WORLD);  // --coherence/--mask templates (app/partner_files.h)
            const tessera::UnwrapReport rep = tessera::run_unwrap(uo, MPI_COMM_WORLD);
            int rank = 0;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            if (!uo.quiet && rank == 0) print_report(uo, rep);
            if (rank == 0 && rep.labelled == 0)  // a result, but an empty one: said even with -q
                std::fprintf(stderr,
                             "tessera: warning: %s: no pixel was labelled (every component is smaller than "
                             "--min-component-size %lld, or below --min-coherence, or invalid)\n",
                             uo.input.c_str(), static_cast<long long>(uo.min_component_size));
            // 5 %: few-look noise, where cuts alone fence pockets; the synthetic kinds stay below 2 %.
            // Only when the guide was turned off: auto's census decided (docs/ARCHITECTURE.md 2.2).
            if (rank == 0 && (uo.guide_window == 0 || uo.guide_window == 1) && rep.valid > 0 && 20 * rep.residues > rep.valid)  // said even with -q
                std::fprintf(stderr,
                             "tessera: warning: %s: residues on %.1f %% of the valid pixels, a noisy phase: "
                             "--guide-window 5 may unwrap it much better (docs/ARCHITECTURE.md 2.1)\n",
                             uo.input.c_str(), 100.0 * static_cast<double>(rep.residues) / static_cast<double>(rep.valid));
            TESSERA_INVARIANT_EVERYWHERE(rep.conflicts == 0, std::to_string(rep.conflicts) + " union-find conflicts");
        } else if (*hologram) {
            tessera::run_hologram_command();
        } else if (*background) {
            run_background();
        } else if (*clahe) {
            run_clahe();
        } else if (*plan) {
            run_plan();
        } else if (*synth) {
            const auto [rows, cols] = parse_size(synth_size);
            std::vector<std::string> cases =
                synth_case == "all" ? tessera::synth_case_names() : std::vector<std::string>{synth_case};
            std::vector<std::string> outs, wrapped;
            for (const auto& c : cases)
                for (const std::string& f : tessera::scene_files(c, synth_dir)) outs.push_back(f);
            std::filesystem::create_directories(synth_dir);
            // As every command's outputs (issue 14): regular files only, an existing one only with
            // --overwrite, all of them in place together or none.
            tessera::check_outputs(outs, {}, synth_overwrite);
            tessera::OutputSet outputs(synth_overwrite);
            {
                tessera::CollectOutputs collect(outputs);
                for (const auto& c : cases) wrapped.push_back(tessera::write_scene(tessera::make_scene(c, rows, cols, synth_seed), synth_dir));
            }
            outputs.commit();
            for (const std::string& w : wrapped) std::printf("%s\n", w.c_str());
        } else if (*info) {
            return run_info(info_paths) ? 2 : 0;
        }
        return 0;
    });
}
