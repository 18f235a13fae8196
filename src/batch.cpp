// Batches of frames over MPI ranks (issue item 4); see batch.h.
#include "src/batch.h"

#include <CLI/CLI.hpp>
#include <glob.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <system_error>

#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/raster_reader.h"
#include "src/hologram_command.h"

namespace tessera {

namespace fs = std::filesystem;

std::vector<std::string> expand_inputs(const std::vector<std::string>& items) {
    if (items.empty()) throw InputError::everywhere("no input given");
    std::vector<std::string> out;
    std::set<std::string> seen;
    auto add = [&](const std::string& s) {
        if (seen.insert(fs::path(s).lexically_normal().string()).second) out.push_back(s);
    };
    for (const std::string& item : items) {
        std::error_code ec;
        if (item.find_first_of("*?[") == std::string::npos || fs::exists(item, ec)) {
            add(item);
            continue;
        }
        glob_t g{};
        const int rc = glob(item.c_str(), 0, nullptr, &g);
        if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
            globfree(&g);
            throw InputError::everywhere(item + ": no file matches this pattern");
        }
        if (rc != 0) {
            globfree(&g);
            throw InputError::everywhere(item + ": cannot expand this pattern (" +
                                         (rc == GLOB_NOSPACE ? "out of memory" : "read error") + ")");
        }
        for (size_t k = 0; k < g.gl_pathc; ++k) add(g.gl_pathv[k]);  // sorted by glob(3)
        globfree(&g);
    }
    return out;
}

std::vector<std::string> batch_outputs(const std::vector<std::string>& inputs, const std::string& out,
                                       const std::string& suffix) {
    std::error_code ec;
    if (inputs.size() == 1 && !fs::is_directory(out, ec)) return {out};
    std::vector<std::string> r;
    std::set<std::string> names;
    for (const std::string& in : inputs) {
        const std::string name = fs::path(in).stem().string() + suffix;
        const std::string path = (fs::path(out) / name).string();
        if (!names.insert(name).second)
            throw InputError::everywhere(path + ": two inputs would write this file (same file name stem; "
                                                "rename one, e.g. " + in + ")");
        r.push_back(path);
    }
    return r;
}

void agree_on_first_error(MPI_Comm comm, int64_t bad_index, const std::string& message) {
    int rank = 0, P = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    const int64_t mine = bad_index < 0 ? std::numeric_limits<int64_t>::max() : bad_index;
    int64_t lowest = 0;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT64_T, MPI_MIN, comm);
    if (lowest == std::numeric_limits<int64_t>::max()) return;
    const int candidate = mine == lowest ? rank : P;
    int root = 0;
    MPI_Allreduce(&candidate, &root, 1, MPI_INT, MPI_MIN, comm);
    std::string msg = rank == root ? message : std::string();
    int64_t len = static_cast<int64_t>(msg.size());
    MPI_Bcast(&len, 1, MPI_INT64_T, root, comm);
    msg.resize(static_cast<size_t>(len));
    MPI_Bcast(msg.data(), static_cast<int>(len), MPI_CHAR, root, comm);
    throw InputError::everywhere(msg);
}

void prepare_output_directory(MPI_Comm comm, const std::string& dir) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::string msg;
    if (rank == 0) {
        std::error_code ec;
        if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
            msg = dir + ": output for several inputs must be a directory, and this is a file";
        else if (!fs::exists(dir, ec) && (fs::create_directories(dir, ec), ec))
            msg = dir + ": cannot create the output directory (" + ec.message() + ")";
        else if (access(dir.c_str(), W_OK | X_OK) != 0)
            msg = dir + ": output directory is not writable";
    }
    agree_on_first_error(comm, msg.empty() ? -1 : 0, msg);
}

namespace {

// Removes a temporary file when leaving the scope, however it is left.
struct RemoveOnExit {
    std::string path;
    ~RemoveOnExit() {
        if (!path.empty()) {
            std::error_code ec;
            fs::remove(path, ec);
            fs::remove(path + ".tmp", ec);
        }
    }
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
    return s;
}

constexpr int kRec = 7;  // rows cols residues components conflicts hologram_seconds seconds

}  // namespace

