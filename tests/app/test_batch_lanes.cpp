// Batches on frame lanes (issue 6 item 4): `tessera unwrap --from-hologram` and `tessera hologram`
// run each rank's frames through run_frames. Every frame must get the bits of the one-by-one
// route that existed before the lanes (HologramDemodulator -> phase GeoTIFF -> run_unwrap alone),
// whatever the lanes, the ranks (also run under mpirun -np 2 and 3: tests/CMakeLists.txt) or the
// frame sizes; a bad frame fails alone, with one line naming it and no output.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "io/raster_reader.h"
#include "app/batch.h"
#include "app/hologram_command.h"
#include "support/cli.h"
#include "support/hologram_scene.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::read_dataset;

int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int world_size() {
    int p = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    return p;
}

// A folder every rank sees (rank 0's pid in its name): made by rank 0, removed with the object.
class SharedDir {
public:
    explicit SharedDir(const std::string& tag) {
        int pid = static_cast<int>(getpid());
        MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
        path_ = fs::temp_directory_path() / ("tessera_" + tag + "_" + std::to_string(pid));
        if (world_rank() == 0) {
            fs::remove_all(path_);
            fs::create_directories(path_);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    ~SharedDir() {
        MPI_Barrier(MPI_COMM_WORLD);
        if (world_rank() == 0) fs::remove_all(path_);
    }
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    fs::path path_;
};

void write_f32(const std::string& path, int64_t rows, int64_t cols, const std::vector<float>& v) {
    GeoRef geo;
    geo.compress = false;
    write_geotiff_f32(path, rows, cols, v.data(), geo, std::nullopt);
}

std::vector<float> read_f32(const std::string& path) {
    RasterReader r(path, 1);
    std::vector<float> v(static_cast<size_t>(r.info().rows * r.info().cols));
    r.read_float(Window{0, 0, r.info().rows, r.info().cols}, v.data(), r.info().cols);
    return v;
}

// --from-hologram on `lanes` lanes.
FrameBatchOptions holograms(int lanes, const HologramParams& hp = {}) {
    FrameBatchOptions f;
    f.from_hologram = true;
    f.hologram = hp;
    f.lanes = lanes;
    return f;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Frame k: a bump of several cycles (it must be unwrapped), noisy enough for residues in
// some frames; even frames 96x128, odd ones 80x100 (two size groups on every rank count).
testing::SynthHologram frame(int k) {
    testing::HologramSpec s;
    s.H = k % 2 ? 80 : 96;
    s.W = k % 2 ? 100 : 128;
    s.bump = 9.0 + 2.0 * k;
    s.bump_sigma = static_cast<double>(std::min(s.H, s.W)) / 4;
    s.noise = k % 3 == 1 ? 4.0 : 0.3;
    s.seed = 40 + static_cast<uint64_t>(k);
    return testing::make_hologram(s);
}

// Rank 0 writes frames 0..n-1 as GeoTIFFs (h<k>.tif); every rank gets their paths.
std::vector<std::string> write_frames(const SharedDir& dir, int n) {
    std::vector<std::string> paths;
    for (int k = 0; k < n; ++k) {
        paths.push_back(dir / ("h" + std::to_string(k) + ".tif"));
        if (world_rank() == 0) {
            const testing::SynthHologram h = frame(k);
            write_f32(paths.back(), h.H, h.W, h.intensity);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return paths;
}

// The one-by-one route of `tessera unwrap --from-hologram` before the lanes: demodulated alone,
// through a phase GeoTIFF, unwrapped by run_unwrap on one rank. Returns its residue count.
int64_t unwrap_alone(const std::string& hologram, const HologramParams& hp, const UnwrapOptions& base,
                     const std::string& phase_tif, const std::string& out) {
    HologramDemodulator demod(hp, "", 1);
    HologramDemodulator::Frame f;
    demod.run(hologram, f, false);
    write_f32(phase_tif, f.info.rows, f.info.cols, f.phase);
    UnwrapOptions one = base;
    one.input = phase_tif;
    one.output = out;
    one.overwrite = true;  // called again on one path
    return run_unwrap(one, MPI_COMM_SELF).residues;
}

// Five frames of two sizes, lanes 1 and 3, on whatever ranks the test runs: every frame's
// datasets equal the one-by-one route's bit for bit, and the files name the hologram.
TEST(BatchLanes, UnwrapEqualsOneByOneForAnyLanesAndRanks) {
    SharedDir dir("batch_lanes_unwrap");
    const int n = 5;
    const std::vector<std::string> inputs = write_frames(dir, n);
    UnwrapOptions base;
    base.quiet = true;
    base.min_component_size = 10;
    base.tile_size = 40;  // several tiles; the result does not depend on it
    HologramParams hp;
    hp.window = SidebandWindow::kHann;
    std::vector<int64_t> residues(n, 0);
    if (world_rank() == 0)
        for (int k = 0; k < n; ++k)
            residues[static_cast<size_t>(k)] =
                unwrap_alone(inputs[static_cast<size_t>(k)], hp, base, dir / ("alone" + std::to_string(k) + ".tif"),
                             dir / ("alone" + std::to_string(k) + ".h5"));
    if (world_rank() == 0) {  // the frames exercise the cuts, not only a residue-free integration
        EXPECT_GT(*std::max_element(residues.begin(), residues.end()), 0);
    }
    for (int lanes : {1, 3}) {
        const std::string out = dir / ("lanes" + std::to_string(lanes));
        std::vector<UnwrapFrameReport> reps;
        ASSERT_EQ(run_unwrap_batch(inputs, base, out, holograms(lanes, hp),
                                   MPI_COMM_WORLD, &reps),
                  0);
        if (world_rank() != 0) continue;
        ASSERT_EQ(reps.size(), static_cast<size_t>(n));
        for (int k = 0; k < n; ++k) {
            const std::string a = dir / ("alone" + std::to_string(k) + ".h5");
            const std::string b = out + "/h" + std::to_string(k) + ".h5";
            const auto u = read_dataset<float>(b, "unwrapped_phase");
            EXPECT_TRUE(same_bits(u, read_dataset<float>(a, "unwrapped_phase"))) << "lanes " << lanes << " frame " << k;
            EXPECT_EQ(read_dataset<uint32_t>(b, "connected_components"), read_dataset<uint32_t>(a, "connected_components"))
                << "lanes " << lanes << " frame " << k;
            EXPECT_EQ(reps[static_cast<size_t>(k)].residues, residues[static_cast<size_t>(k)]) << "frame " << k;
            EXPECT_EQ(reps[static_cast<size_t>(k)].rows, k % 2 ? 80 : 96);
            // The bump (9-17 rad) was unwrapped: far more than 2 pi between its top and the border.
            EXPECT_GT(*std::max_element(u.begin(), u.end()) - u[0], 7.0) << "frame " << k;
            const std::string described = describe_result(b);
            EXPECT_NE(described.find(inputs[static_cast<size_t>(k)]), std::string::npos) << described;
        }
        std::vector<std::string> left;
        for (const auto& e : fs::directory_iterator(out)) left.push_back(e.path().filename().string());
        std::sort(left.begin(), left.end());
        EXPECT_EQ(left, (std::vector<std::string>{"h0.h5", "h1.h5", "h2.h5", "h3.h5", "h4.h5"}));  // no .tmp
    }
}

// `tessera hologram` on lanes 1 and 3: phase and amplitude GeoTIFFs with the bits of
// HologramDemodulator's one-frame-at-a-time run, for both sizes; carrier and radius reported.
TEST(BatchLanes, HologramEqualsOneByOneForAnyLanesAndRanks) {
    SharedDir dir("batch_lanes_holo");
    const int n = 5;
    const std::vector<std::string> inputs = write_frames(dir, n);
    for (int lanes : {1, 3}) {
        HologramRunOptions o;
        o.inputs = inputs;
        o.output = dir / ("lanes" + std::to_string(lanes));
        o.save_field = true;
        o.quiet = true;
        o.lanes = lanes;
        const HologramRunReport rep = run_hologram(o, MPI_COMM_WORLD);
        if (world_rank() != 0) continue;
        ASSERT_EQ(rep.frames.size(), static_cast<size_t>(n));
        EXPECT_EQ(rep.lanes, lanes);
        HologramDemodulator demod(o.params, "", 1);
        HologramDemodulator::Frame f;
        for (int k = 0; k < n; ++k) {
            demod.run(inputs[static_cast<size_t>(k)], f, true);
            const std::string stem = o.output + "/h" + std::to_string(k);
            EXPECT_TRUE(same_bits(read_f32(stem + "_phase.tif"), f.phase)) << "lanes " << lanes << " frame " << k;
            EXPECT_TRUE(same_bits(read_f32(stem + "_amplitude.tif"), f.amplitude)) << "lanes " << lanes << " frame " << k;
            const HologramFrameReport& r = rep.frames[static_cast<size_t>(k)];
            EXPECT_EQ(r.carrier.row, f.carrier.row);
            EXPECT_EQ(r.carrier.col, f.carrier.col);
            EXPECT_EQ(r.filter_radius, f.filter_radius);
            EXPECT_EQ(r.rows, f.info.rows);
        }
    }
}

// Frame 2 is cut short (its header reads, its data does not): the batch fails with one line
// naming it, it leaves no output (nor a temporary file), and the other frames are complete.
TEST(BatchLanes, UnreadableFrameFailsAlone) {
    SharedDir dir("batch_lanes_bad");
    const std::vector<std::string> inputs = write_frames(dir, 5);
    if (world_rank() == 0) fs::resize_file(inputs[2], fs::file_size(inputs[2]) / 2);
    MPI_Barrier(MPI_COMM_WORLD);
    UnwrapOptions base;
    base.quiet = true;
    base.min_component_size = 10;
    for (int lanes : {1, 3}) {
        const std::string out = dir / ("u" + std::to_string(lanes));
        try {
            run_unwrap_batch(inputs, base, out, holograms(lanes));
            ADD_FAILURE() << "no error";
        } catch (const InputError& e) {
            EXPECT_TRUE(e.is_everywhere());
            const std::string m = e.what();
            EXPECT_EQ(m.find(inputs[2] + ": read failed"), 0u) << m;  // one frame failed: its line alone
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
        }
        HologramRunOptions o;
        o.inputs = inputs;
        o.output = dir / ("p" + std::to_string(lanes));
        o.quiet = true;
        o.lanes = lanes;
        EXPECT_THROW(run_hologram(o, MPI_COMM_WORLD), InputError);
        if (world_rank() != 0) continue;
        for (int k = 0; k < 5; ++k) {
            EXPECT_EQ(fs::exists(out + "/h" + std::to_string(k) + ".h5"), k != 2) << "lanes " << lanes << " frame " << k;
            EXPECT_EQ(fs::exists(o.output + "/h" + std::to_string(k) + "_phase.tif"), k != 2) << "frame " << k;
        }
        for (const auto& e : fs::directory_iterator(out))
            EXPECT_EQ(e.path().extension(), ".h5") << e.path();  // nothing half-written
    }
}

// A frame whose demodulation is refused while the batch runs (no frequency outside the DC
// radius in the small frame's spectrum) fails with its file and the reason; the others complete.
TEST(BatchLanes, FrameRefusedByTheChainFailsAlone) {
    SharedDir dir("batch_lanes_chain");
    std::vector<std::string> inputs;
    for (int k = 0; k < 4; ++k) {
        testing::HologramSpec s;
        s.H = s.W = k == 1 ? 64 : 256;  // carrier 72 bins from DC at 256; every bin within 46 at 64
        s.seed = 7 + static_cast<uint64_t>(k);
        inputs.push_back(dir / ("c" + std::to_string(k) + ".tif"));
        if (world_rank() == 0) {
            const testing::SynthHologram h = testing::make_hologram(s);
            write_f32(inputs.back(), h.H, h.W, h.intensity);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    UnwrapOptions base;
    base.quiet = true;
    HologramParams hp;
    hp.dc_exclusion = 50;
    try {
        run_unwrap_batch(inputs, base, dir / "out", holograms(2, hp));
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.find(inputs[1] + ": DC exclusion radius"), 0u) << m;
    }
    if (world_rank() == 0) {
        for (int k = 0; k < 4; ++k) EXPECT_EQ(fs::exists(dir / ("out/c" + std::to_string(k) + ".h5")), k != 1) << k;
    }
}

// Options the lanes do not provide take the one-frame-at-a-time path and are honoured.
TEST(BatchLanes, OptionsLanesCannotHonourTakeThePerFramePath) {
    UnwrapOptions base;
    const FrameBatchOptions holo = holograms(0);
    EXPECT_EQ(lanes_unsupported(base, holo), "");
    EXPECT_EQ(lanes_unsupported(base, FrameBatchOptions{}), "wrapped-phase inputs");
    UnwrapOptions guided;
    guided.guide_window = 5;
    EXPECT_EQ(lanes_unsupported(guided, holo), "--guide-window");
    base.save_cuts = true;
    EXPECT_EQ(lanes_unsupported(base, holo), "--save-cuts");
    SharedDir dir("batch_lanes_cuts");
    const std::vector<std::string> inputs = write_frames(dir, 2);
    base.quiet = true;
    base.min_component_size = 10;
    ASSERT_EQ(run_unwrap_batch(inputs, base, dir / "out", holograms(3)), 0);
    for (int k = 0; k < 2 && world_rank() == 0; ++k) {
        const std::string b = dir / ("out/h" + std::to_string(k) + ".h5");
        unwrap_alone(inputs[static_cast<size_t>(k)], HologramParams{}, base, dir / "alone.tif", dir / "alone.h5");
        EXPECT_EQ(read_dataset<uint8_t>(b, "branch_cuts"), read_dataset<uint8_t>(dir / "alone.h5", "branch_cuts"));
        EXPECT_TRUE(same_bits(read_dataset<float>(b, "unwrapped_phase"),
                              read_dataset<float>(dir / "alone.h5", "unwrapped_phase")));
    }
}

// The command line: --lanes on both commands, in --help, and 0 refused.
TEST(BatchLanes, LanesOption) {
    if (world_size() > 1) GTEST_SKIP() << "runs the tessera executable: one rank only";
    SharedDir dir("batch_lanes_cli");
    const std::vector<std::string> inputs = write_frames(dir, 3);
    const auto r = testing::run_tessera("unwrap --from-hologram --backend cpu --lanes 2 " + inputs[0] + " " +
                                        inputs[1] + " " + inputs[2] + " " + (dir / "out"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("2 lane(s) per rank"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(dir / "out/h2.h5"));
    const auto h = testing::run_tessera("hologram --backend cpu --lanes 2 -q " + inputs[0] + " " + inputs[1] + " " +
                                        (dir / "ph"));
    EXPECT_EQ(h.exit_code, 0) << h.err;
    EXPECT_TRUE(fs::exists(dir / "ph/h1_phase.tif"));
    EXPECT_NE(testing::run_tessera("unwrap --from-hologram --lanes 0 " + inputs[0] + " " + (dir / "o.h5")).exit_code, 0);
    EXPECT_NE(testing::run_tessera("unwrap --help").out.find("--lanes"), std::string::npos);
    EXPECT_NE(testing::run_tessera("hologram --help").out.find("--lanes"), std::string::npos);
}

}  // namespace
}  // namespace tessera
