// Multi-rank check of Hdf5Writer (run under mpirun -np 3; any rank count >= 1 works).
// Every rank but rank 1 owns a horizontal band of the image; rank 1 owns an empty
// window and still takes part in every collective write. Band borders do not fall
// on the 512-row chunk borders, so chunks are shared by ranks. After commit,
// rank 0 reads the file back serially and checks every pixel and attribute.
// Also checked collectively: errors are thrown alike on every rank, and an
// uncommitted writer leaves no file. Exit code 0 when all is well, 1 otherwise.
//
// Not a GoogleTest file (name not test_*.cpp): it has its own main. CTest runs it under
// mpirun -np 1, 2 and 3 (tests mpi_hdf5_writer_np*, label mpi); by hand, from build/:
//   mpirun -np 3 tests/mpi_hdf5_writer_check [output-directory]
#include <hdf5.h>
#include <hdf5_hl.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/hdf5_writer.h"
#include "io/input_error.h"
#include "support/cli.h"

using tessera::Hdf5Writer;
using tessera::Window;
using tessera::testing::temporaries_of;

namespace {

int g_rank = 0, g_size = 1;
int g_failures = 0;

void fail(const std::string& what) {
    std::fprintf(stderr, "mpi_hdf5_writer_check: rank %d: FAIL: %s\n", g_rank, what.c_str());
    ++g_failures;
}

constexpr int64_t kRows = 1100, kCols = 777, kStride = 800;

float phase_at(int64_t r, int64_t c) { return 0.5f * static_cast<float>(r) - 0.25f * static_cast<float>(c); }
uint32_t label_at(int64_t r, int64_t c) { return static_cast<uint32_t>(r * kCols + c + 1); }
int8_t k_at(int64_t r, int64_t c) { return static_cast<int8_t>((r * 3 + c) % 200 - 100); }

// This rank's band: ranks other than 1 split the rows evenly; rank 1 owns nothing.
Window band_of(int rank, int size) {
    if (size > 1 && rank == 1) return Window{};
    int owners = size > 1 ? size - 1 : 1;
    int k = size > 1 && rank > 1 ? rank - 1 : rank;
    int64_t r0 = kRows * k / owners, r1 = kRows * (k + 1) / owners;
    return Window{r0, 0, r1 - r0, kCols};
}

template <typename T>
std::vector<T> read_all(hid_t file, const char* name, hid_t type) {
    std::vector<T> out(static_cast<size_t>(kRows * kCols));
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    if (d < 0 || H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
        fail(std::string("cannot read dataset ") + name);
        out.clear();
    }
    if (d >= 0) H5Dclose(d);
    return out;
}

void verify(const std::string& path) {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return fail("cannot open " + path);
    auto ph = read_all<float>(f, "unwrapped_phase", H5T_NATIVE_FLOAT);
    auto lab = read_all<uint32_t>(f, "connected_components", H5T_NATIVE_UINT32);
    auto k = read_all<int8_t>(f, "cycles", H5T_NATIVE_INT8);
    int64_t bad = 0;
    if (!ph.empty() && !lab.empty() && !k.empty())
        for (int64_t r = 0; r < kRows; ++r)
            for (int64_t c = 0; c < kCols; ++c) {
                size_t i = static_cast<size_t>(r * kCols + c);
                if (ph[i] != phase_at(r, c) || lab[i] != label_at(r, c) || k[i] != k_at(r, c)) {
                    if (bad++ < 5)
                        fail("pixel (" + std::to_string(r) + ", " + std::to_string(c) + "): " +
                             std::to_string(ph[i]) + " " + std::to_string(lab[i]) + " " + std::to_string(k[i]));
                }
            }
    if (bad) fail(std::to_string(bad) + " wrong pixels");
    // Root attributes: the rank count and a vector.
    hid_t a = H5Aopen(f, "ranks", H5P_DEFAULT);
    int64_t ranks = -1;
    if (a < 0 || H5Aread(a, H5T_NATIVE_INT64, &ranks) < 0 || ranks != g_size)
        fail("root attribute 'ranks' is " + std::to_string(ranks));
    if (a >= 0) H5Aclose(a);
    std::vector<double> gt(6, 0.0);
    a = H5Aopen(f, "geotransform", H5P_DEFAULT);
    if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, gt.data()) < 0 || gt != std::vector<double>{1, 2, 3, 4, 5, 6})
        fail("root attribute 'geotransform' differs");
    if (a >= 0) H5Aclose(a);
    // Dimension scales: y and x, their values, attached to every dataset; typed fill values.
    std::vector<double> ys(kRows), xs(kCols);
    hid_t y = H5Dopen2(f, "y", H5P_DEFAULT), x = H5Dopen2(f, "x", H5P_DEFAULT);
    if (y < 0 || x < 0 || H5DSis_scale(y) <= 0 || H5DSis_scale(x) <= 0) fail("y/x are not dimension scales");
    if (y >= 0 && (H5Dread(y, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ys.data()) < 0 || ys[0] != 100.0 ||
                   ys[kRows - 1] != 100.0 - 2.0 * (kRows - 1)))
        fail("y values");
    if (x >= 0 && (H5Dread(x, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, xs.data()) < 0 || xs[0] != 0.5 ||
                   xs[kCols - 1] != kCols - 0.5))
        fail("x values");
    for (const char* name : {"unwrapped_phase", "connected_components", "cycles"}) {
        hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
        if (d < 0 || y < 0 || x < 0 || H5DSis_attached(d, y, 0) <= 0 || H5DSis_attached(d, x, 1) <= 0)
            fail(std::string(name) + ": y, x not attached as dimensions 0, 1");
        if (d >= 0) H5Dclose(d);
    }
    if (y >= 0) H5Dclose(y);
    if (x >= 0) H5Dclose(x);
    hid_t cyc = H5Dopen2(f, "cycles", H5P_DEFAULT);
    hid_t fv = cyc >= 0 ? H5Aopen(cyc, "_FillValue", H5P_DEFAULT) : -1;
    hid_t fvt = fv >= 0 ? H5Aget_type(fv) : -1;
    int8_t fill = 0;
    if (fvt < 0 || H5Tequal(fvt, H5T_NATIVE_INT8) <= 0 || H5Aread(fv, H5T_NATIVE_INT8, &fill) < 0 || fill != -127)
        fail("/cycles: _FillValue is not int8 -127");
    if (fvt >= 0) H5Tclose(fvt);
    if (fv >= 0) H5Aclose(fv);
    if (cyc >= 0) H5Dclose(cyc);
    if (H5Aexists_by_name(f, "spatial_ref", "crs_wkt", H5P_DEFAULT) <= 0) fail("/spatial_ref: no crs_wkt");
    H5Fclose(f);
    std::string text = tessera::describe_result(path);
    if (text.find("/unwrapped_phase  1100 x 777  float32") == std::string::npos)
        fail("describe_result:\n" + text);
}

