#!/usr/bin/env python3
"""CPU timings of the quicklook/background stages (issue items 2 and 3).

Times the kernels of the CPU backend on in-memory images (no I/O), single rank:
  - background: degree-n surface fit (exact moments + Cholesky) and subtraction,
    on an N x N float32 phase (smooth surface + noise, 1 % invalid pixels);
  - CLAHE: 8x8 tiles, clip limit 2, on an N x N uint16 image with 16-bit output
    (4096 and 65536 bins) and 8-bit output (256 bins), stage by stage.
Each figure is the best of --repeats runs (the machine may be shared), for each
OMP_NUM_THREADS in --threads. A small C++ driver is compiled against the built
library (BUILD/libtessera_lib.a) with mpicxx; nothing is added to the build.

    python3 jobs/bench_stages_cpu.py --build build --size 8192 --out stages.md

With --cli it also times the commands end to end (GeoTIFF in, HDF5/TIFF out) when
the `background` and `clahe` subcommands are present in BUILD/tessera.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DRIVER = r"""
#include <mpi.h>
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "kernels/background.h"
#include "kernels/clahe.h"
#include "partition/comm.h"
using namespace tessera;
using clk = std::chrono::steady_clock;
static int repeats = 5;
template <class F> double best(F f) {
    double b = 1e30;
    for (int k = 0; k < repeats; ++k) {
        const auto t = clk::now();
        f();
        b = std::min(b, std::chrono::duration<double>(clk::now() - t).count());
    }
    return b;
}
int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const int64_t N = std::atoll(argv[1]);
    repeats = std::atoi(argv[2]);
    const int degree = std::atoi(argv[3]);
    Comm self(MPI_COMM_SELF);
    const Window all{0, 0, N, N};
    std::vector<float> z(static_cast<size_t>(N * N));
    std::vector<uint8_t> valid(z.size(), 1);
    std::vector<uint16_t> u16(z.size());
    std::mt19937_64 rng(1);
    std::normal_distribution<float> noise(0.f, 0.1f);
    #pragma omp parallel for
    for (int64_t r = 0; r < N; ++r) {
        std::mt19937_64 g(static_cast<uint64_t>(r));
        std::normal_distribution<float> n(0.f, 0.1f);
        for (int64_t c = 0; c < N; ++c) {
            const double x = surface_coord(c, N), y = surface_coord(r, N);
            const size_t i = static_cast<size_t>(r * N + c);
            z[i] = static_cast<float>(30 * x - 20 * y + 5 * x * x * y - 8 * y * y * y + 3 * std::sin(0.01 * (r + 2 * c))) + n(g);
            u16[i] = static_cast<uint16_t>(std::clamp((z[i] + 60.0) * 500.0, 0.0, 65535.0));
            if ((g() % 100) == 0) valid[i] = 0;
        }
    }
    auto emit = [](const char* stage, double s, int64_t px) {
        std::printf("{\"stage\": \"%s\", \"seconds\": %.6f, \"mpx_per_s\": %.1f}\n", stage, s, px / s / 1e6);
    };
    SurfaceFit fit;
    const double tf = best([&] { fit = fit_surface(z.data(), valid.data(), nullptr, all, N, N, N, degree, self); });
    std::vector<float> w;
    double ts = 1e30;
    for (int k = 0; k < repeats; ++k) {
        w = z;
        const auto t = clk::now();
        subtract_surface(w.data(), valid.data(), nullptr, all, N, N, N, fit);
        ts = std::min(ts, std::chrono::duration<double>(clk::now() - t).count());
    }
    char name[64];
    std::snprintf(name, sizeof name, "background fit, degree %d", degree);
    emit(name, tf, N * N);
    std::snprintf(name, sizeof name, "background subtract, degree %d", degree);
    emit(name, ts, N * N);
    std::snprintf(name, sizeof name, "background fit + subtract, degree %d", degree);
    emit(name, tf + ts, N * N);
    for (int bins : {4096, 65536, 256}) {
        ClaheParams p;
        p.nbins = bins;
        p.out_bits = bins == 256 ? 8 : 16;
        const ClaheGrid g = make_clahe_grid(N, N, p);
        std::vector<uint16_t> out16(z.size());
        std::vector<uint8_t> out8(z.size());
        const double tall = best([&] {
            if (p.out_bits == 16) clahe(u16.data(), nullptr, all, N, N, N, p, self, out16.data(), N);
            else clahe(u16.data(), nullptr, all, N, N, N, p, self, out8.data(), N);
        });
        ClaheRange range;
        const double tr = best([&] { range = clahe_local_range(u16.data(), nullptr, all, N); });
        std::vector<uint32_t> hist(static_cast<size_t>(g.tiles()) * bins);
        const double th = best([&] {
            std::fill(hist.begin(), hist.end(), 0u);
            clahe_histograms(u16.data(), nullptr, all, N, g, p, range, hist.data());
        });
        std::vector<uint16_t> lut(hist.size());
        const double tl = best([&] { clahe_luts(hist.data(), g, p, lut.data()); });
        const double ta = best([&] {
            if (p.out_bits == 16) clahe_apply(u16.data(), nullptr, all, N, g, p, range, lut.data(), out16.data(), N);
            else clahe_apply(u16.data(), nullptr, all, N, g, p, range, lut.data(), out8.data(), N);
        });
        std::snprintf(name, sizeof name, "CLAHE uint16 -> %d-bit, %d bins (all)", p.out_bits, bins);
        emit(name, tall, N * N);
        std::snprintf(name, sizeof name, "  range (min/max)");
        emit(name, tr, N * N);
        std::snprintf(name, sizeof name, "  tile histograms");
        emit(name, th, N * N);
        std::snprintf(name, sizeof name, "  clip + LUTs (64 tiles)");
        emit(name, tl, N * N);
        std::snprintf(name, sizeof name, "  interpolation");
        emit(name, ta, N * N);
    }
    MPI_Finalize();
    return 0;
}
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def pkg(*args):
    return run(["pkg-config"] + list(args)).stdout.split()


