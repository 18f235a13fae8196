#!/usr/bin/env python3
"""CPU benchmark of `tessera unwrap` (README "Performance").

For each size and synthetic case: writes the scene as GeoTIFF, runs tessera end to
end (GDAL read, unwrap, HDF5 write) and the textbook serial Goldstein baseline
(bench/goldstein_ref, raw float I/O) on the same scene, scores both against the
truth with bench/score, and prints a markdown table.

    python3 jobs/bench_cpu.py --sizes 1024 2048 4096 8192 --out bench/results/cpu.md
"""
import argparse
import datetime
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def timed(cmd):
    """Wall seconds and peak RSS (bytes) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    rss_kb = int(out.stderr.strip().splitlines()[-1])
    return wall, rss_kb * 1024, out


def to_raw(src, dst, dtype="Float32"):
    run(["gdal_translate", "-q", "-of", "ENVI", "-ot", dtype, src, dst])


MIN_COH = 0.3


def score(unw, truth, rows, cols, coh, labels=None):
    cmd = [os.path.join(ROOT, "build-bench", "score"), unw, truth, str(rows), str(cols), "--coherence", coh,
           "--min-coherence", str(MIN_COH)]
    if labels:
        cmd += ["--labels", labels]
    m = re.search(r"fraction_correct=([0-9.]+)", run(cmd).stdout)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    ap.add_argument("--cases", nargs="+", default=["bowl", "topo", "holes", "fringes"])
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--tile-size", default="512")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if not os.path.exists(os.path.join(ROOT, "build-bench", "score")):
        run(["cmake", "-S", os.path.join(ROOT, "bench"), "-B", os.path.join(ROOT, "build-bench"),
             "-DCMAKE_BUILD_TYPE=Release"])
        run(["cmake", "--build", os.path.join(ROOT, "build-bench"), "-j2"])
    work = a.workdir or tempfile.mkdtemp(prefix="tessera_bench_")
    os.makedirs(work, exist_ok=True)
    rows_out = []
    for n in a.sizes:
        for case in a.cases:
            d = os.path.join(work, f"{case}{n}")
            os.makedirs(d, exist_ok=True)
            run([a.tessera, "synth", "--case", case, "--size", f"{n}x{n}", "--seed", "1", d])
            wrapped, coh = os.path.join(d, f"{case}_wrapped.tif"), os.path.join(d, f"{case}_coherence.tif")
            truth, coh_raw = os.path.join(d, "truth.f32"), os.path.join(d, "coh.f32")
            to_raw(os.path.join(d, f"{case}_truth.tif"), truth)
            to_raw(coh, coh_raw)
            out = os.path.join(d, "out.h5")
            # Decorrelated pixels (coherence < 0.2) are not integrated through (--min-coherence),
            # and leave the score for both unwrappers: pure noise has no right answer.
            wall, rss, p = timed([a.tessera, "unwrap", "--overwrite", "--tile-size", a.tile_size, "--coherence", coh,
                                  "--min-coherence", str(MIN_COH), wrapped, out])
            res = int(re.search(r"residues (\d+)", p.stdout).group(1))
            to_raw(f'HDF5:"{out}"://unwrapped_phase', os.path.join(d, "unw.f32"))
            to_raw(f'HDF5:"{out}"://connected_components', os.path.join(d, "lab.u32"), "UInt32")
            frac = score(os.path.join(d, "unw.f32"), truth, n, n, coh_raw, os.path.join(d, "lab.u32"))
            # Baseline: textbook Goldstein, raw float in and out, one thread.
            raw_in = os.path.join(d, "wrapped.f32")
            to_raw(wrapped, raw_in)
            gwall, _, gp = timed([os.path.join(ROOT, "build-bench", "goldstein_ref"), raw_in, str(n), str(n),
                                  os.path.join(d, "g.f32")])
            gfrac = score(os.path.join(d, "g.f32"), truth, n, n, coh_raw)
            px = n * n
            rows_out.append((n, case, wall, px / wall / 1e6, rss / px, res, frac, gwall, gfrac))
            print(f"{n} {case}: tessera {wall:.2f} s {px / wall / 1e6:.1f} Mpx/s {rss / px:.1f} B/px "
                  f"residues {res} fraction {frac:.6f} | goldstein {gwall:.2f} s fraction {gfrac:.6f}",
                  file=sys.stderr, flush=True)
            shutil.rmtree(d)
    cpu = "unknown"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    lines = [
        f"Machine: {os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}; "
        f"date {datetime.date.today()}; tile size {a.tile_size}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'all')}",
        f"tessera: `unwrap --coherence C --min-coherence {MIN_COH}` (GDAL read of phase + coherence, HDF5 write); "
        f"baseline: bench/goldstein_ref, one thread, raw float32 in and out. Fraction correct: pixels with "
        f"finite truth and coherence >= {MIN_COH}, per connected component (bench/score).",
        f"Command: `python3 jobs/bench_cpu.py --sizes {' '.join(map(str, a.sizes))}`",
        "",
        "| size | case | tessera wall s | Mpixel/s | peak RSS B/px | residues | fraction correct | "
        "textbook Goldstein s | Goldstein fraction correct |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, case, wall, mpx, bpp, res, frac, gwall, gfrac in rows_out:
        lines.append(f"| {n}² | {case} | {wall:.2f} | {mpx:.1f} | {bpp:.1f} | {res} | {frac:.6f} | "
                     f"{gwall:.2f} | {gfrac:.6f} |")
    lines.append("")
    lines.append(f"Load average at the end (other work on the machine inflates times): {os.getloadavg()}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