int run_unwrap_batch(const std::vector<std::string>& inputs, const UnwrapOptions& base, const std::string& out,
                     bool from_hologram, const HologramParams& hologram, const std::string& hologram_reference,
                     MPI_Comm comm, std::vector<UnwrapFrameReport>* reports) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    int rank = 0, P = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    if (inputs.empty()) throw InputError::everywhere("no input given");
    const auto N = static_cast<int64_t>(inputs.size());
    const std::vector<std::string> outs = batch_outputs(inputs, out, ".h5");
    std::error_code ec;
    const bool dir_mode = N > 1 || fs::is_directory(out, ec);

    // Checks before any work (section 7): options and outputs (index 0), each rank's frames.
    std::unique_ptr<HologramDemodulator> demod;
    {
        int64_t bad = -1;
        std::string msg;
        try {
            if (!base.geotiff.empty() && N > 1)
                throw InputError::everywhere(base.geotiff + ": --geotiff names one file; it cannot be used with " +
                                             std::to_string(N) + " inputs");
            if (rank == 0) {
                if (!dir_mode) check_output_directory(out);
                if (!base.geotiff.empty()) check_output_directory(base.geotiff);
                if (!base.coherence.empty()) RasterReader(base.coherence, 1);
                if (!base.mask.empty()) RasterReader(base.mask, 1);
            }
            // The unwrap's backend demodulates too (kCuda: on the current or --device GPU).
            if (from_hologram)
                demod = std::make_unique<HologramDemodulator>(hologram, hologram_reference, base.band, base.backend,
                                                              base.device);
        } catch (const InputError& e) {
            bad = 0;
            msg = e.what();
        }
        for (int64_t i = rank; bad < 0 && i < N; i += P) {
            try {
                RasterReader r(inputs[static_cast<size_t>(i)], base.band);
                if (demod) demod->check(r.path(), r.info());
            } catch (const InputError& e) {
                bad = i + 1;
                msg = e.what();
            }
        }
        agree_on_first_error(comm, bad, msg);
    }
    if (dir_mode) prepare_output_directory(comm, out);  // created only for valid inputs

    std::vector<double> rec(static_cast<size_t>(N) * kRec, 0.0);
    int64_t first_failed = -1, failed = 0, conflicts = 0;
    std::string first_msg;
    HologramDemodulator::Frame frame;
    for (int64_t i = rank; i < N; i += P) {
        const auto tf = clock::now();
        const std::string& in = inputs[static_cast<size_t>(i)];
        UnwrapOptions opt = base;
        opt.output = outs[static_cast<size_t>(i)];
        opt.rank_grid.clear();  // one rank per frame
        opt.quiet = true;
        opt.input = in;
        RemoveOnExit tmp;
        double holo_s = 0;
        try {
            if (demod) {
                // Demodulated phase -> a temporary uncompressed GeoTIFF next to the output -> run_unwrap.
                tmp.path = opt.output + ".wrapped.tmp.tif";
                demod->run(in, frame, false);
                GeoRef geo;
                geo.has_geotransform = frame.info.has_geotransform;
                geo.geotransform = frame.info.geotransform;
                geo.projection_wkt = frame.info.projection_wkt;
                geo.compress = false;
                write_geotiff_f32(tmp.path, frame.info.rows, frame.info.cols, frame.phase.data(), geo, std::nullopt);
                opt.input = tmp.path;
                opt.band = 1;
                holo_s = std::chrono::duration<double>(clock::now() - tf).count();
            }
            const UnwrapReport r = run_unwrap(opt, MPI_COMM_SELF);
            double* x = &rec[static_cast<size_t>(i) * kRec];
            x[0] = static_cast<double>(r.rows);
            x[1] = static_cast<double>(r.cols);
            x[2] = static_cast<double>(r.residues);
            x[3] = static_cast<double>(r.components);
            x[4] = static_cast<double>(r.conflicts);
            x[5] = holo_s;
            conflicts += r.conflicts;
        } catch (const InputError& e) {
            // Name the hologram, not the temporary phase file.
            const std::string m = tmp.path.empty() ? e.what() : replace_all(e.what(), tmp.path, in + " (demodulated)");
            if (N > 1) std::fprintf(stderr, "tessera: frame %lld failed: %s\n", static_cast<long long>(i), m.c_str());
            if (first_failed < 0) {
                first_failed = i;
                first_msg = m;
            }
            ++failed;
            continue;
        }
        rec[static_cast<size_t>(i) * kRec + 6] = std::chrono::duration<double>(clock::now() - tf).count();
    }
    int64_t total_failed = 0;
    MPI_Allreduce(&failed, &total_failed, 1, MPI_INT64_T, MPI_SUM, comm);
    if (total_failed > 0)
        agree_on_first_error(comm, first_failed,
                             total_failed == 1 ? first_msg
                                               : std::to_string(total_failed) + " of " + std::to_string(N) +
                                                     " frames failed; the first: " + first_msg);
    int64_t total_conflicts = 0;
    MPI_Allreduce(&conflicts, &total_conflicts, 1, MPI_INT64_T, MPI_SUM, comm);
    std::vector<double> all(rec.size(), 0.0);
    MPI_Reduce(rec.data(), all.data(), static_cast<int>(rec.size()), MPI_DOUBLE, MPI_SUM, 0, comm);
    double wall = std::chrono::duration<double>(clock::now() - t0).count();
    MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, comm);

    if (rank == 0) {
        std::vector<UnwrapFrameReport> fr;
        for (int64_t i = 0; i < N; ++i) {
            const double* x = &all[static_cast<size_t>(i) * kRec];
            UnwrapFrameReport f;
            f.input = inputs[static_cast<size_t>(i)];
            f.output = outs[static_cast<size_t>(i)];
            f.rows = static_cast<int64_t>(x[0]);
            f.cols = static_cast<int64_t>(x[1]);
            f.residues = static_cast<int64_t>(x[2]);
            f.components = static_cast<int64_t>(x[3]);
            f.conflicts = static_cast<int64_t>(x[4]);
            f.hologram_seconds = x[5];
            f.seconds = x[6];
            fr.push_back(f);
        }
        if (!base.quiet) {
            std::printf("tessera unwrap: %lld frame(s)%s on %d rank(s), one rank per frame, %.3f s, %.2f frames/s\n",
                        static_cast<long long>(N), from_hologram ? " from holograms" : "", P, wall,
                        static_cast<double>(N) / wall);
            for (const UnwrapFrameReport& f : fr) {
                std::printf("  %s -> %s: %lldx%lld, residues %lld, components %lld", f.input.c_str(),
                            f.output.c_str(), static_cast<long long>(f.cols), static_cast<long long>(f.rows),
                            static_cast<long long>(f.residues), static_cast<long long>(f.components));
                if (from_hologram) std::printf(", hologram %.3f s", f.hologram_seconds);
                std::printf(", %.3f s\n", f.seconds);
            }
        }
        if (reports) *reports = std::move(fr);
    }
    return static_cast<int>(std::min<int64_t>(total_conflicts, std::numeric_limits<int>::max()));
}

