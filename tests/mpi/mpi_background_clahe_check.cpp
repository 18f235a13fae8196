// Multi-rank check of the background fit and of CLAHE (run under mpirun -np N, any N >= 1).
// Every rank owns a window of an irregular split of the image (cuts at odd places, not
// aligned with anything; with 3 ranks one rank owns nothing and still takes part in
// every collective). Rank 0 also computes everything alone (MPI_COMM_SELF, one window)
// and the results must be bit-identical:
//   1. fit_surface coefficients (degrees 1, 3, 6; with holes and a background mask) and
//      the subtracted image;
//   2. clahe: float input 8-bit and 16-bit outputs, uint16 input, tile grids that do not
//      divide the image;
//   3. the commands: run_background (GeoTIFF and HDF5 out) and run_clahe (PNG and
//      GeoTIFF out) with every rank vs rank 0 alone, compared pixel by pixel.
// Exit code 0 when all is well, 1 otherwise (every rank).
//
// Not a GoogleTest file (its name is not test_*.cpp): it has its own main and links
// tessera_lib. CTest lines (tests/CMakeLists.txt):
//   add_executable(mpi_background_clahe_check ${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_background_clahe_check.cpp)
//   target_include_directories(mpi_background_clahe_check PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
//   target_link_libraries(mpi_background_clahe_check PRIVATE tessera_lib)
//   foreach(np 1 2 3 4)
//     add_test(NAME mpi_background_clahe_np${np}
//              COMMAND ${MPIEXEC_BIN} --oversubscribe -np ${np} -x OMP_NUM_THREADS=1
//                      $<TARGET_FILE:mpi_background_clahe_check>)
//     set_tests_properties(mpi_background_clahe_np${np} PROPERTIES LABELS mpi TIMEOUT 120 RESOURCE_LOCK mpi
//                          ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
//   endforeach()
// By hand (after building tessera_lib into BUILD), from the repository root:
//   mpicxx -std=c++20 -O2 -fopenmp -ffp-contract=off -DOMPI_SKIP_MPICXX=1 -I. $(gdal-config --cflags)
//          $(pkg-config --cflags hdf5-openmpi) tests/mpi/mpi_background_clahe_check.cpp BUILD/libtessera_lib.a
//          $(gdal-config --libs) $(pkg-config --libs hdf5-openmpi fftw3f) -lz -o mpi_background_clahe_check
//   mpirun -np 3 ./mpi_background_clahe_check [scratch-directory]
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/raster_reader.h"
#include "kernels/background.h"
#include "kernels/clahe.h"
#include "partition/clahe.h"
#include "partition/comm.h"
#include "partition/surface_fit.h"
#include "app/background_command.h"
#include "app/clahe_command.h"

using namespace tessera;

namespace {

int g_rank = 0, g_size = 1, g_failures = 0;

void fail(const std::string& what) {
    std::fprintf(stderr, "mpi_background_clahe_check: rank %d: FAIL: %s\n", g_rank, what.c_str());
    ++g_failures;
}

constexpr int64_t H = 613, W = 457;

// This rank's window of an irregular split.
Window window_of(int rank, int size) {
    if (size == 1) return Window{0, 0, H, W};
    if (size == 2) return rank == 0 ? Window{0, 0, H, 201} : Window{0, 201, H, W - 201};
    if (size == 3) {
        if (rank == 2) return Window{};  // owns nothing
        return rank == 0 ? Window{0, 0, 299, W} : Window{299, 0, H - 299, W};
    }
    // size >= 4: a 2 x 2 grid over ranks 0..3 (cuts at row 377, col 123); ranks 4.. own nothing.
    const int64_t rc = 377, cc = 123;
    switch (rank) {
        case 0: return Window{0, 0, rc, cc};
        case 1: return Window{0, cc, rc, W - cc};
        case 2: return Window{rc, 0, H - rc, cc};
        case 3: return Window{rc, cc, H - rc, W - cc};
        default: return Window{};
    }
}

struct Data {
    std::vector<float> z, amp;
    std::vector<uint16_t> u16;
    std::vector<uint8_t> valid, mask;
};

Data make_data() {
    Data d;
    const size_t n = static_cast<size_t>(H * W);
    d.z.resize(n);
    d.amp.resize(n);
    d.u16.resize(n);
    d.valid.assign(n, 1);
    d.mask.assign(n, 1);
    std::mt19937_64 rng(2024);
    std::normal_distribution<double> noise(0.0, 0.2);
    std::gamma_distribution<double> speckle(1.2, 1.5);
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            const size_t k = static_cast<size_t>(r * W + c);
            const double x = surface_coord(c, W), y = surface_coord(r, H);
            d.z[k] = static_cast<float>(40.0 * x - 25.0 * y + 12.0 * x * x * y - 7.0 * y * y * y +
                                        3.0 * std::sin(0.05 * r) + noise(rng));
            d.amp[k] = static_cast<float>(speckle(rng) * (1.5 + std::cos(0.02 * c)));
            d.u16[k] = static_cast<uint16_t>(std::min(65535.0, d.amp[k] * 5000.0));
            if ((r - 300) * (r - 300) + (c - 200) * (c - 200) < 40 * 40) d.valid[k] = 0;  // a hole
            if (r > 500 && c > 350) d.mask[k] = 0;                                      // not background
            if (k % 97 == 0) d.amp[k] = std::nanf("");
        }
    return d;
}

