#!/usr/bin/env python3
"""Frame-rate benchmark (issue item 6, CPU): synthetic off-axis holograms ->
wrapped phase -> unwrap (-> background), single frames and batches.

For each size, writes K distinct synthetic holograms (pure Python, no numpy: raw
float32 + an ENVI .hdr that GDAL reads) and a batch of B frames (links to the K
distinct ones, so that the batch costs no extra disk), then times, end to end as a
user runs them (process start, GDAL read, FFTs, unwrapping, GeoTIFF/HDF5 write):

  hologram     tessera hologram IN OUT                       (-> wrapped phase GeoTIFF)
  + unwrap     tessera unwrap --from-hologram IN OUT         (-> unwrapped phase HDF5)
  + background + tessera background OUT.h5 BG.h5, one process per frame
               (skipped, with a note, when the binary has no `background`)

single frame (1 process, OMP_NUM_THREADS = all cores) and batch of B frames
(`-np 1` with all cores as threads, `-np P` with one thread per rank). Frames/s =
frames / wall seconds of the command(s). Prints a markdown table.

    python3 jobs/bench_frames.py --sizes 1024 2048 --batch 16 --out bench/results/frames_cpu.md
"""
import argparse
import array
import datetime
import glob
import math
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_hologram(path, n, seed):
    """I = |R + O|^2 + noise for unit beams: 2 + 2 cos(phi + carrier) + noise, with
    R = exp(-i 2 pi (fx c + fy r)), carrier (fy, fx) = (0.18, 0.22) cycles/pixel, and an
    object phase phi = a tall Gaussian bump (about 25 rad: it needs unwrapping) plus a
    weaker cell-like texture. Separable terms keep pure Python near 0.5 us per pixel."""
    rnd = random.Random(seed)
    fy, fx = 0.18, 0.22
    a = 22.0 + 6.0 * rnd.random()
    r0, c0 = n * (0.4 + 0.2 * rnd.random()), n * (0.4 + 0.2 * rnd.random())
    sig = n / 6.0
    gr = [math.exp(-((r - r0) ** 2) / (2 * sig * sig)) for r in range(n)]
    gc = [math.exp(-((c - c0) ** 2) / (2 * sig * sig)) for c in range(n)]
    k = 2 * math.pi * (8 + 4 * rnd.random()) / n
    sr = [math.sin(k * r) for r in range(n)]
    sc = [math.sin(k * c) for c in range(n)]
    tr = [2 * math.pi * fy * r for r in range(n)]
    tc = [2 * math.pi * fx * c for c in range(n)]
    noise = [0.2 * rnd.gauss(0.0, 1.0) for _ in range(65536)]
    cos = math.cos
    with open(path, "wb") as f:
        for r in range(n):
            g, s, t = a * gr[r], 1.5 * sr[r], tr[r]
            base = (r * 40503 + seed * 7919) & 0xFFFF
            row = array.array("f", [2.0 + 2.0 * cos(g * gc[c] + s * sc[c] + t + tc[c]) +
                                    noise[(base + c * 2654435761) & 0xFFFF] for c in range(n)])
            f.write(row.tobytes())
    with open(os.path.splitext(path)[0] + ".hdr", "w") as f:
        f.write(f"ENVI\nsamples = {n}\nlines = {n}\nbands = 1\nheader offset = 0\n"
                f"file type = ENVI Standard\ndata type = 4\ninterleave = bsq\nbyte order = 0\n")


def run(cmd, env=None):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return wall, p.stdout


def env_threads(n):
    e = dict(os.environ)
    e["OMP_NUM_THREADS"] = str(n)
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    e.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return e