HologramParams UnwrapBatchCli::hologram_params() const {
    HologramParams p;
    if (carrier.size() == 2) p.carrier = std::pair<int64_t, int64_t>{carrier[0], carrier[1]};
    p.dc_exclusion = dc_radius;
    p.filter_radius = filter_radius;
    p.window = parse_window(window);
    return p;
}

void add_unwrap_batch_options(CLI::App* unwrap, UnwrapBatchCli& cli) {
    unwrap->add_option("FILES", cli.files,
                       "IN... OUT: wrapped phase (float32/64) or complex interferogram rasters (or holograms with "
                       "--from-hologram) and/or glob patterns (quoted: 'frames/*.tif'), then the output: OUT.h5 for "
                       "one input, a directory for several (<stem>.h5 each, created if missing)")
        ->required()
        ->expected(2, -1);
    auto* fh = unwrap->add_flag("--from-hologram", cli.from_hologram,
                                "IN are off-axis holograms: demodulate each (as `tessera hologram`), then unwrap");
    unwrap->add_option("--carrier", cli.carrier, "with --from-hologram: ROW COL of the +1 order (default: detected)")
        ->expected(2)
        ->needs(fh);
    unwrap->add_option("--dc-radius", cli.dc_radius, "with --from-hologram: DC exclusion radius in bins")->needs(fh);
    unwrap->add_option("--filter-radius", cli.filter_radius, "with --from-hologram: sideband filter radius in bins")
        ->needs(fh);
    unwrap->add_option("--window", cli.window, "with --from-hologram: sideband filter circular | hann")
        ->capture_default_str()
        ->check(CLI::IsMember({"circular", "hann"}))
        ->needs(fh);
    unwrap->add_option("--hologram-reference", cli.hologram_reference,
                       "with --from-hologram: reference hologram (no sample) whose field is divided out")
        ->needs(fh);
}

bool unwrap_is_batch(const UnwrapBatchCli& cli, const std::vector<std::string>& expanded, const std::string& out) {
    std::error_code ec;
    return expanded.size() > 1 || cli.from_hologram || fs::is_directory(out, ec);
}

}  // namespace tessera