def build_driver(build, workdir):
    src = os.path.join(workdir, "bench_stages.cpp")
    exe = os.path.join(workdir, "bench_stages")
    with open(src, "w") as f:
        f.write(DRIVER)
    lib = os.path.join(build, "libtessera_lib.a")
    if not os.path.exists(lib):
        sys.exit(f"{lib} missing: build first (cmake --build {build})")
    cxx = shutil.which("mpicxx") or "mpicxx"
    gdal = run(["gdal-config", "--libs"]).stdout.split()
    cmd = ([cxx, "-std=c++20", "-O3", "-DNDEBUG", "-ffp-contract=off", "-fopenmp", "-DOMPI_SKIP_MPICXX=1",
            f"-I{ROOT}", src, "-o", exe, lib] + gdal + pkg("--libs", "hdf5-openmpi", "fftw3f") + ["-lz"])
    run(cmd)
    return exe


def machine():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}), Linux {platform.release()}"


def cli_times(build, size, workdir, repeats):
    exe = os.path.join(build, "tessera")
    helptext = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    if "background" not in helptext or "clahe" not in helptext:
        return None
    run([exe, "synth", "--case", "topo", "--size", f"{size}x{size}", "--seed", "1", workdir])
    truth = os.path.join(workdir, "topo_truth.tif")
    u16 = os.path.join(workdir, "u16.tif")
    run(["gdal_translate", "-q", "-ot", "UInt16", "-scale", "-a_nodata", "none", truth, u16])
    rows = []
    for name, cmd in [("tessera background --degree 3 (TIF -> H5)",
                       [exe, "background", "--overwrite", truth, os.path.join(workdir, "bg.h5"), "--degree", "3"]),
                      ("tessera clahe --bits 16 (UInt16 TIF -> TIF)",
                       [exe, "clahe", "--overwrite", u16, os.path.join(workdir, "c16.tif"), "--bits", "16"]),
                      ("tessera clahe (UInt16 TIF -> 8-bit PNG)",
                       [exe, "clahe", "--overwrite", u16, os.path.join(workdir, "c8.png")])]:
        best = None
        for _ in range(repeats):
            out = run(cmd).stdout
            line = [l for l in out.splitlines() if l.strip().endswith(")") and " s (" in l][-1]
            total = float(line.split()[0])
            if best is None or total < best[0]:
                best = (total, line.strip())
        rows.append((name, best[1]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--degree", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--cli", action="store_true", help="also time the commands end to end")
    ap.add_argument("--out", help="also write the markdown here")
    args = ap.parse_args()
    build = os.path.abspath(args.build)

    lines = []
    with tempfile.TemporaryDirectory(prefix="tessera_bench_stages_") as tmp:
        exe = build_driver(build, tmp)
        results = {}
        for t in args.threads:
            env = dict(os.environ, OMP_NUM_THREADS=str(t), OMPI_MCA_ess_singleton_isolated="1",
                       OMPI_MCA_pml="ob1", OMPI_MCA_btl="self")
            out = run([exe, str(args.size), str(args.repeats), str(args.degree)], env=env).stdout
            results[t] = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        cli = cli_times(build, args.size, tmp, args.repeats) if args.cli else None

    cmdline = "python3 jobs/bench_stages_cpu.py " + " ".join(sys.argv[1:])
    lines.append(f"Machine: {machine()}; date {datetime.date.today().isoformat()}; "
                 f"image {args.size}x{args.size}; best of {args.repeats}; single rank, in memory (no I/O)")
    lines.append(f"Command: `{cmdline.strip()}`")
    lines.append("")
    head = "| stage | " + " | ".join(f"{t} thread{'s' if t > 1 else ''}: ms (Mpx/s)" for t in args.threads) + " |"
    lines.append(head)
    lines.append("|---|" + "---|" * len(args.threads))
    stages = [r["stage"] for r in results[args.threads[0]]]
    for i, s in enumerate(stages):
        cells = []
        for t in args.threads:
            r = results[t][i]
            cells.append(f"{r['seconds'] * 1e3:.0f} ({r['mpx_per_s']:.0f})")
        label = s.replace("  ", "&nbsp;&nbsp;")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if cli:
        lines.append("")
        lines.append("End to end (OMP_NUM_THREADS unset, best of the repeats):")
        lines.append("")
        lines.append("| command | time line |")
        lines.append("|---|---|")
        for name, line in cli:
            lines.append(f"| {name} | {line} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