def in_process_fps(stdout):
    m = re.search(r"([0-9.]+) frames/s", stdout)
    return float(m.group(1)) if m else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--distinct", type=int, default=4, help="distinct holograms per size (the batch cycles them)")
    ap.add_argument("--np", type=int, default=os.cpu_count(), help="ranks of the parallel batch")
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    cores = os.cpu_count()
    exe = a.tessera
    help_text = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    for sub in ("hologram",):
        if not re.search(rf"^\s+{sub}\b", help_text, re.M):
            sys.exit(f"{exe} has no `{sub}` subcommand (wire app/hologram_command.h into main.cpp)")
    has_bg = re.search(r"^\s+background\b", help_text, re.M) is not None
    load_before = os.getloadavg()[0]
    work = a.workdir or tempfile.mkdtemp(prefix="tessera_frames_")
    os.makedirs(work, exist_ok=True)
    rows = []  # (size, mode, hologram fps, +unwrap fps, +background fps, in-process fps (hologram, unwrap))
    for n in a.sizes:
        d = os.path.join(work, f"n{n}")
        src, batch = os.path.join(d, "src"), os.path.join(d, "batch")
        for x in (src, batch):
            os.makedirs(x, exist_ok=True)
        t = time.perf_counter()
        for k in range(a.distinct):
            write_hologram(os.path.join(src, f"h{k}.bin"), n, 1000 + k)
        print(f"{n}: generated {a.distinct} holograms in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        for i in range(a.batch):
            for ext in (".bin", ".hdr"):
                dst = os.path.join(batch, f"frame_{i:04d}{ext}")
                if not os.path.exists(dst):
                    os.symlink(os.path.join(src, f"h{i % a.distinct}{ext}"), dst)
        one = os.path.join(batch, "frame_0000.bin")
        pattern = os.path.join(batch, "frame_*.bin")
        out = os.path.join(d, "out")
        os.makedirs(out, exist_ok=True)
        e_all, e_one = env_threads(cores), env_threads(1)
        run([exe, "hologram", "-q", "--overwrite", one, os.path.join(out, "warm.tif")], e_all)  # page cache, GDAL plugins

        # Single frame: one process per stage.
        wh, _ = run([exe, "hologram", "-q", "--overwrite", one, os.path.join(out, "p.tif")], e_all)
        wu, _ = run([exe, "unwrap", "-q", "--overwrite", "--from-hologram", one, os.path.join(out, "u.h5")], e_all)
        wb = None
        if has_bg:
            wb, _ = run([exe, "background", "-q", "--overwrite", os.path.join(out, "u.h5"), os.path.join(out, "bg.h5")], e_all)
        rows.append((n, "single frame, 1 process", 1 / wh, 1 / wu, 1 / (wu + wb) if wb else None, None))
        print(f"{n} single: hologram {wh:.3f} s, +unwrap {wu:.3f} s" + (f", background {wb:.3f} s" if wb else ""),
              file=sys.stderr, flush=True)

        # Batches: one process for all frames (-np 1, threads), then -np P (one thread each).
        for np_, env, label in ((1, e_all, f"batch of {a.batch}, -np 1 x {cores} threads"),
                                (a.np, e_one, f"batch of {a.batch}, -np {a.np} x 1 thread")):
            if np_ > 1 and not a.mpirun:
                continue
            pre = [] if np_ == 1 else [a.mpirun, "--oversubscribe", "-np", str(np_), "-x", "OMP_NUM_THREADS"]
            for f in glob.glob(os.path.join(out, "frame_*")):
                os.remove(f)
            wh, sh = run(pre + [exe, "hologram", "--overwrite", pattern, out], env)
            wu, so = run(pre + [exe, "unwrap", "--overwrite", "--from-hologram", pattern, out], env)
            wb = None
            if has_bg:
                # `background` takes one input: one process per frame, frames over np_ at a time.
                t = time.perf_counter()
                procs = []
                for i in range(a.batch):
                    h5 = os.path.join(out, f"frame_{i:04d}.h5")
                    procs.append(subprocess.Popen([exe, "background", "-q", "--overwrite", h5, h5[:-3] + "_bg.h5"], env=e_one,
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                    if len(procs) >= np_:
                        procs.pop(0).wait()
                for p in procs:
                    p.wait()
                wb = time.perf_counter() - t
            rows.append((n, label, a.batch / wh, a.batch / wu, a.batch / (wu + wb) if wb else None,
                         (in_process_fps(sh), in_process_fps(so))))
            print(f"{n} {label}: hologram {wh:.3f} s, +unwrap {wu:.3f} s" +
                  (f", background {wb:.3f} s" if wb else ""), file=sys.stderr, flush=True)
        shutil.rmtree(d)
    cpu = "unknown"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    lines = [
        f"Machine: {cores} cores ({cpu}), {platform.system()} {platform.release()}; date {datetime.date.today()}; "
        f"CPU backend (FFTW 3 single precision, FFTW_ESTIMATE plans reused per frame size); "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (other work on the machine "
        f"slows every column, and OpenMP threads most)",
        f"Command: `python3 jobs/bench_frames.py --sizes {' '.join(map(str, a.sizes))} --batch {a.batch} --np {a.np}`",
        "",
        "Frames per second, end to end (process start, GDAL read, FFTs, unwrapping, writes); the hologram "
        "column writes the wrapped phase GeoTIFF, the unwrap column runs `unwrap --from-hologram` "
        "(demodulate + unwrap + HDF5), the background column adds `tessera background` (degree 2) per frame "
        "(one process per frame: it takes one input). In-process: the batch's own frames/s report (no process "
        "or MPI start-up).",
        "",
        "| size | run | hologram -> phase | -> unwrap | -> background | in-process: hologram / unwrap |",
        "|---|---|---|---|---|---|",
    ]
    for n, label, fh, fu, fb, fi in rows:
        lines.append(f"| {n}² | {label} | {fh:.2f} | {fu:.2f} | "
                     f"{f'{fb:.2f}' if fb else 'n/a'} | {f'{fi[0]:.2f} / {fi[1]:.2f}' if fi else '-'} |")
    if not has_bg:
        lines.append("")
        lines.append("The background column is empty: this tessera has no `background` subcommand yet.")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