template <class T>
std::vector<T> crop(const std::vector<T>& a, const Window& w) {
    std::vector<T> out(static_cast<size_t>(w.size()));
    for (int64_t r = 0; r < w.rows; ++r)
        std::memcpy(out.data() + r * w.cols, a.data() + (w.row0 + r) * W + w.col0, static_cast<size_t>(w.cols) * sizeof(T));
    return out;
}

// Rank 0: the whole image assembled from every rank's window.
template <class T>
std::vector<T> assemble(Comm& comm, const std::vector<T>& mine, const Window& own) {
    const std::vector<std::vector<T>> parts = comm.gatherv(mine, 0);
    const std::vector<std::vector<Window>> wins = comm.gatherv(std::vector<Window>{own}, 0);
    std::vector<T> out;
    if (g_rank != 0) return out;
    out.resize(static_cast<size_t>(H * W));
    for (size_t s = 0; s < parts.size(); ++s) {
        const Window& w = wins[s][0];
        for (int64_t r = 0; r < w.rows; ++r)
            std::memcpy(out.data() + (w.row0 + r) * W + w.col0, parts[s].data() + r * w.cols,
                        static_cast<size_t>(w.cols) * sizeof(T));
    }
    return out;
}

template <class T>
void expect_bits(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
    if (a.size() != b.size()) return fail(what + ": sizes differ");
    if (std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) != 0) {
        size_t i = 0;
        while (std::memcmp(&a[i], &b[i], sizeof(T)) == 0) ++i;
        fail(what + ": differs at element " + std::to_string(i));
    }
}