// Runs `body` expecting an exception of type E on this rank; returns its what().
template <typename E, typename F>
std::string expect_throw(const char* label, F body) {
    try {
        body();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        fail(std::string(label) + ": wrong exception: " + e.what());
        return {};
    }
    fail(std::string(label) + ": no exception");
    return {};
}

// Every rank got the same message.
void expect_same_everywhere(const char* label, const std::string& msg) {
    std::vector<char> mine(512, '\0'), root(512, '\0');
    std::strncpy(mine.data(), msg.c_str(), mine.size() - 1);
    root = mine;
    MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
    if (mine != root) fail(std::string(label) + ": message differs from rank 0's: " + msg);
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    namespace fs = std::filesystem;
    fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path();
    int job = static_cast<int>(getpid());
    MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD);
    const std::string out = (dir / ("mpi_hdf5_writer_check_" + std::to_string(job) + ".h5")).string();

    try {
        // 1. Bands (one empty), strided memory, three types, attributes, commit.
        Window own = band_of(g_rank, g_size);
        std::vector<float> ph(static_cast<size_t>(std::max<int64_t>(own.rows, 1) * kStride), -1.f);
        std::vector<uint32_t> lab(ph.size(), 0u);
        std::vector<int8_t> k(ph.size(), 0);
        for (int64_t r = 0; r < own.rows; ++r)
            for (int64_t c = 0; c < own.cols; ++c) {
                size_t i = static_cast<size_t>(r * kStride + c);
                ph[i] = phase_at(own.row0 + r, c);
                lab[i] = label_at(own.row0 + r, c);
                k[i] = k_at(own.row0 + r, c);
            }
        {
            Hdf5Writer w(out, MPI_COMM_WORLD, kRows, kCols);
            // Uncompressed (ranks of one node: each writes its own band in place), then deflated,
            // beside one another (write_beside: the phase's copy joined before it returns, so
            // its source may be overwritten at once).
            std::vector<float> ph_copy = ph;
            // The phase's pages made ready first, as a device's run does (every rank calls it; it
            // must agree or do nothing alike: in gather mode only rank 0 holds the file).
            const std::vector<tessera::Attribute> phase_attrs{{"units", std::string("radians")}};
            w.set_deflate(0);
            w.prepare_f32("unwrapped_phase", phase_attrs, 2);
            w.write_beside([&] {
                w.set_deflate(0);
                w.write_f32("unwrapped_phase", own, ph_copy.data(), kStride, phase_attrs);
                w.set_deflate(1);
                w.write_u32("connected_components", own, lab.data(), kStride, {});
            });
            std::fill(ph_copy.begin(), ph_copy.end(), 1e9f);
            w.write_i8("cycles", own, k.data(), kStride, {{"ranks", int64_t{g_size}}, {"_FillValue", int64_t{-127}}});
            // netCDF-4 dimensions made by every rank alike, rank 1 owning no pixel.
            std::vector<double> ys(kRows), xs(kCols);
            for (int64_t r = 0; r < kRows; ++r) ys[static_cast<size_t>(r)] = 100.0 - 2.0 * static_cast<double>(r);
            for (int64_t c = 0; c < kCols; ++c) xs[static_cast<size_t>(c)] = 0.5 + static_cast<double>(c);
            w.write_coordinate("y", ys, {{"units", std::string("m")}});
            w.write_coordinate("x", xs, {{"units", std::string("m")}});
            for (const char* name : {"unwrapped_phase", "connected_components", "cycles"})
                w.attach_dimensions(name, {"y", "x"});
            w.write_scalar_variable("spatial_ref", {{"crs_wkt", std::string("LOCAL_CS[\"check\"]")}});
            w.write_attributes({{"ranks", int64_t{g_size}},
                                {"geotransform", std::vector<double>{1, 2, 3, 4, 5, 6}},
                                {"version", std::string("check")}});
            if (!fs::exists(w.temporary_path()) || fs::exists(out) || w.temporary_path().rfind(out + ".tmp.", 0) != 0)
                fail("temporary file protocol before commit");
            w.commit();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0) {
            if (!temporaries_of(out).empty() || !fs::exists(out)) fail("temporary file protocol after commit");
            verify(out);
        }

        // 2. A bad window on the last rank only: every rank throws, with the same text,
        //    and the writer is still usable; destroyed uncommitted, it leaves no file.
        const std::string out2 = out + ".2.h5";
        {
            Hdf5Writer w(out2, MPI_COMM_WORLD, kRows, kCols);
            Window bad = own;
            if (g_rank == g_size - 1) bad = Window{kRows - 1, 0, 2, kCols};  // one row past the end
            std::string msg = expect_throw<std::invalid_argument>("bad window", [&] {
                w.write_f32("unwrapped_phase", bad, ph.data(), kStride, {});
            });
            expect_same_everywhere("bad window", msg);
            w.write_f32("unwrapped_phase", own, ph.data(), kStride, {});
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0 && (fs::exists(out2) || !temporaries_of(out2).empty()))
            fail("an uncommitted writer left a file");

        // 3. A chunked run's windows (set_windowed): column blocks, rows in two writes that end
        //    and begin inside a chunk row, labels 2 bytes wide; deflated (gathered, rank 0 writes
        //    the whole chunk rows whole and the rest window by window) and not (each rank its
        //    own windows in place, chunks shared by ranks); every way every pixel.
        for (const int level : {1, 0}) {
        const std::string out4 = out + ".4." + std::to_string(level) + ".h5";
        {
            const int64_t c0 = kCols * g_rank / g_size, c1 = kCols * (g_rank + 1) / g_size;
            std::vector<float> p4(static_cast<size_t>(kRows * kStride));
            std::vector<uint16_t> l4(p4.size());
            for (int64_t r = 0; r < kRows; ++r)
                for (int64_t c = c0; c < c1; ++c) {
                    p4[static_cast<size_t>(r * kStride + c - c0)] = phase_at(r, c);
                    l4[static_cast<size_t>(r * kStride + c - c0)] = static_cast<uint16_t>(label_at(r, c) % 60000);
                }
            Hdf5Writer w(out4, MPI_COMM_WORLD, kRows, kCols);
            w.set_windowed(true);
            w.set_deflate(level);
            for (const auto& [r0, r1] : {std::pair<int64_t, int64_t>{0, 700}, {700, kRows}}) {
                const Window win{r0, c0, r1 - r0, c1 - c0};
                w.write_f32("unwrapped_phase", win, p4.data() + r0 * kStride, kStride, {});
                w.write_labels("connected_components", win, l4.data() + r0 * kStride, 2, kStride, {});
            }
            w.commit();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0) {
            hid_t f = H5Fopen(out4.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
            if (f < 0) {
                fail("cannot open " + out4);
            } else {
                auto ph4 = read_all<float>(f, "unwrapped_phase", H5T_NATIVE_FLOAT);
                auto lab4 = read_all<uint32_t>(f, "connected_components", H5T_NATIVE_UINT32);
                int64_t bad = 0;
                for (int64_t i = 0; i < kRows * kCols && !ph4.empty() && !lab4.empty(); ++i)
                    bad += ph4[static_cast<size_t>(i)] != phase_at(i / kCols, i % kCols) ||
                           lab4[static_cast<size_t>(i)] != label_at(i / kCols, i % kCols) % 60000;
                if (bad) fail("windowed column blocks, deflate " + std::to_string(level) + ": " + std::to_string(bad) + " wrong pixels");
                H5Fclose(f);
            }
            std::remove(out4.c_str());
        }
        }

        // 4. A missing output directory: an InputError naming the path on every rank.
        const std::string out3 = (dir / "no_such_directory" / "x.h5").string();
        std::string msg = expect_throw<tessera::InputError>("missing directory", [&] {
            Hdf5Writer w(out3, MPI_COMM_WORLD, kRows, kCols);
        });
        if (msg.rfind(out3 + ": ", 0) != 0) fail("missing directory: message '" + msg + "'");
        expect_same_everywhere("missing directory", msg);
    } catch (const std::exception& e) {
        fail(std::string("unexpected exception: ") + e.what());
    }

    if (g_rank == 0) std::remove(out.c_str());
    int local = g_failures, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        std::printf("mpi_hdf5_writer_check: %d ranks: %s\n", g_size, total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