void check_background(const Data& d, Comm& world, const Window& own) {
    const std::vector<float> z = crop(d.z, own);
    const std::vector<uint8_t> v = crop(d.valid, own), m = crop(d.mask, own);
    for (int degree : {1, 3, 6})
        for (bool masked : {false, true}) {
            const std::string tag = "background degree " + std::to_string(degree) + (masked ? " masked" : "");
            const SurfaceFit f =
                fit_surface(z.data(), v.data(), masked ? m.data() : nullptr, own, own.cols, H, W, degree, world);
            // Rank 0's single-rank fit, broadcast: every rank must have the same bits.
            std::vector<double> ref(f.coeffs.size());
            std::vector<float> whole;
            if (g_rank == 0) {
                Comm self(MPI_COMM_SELF);
                const SurfaceFit s = fit_surface(d.z.data(), d.valid.data(), masked ? d.mask.data() : nullptr,
                                                 Window{0, 0, H, W}, W, H, W, degree, self);
                ref = s.coeffs;
                whole = d.z;
                subtract_surface(whole.data(), d.valid.data(), nullptr, Window{0, 0, H, W}, W, H, W, s);
            }
            MPI_Bcast(ref.data(), static_cast<int>(ref.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
            expect_bits(f.coeffs, ref, tag + " coefficients");
            std::vector<float> mine = z;
            subtract_surface(mine.data(), v.data(), nullptr, own, own.cols, H, W, f);
            const std::vector<float> all = assemble(world, mine, own);
            if (g_rank == 0) expect_bits(all, whole, tag + " subtracted image");
        }
}

template <class T, class O>
void check_clahe_case(const std::vector<T>& img, const std::vector<uint8_t>* valid, Comm& world, const Window& own,
                      const ClaheParams& p, const std::string& tag) {
    const std::vector<T> mine = crop(img, own);
    std::vector<uint8_t> mv;
    if (valid) mv = crop(*valid, own);
    std::vector<O> out(static_cast<size_t>(own.size()));
    clahe(mine.data(), valid ? mv.data() : nullptr, own, own.cols, H, W, p, world, out.data(), own.cols);
    const std::vector<O> all = assemble(world, out, own);
    if (g_rank == 0) {
        Comm self(MPI_COMM_SELF);
        std::vector<O> ref(static_cast<size_t>(H * W));
        clahe(img.data(), valid ? valid->data() : nullptr, Window{0, 0, H, W}, W, H, W, p, self, ref.data(), W);
        expect_bits(all, ref, tag);
    }
}

void check_clahe(const Data& d, Comm& world, const Window& own) {
    ClaheParams p8;
    p8.tile_rows = 7;
    p8.tile_cols = 5;
    check_clahe_case<float, uint8_t>(d.amp, &d.valid, world, own, p8, "clahe float 8-bit 7x5");
    ClaheParams p16;
    p16.tile_rows = 8;
    p16.tile_cols = 8;
    p16.nbins = 4096;
    p16.out_bits = 16;
    p16.clip_limit = 3.0;
    check_clahe_case<float, uint16_t>(d.z, &d.valid, world, own, p16, "clahe float 16-bit 8x8 (phase)");
    ClaheParams pu = p16;
    pu.nbins = 65536;
    pu.tile_rows = 3;
    pu.tile_cols = 11;
    check_clahe_case<uint16_t, uint16_t>(d.u16, nullptr, world, own, pu, "clahe uint16 16-bit 3x11");
}

std::vector<float> read_all(const std::string& path) {
    RasterReader r(path, 1);
    std::vector<float> v(static_cast<size_t>(r.info().rows * r.info().cols));
    std::vector<uint8_t> ok(v.size());
    r.read_phase(Window{0, 0, r.info().rows, r.info().cols}, v.data(), ok.data(), r.info().cols);
    for (size_t i = 0; i < v.size(); ++i)
        if (!ok[i]) v[i] = std::nanf("");  // the same bits for NaN in both
    return v;
}

void check_commands(const Data& d, const std::string& dir) {
    if (g_rank == 0) {
        std::vector<float> z = d.z;
        for (size_t i = 0; i < z.size(); ++i)
            if (!d.valid[i]) z[i] = std::nanf("");
        GeoRef geo;
        geo.has_geotransform = true;
        geo.geotransform = {500000, 30, 0, 4000000, 0, -30};
        write_geotiff_f32(dir + "/in.tif", H, W, z.data(), geo, std::nan(""));
        write_geotiff_f32(dir + "/amp.tif", H, W, d.amp.data(), geo, std::nan(""));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    auto both = [&](auto run, auto opt, const std::string& out_world, const std::string& out_self) {
        opt.output = out_world;
        const auto a = run(opt, MPI_COMM_WORLD);
        if (g_rank == 0) {
            opt.output = out_self;
            const auto b = run(opt, MPI_COMM_SELF);
            return std::make_pair(a, b);
        }
        return std::make_pair(a, a);
    };
    BackgroundOptions bo;
    bo.input = dir + "/in.tif";
    bo.degree = 3;
    for (const char* ext : {".tif", ".h5"}) {
        const auto [a, b] = both(run_background, bo, dir + "/bg_world" + ext, dir + "/bg_self" + ext);
        if (g_rank == 0) {
            expect_bits(a.fit.coeffs, b.fit.coeffs, std::string("run_background coefficients ") + ext);
            expect_bits(read_all(dir + "/bg_world" + ext), read_all(dir + "/bg_self" + ext),
                        std::string("run_background output ") + ext);
        }
    }
    ClaheOptions co;
    co.input = dir + "/amp.tif";
    co.params.tile_rows = 6;
    co.params.tile_cols = 9;
    co.params.nbins = 0;
    for (int bits : {8, 16})
        for (const char* ext : {".png", ".tif"}) {
            co.params.out_bits = bits;
            const std::string tag = std::to_string(bits) + ext;
            both(run_clahe, co, dir + "/cl_world" + tag, dir + "/cl_self" + tag);
            if (g_rank == 0)
                expect_bits(read_all(dir + "/cl_world" + tag), read_all(dir + "/cl_self" + tag), "run_clahe " + tag);
        }
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    int64_t pid = getpid();
    MPI_Bcast(&pid, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    const std::string dir = (argc > 1 ? std::string(argv[1]) : std::filesystem::temp_directory_path().string()) +
                            "/tessera_mpi_bgcl_" + std::to_string(pid);
    try {
        if (g_rank == 0) std::filesystem::create_directories(dir);
        Comm world(MPI_COMM_WORLD);
        const Window own = window_of(g_rank, g_size);
        const Data d = make_data();
        check_background(d, world, own);
        check_clahe(d, world, own);
        check_commands(d, dir);
    } catch (const std::exception& e) {
        fail(std::string("exception: ") + e.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int total = 0;
    MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        std::filesystem::remove_all(dir);
        std::printf("mpi_background_clahe_check: %d rank(s): %s\n", g_size, total == 0 ? "OK" : "FAILED");
    }
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
