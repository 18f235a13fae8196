#!/usr/bin/env python3
"""Strong- and weak-scaling studies of `tessera unwrap` (README "Scaling").

Runs a series of rank counts, writes a markdown table and a PNG plot of wall time
and parallel efficiency against ranks. Inside a SLURM job (SLURM_JOB_ID set) each point
is an srun step of that allocation; where a SLURM controller answers (sinfo) but outside
a job, each point is its own srun job (the time then includes the allocation, and the
scenes go into a directory under the current one, which the compute nodes must see;
--srun-args adds e.g. "--partition=gpu --gpus-per-task=1"); elsewhere mpirun.
--launcher overrides.

    python3 jobs/scaling.py --mode strong --size 8192 --ranks 1 2 4 --out bench/results/strong
    python3 jobs/scaling.py --mode weak --size 4096 --ranks 1 2 4 --out bench/results/weak
(weak: --size is the side per rank; the scene grows to keep pixels per rank fixed)
"""
import argparse
import datetime
import math
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def slurm_answers():
    """srun is installed and a SLURM controller answers (sinfo)."""
    if not (shutil.which("srun") and shutil.which("sinfo")):
        return False
    try:
        return subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pick_launcher(kind):
    if kind == "auto":
        kind = "srun" if os.environ.get("SLURM_JOB_ID") or slurm_answers() else "mpirun"
    return kind


def launcher(kind, n, threads, srun_args=()):
    if kind == "srun":
        return ["srun", "-n", str(n), f"--cpus-per-task={threads}", "--cpu-bind=cores"] + list(srun_args)
    env = ["-x", f"OMP_NUM_THREADS={threads}", "-x", "OMPI_ALLOW_RUN_AS_ROOT", "-x", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"]
    return ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(n)] + env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["strong", "weak"], default="strong")
    ap.add_argument("--size", type=int, default=8192, help="image side (strong) or side per rank (weak)")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per rank")
    ap.add_argument("--case", default="topo")
    ap.add_argument("--tile-size", default="512")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeat", type=int, default=1, help="runs per point; the fastest is kept")
    ap.add_argument("--launcher", choices=["auto", "srun", "mpirun"], default="auto")
    ap.add_argument("--srun-args", default="", help='extra srun options, e.g. "--partition=gpu --gpus-per-task=1"')
    ap.add_argument("--unwrap-args", default="", help='extra tessera unwrap options, e.g. "--device 0"')
    ap.add_argument("--tessera", default=os.environ.get("TESSERA") or os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--out", default=None, help="prefix of OUT.md and OUT.png")
    a = ap.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    kind = pick_launcher(a.launcher)
    inside = os.environ.get("SLURM_JOB_ID")
    print(f"launcher: {kind}" + ((f" (steps of job {inside})" if inside else " (one job per point)")
                                 if kind == "srun" else ""), file=sys.stderr, flush=True)
    # srun may run the ranks on other nodes: the scenes then go where those see them.
    work = a.workdir or tempfile.mkdtemp(prefix="tessera_scaling_", dir=os.getcwd() if kind == "srun" else None)
    try:
        run_series(a, kind, work)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)


def run_series(a, kind, work):
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    os.makedirs(work, exist_ok=True)
    rows = []
    scenes = {}
    for n in a.ranks:
        side = a.size if a.mode == "strong" else int(round(a.size * math.sqrt(n)))
        if side not in scenes:
            d = os.path.join(work, f"{a.case}{side}")
            os.makedirs(d, exist_ok=True)
            subprocess.run([a.tessera, "synth", "--case", a.case, "--size", f"{side}x{side}", "--seed", "1", d],
                           check=True, capture_output=True)
            scenes[side] = os.path.join(d, f"{a.case}_wrapped.tif")
        best = None
        for _ in range(a.repeat):
            out = os.path.join(work, f"out_{n}.h5")
            cmd = launcher(kind, n, a.threads, shlex.split(a.srun_args)) + [
                a.tessera, "unwrap", "--overwrite", "--tile-size", a.tile_size, "--backend", a.backend] + \
                shlex.split(a.unwrap_args) + [scenes[side], out]
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                sys.exit(f"scaling: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-500:]}")
            wall = time.perf_counter() - t
            sent = int(re.search(r"most bytes sent by a rank (\d+)", p.stdout).group(1))
            grid = re.search(r"rank\(s\) as (\d+x\d+)", p.stdout).group(1)
            stages = dict(re.findall(r"tessera: (\w+)\s+([0-9.]+) s", p.stderr))
            if best is None or wall < best[0]:
                best = (wall, sent, grid, stages)
            os.remove(out)
        wall, sent, grid, stages = best
        rows.append(dict(ranks=n, side=side, wall=wall, sent=sent, grid=grid, stages=stages))
        print(f"{a.mode} ranks={n} side={side} grid={grid} wall={wall:.2f}s sent/rank={sent}", file=sys.stderr,
              flush=True)
    base = rows[0]
    for r in rows:
        speed = base["wall"] / r["wall"]
        r["speedup"] = speed if a.mode == "strong" else float("nan")
        ideal = r["ranks"] / base["ranks"]
        r["eff"] = speed / ideal if a.mode == "strong" else base["wall"] / r["wall"]
        r["sent_frac"] = r["sent"] / (r["side"] * r["side"] * 4.0)
    cpu = "unknown"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    stage_names = ["read", "residues", "matching", "rasterise", "union_find", "offset_solve", "apply", "write"]
    lines = [
        f"{a.mode} scaling, {a.case}, {'image' if a.mode == 'strong' else 'per-rank'} side {a.size}, "
        f"{a.threads} thread(s)/rank, tile {a.tile_size}, backend {a.backend}; machine: {os.cpu_count()} cores "
        f"({cpu}), {platform.node()}; date {datetime.date.today()}",
        f"Command: `python3 jobs/scaling.py --mode {a.mode} --size {a.size} --ranks {' '.join(map(str, a.ranks))} "
        f"--threads {a.threads}`",
        "",
        "| ranks | grid | image | wall s | speed-up | efficiency | bytes sent (max rank) | sent / image bytes | "
        + " | ".join(stage_names) + " |",
        "|---" * (8 + len(stage_names)) + "|",
    ]
    for r in rows:
        st = " | ".join(r["stages"].get(s, "") for s in stage_names)
        sp = f"{r['speedup']:.2f}" if a.mode == "strong" else "-"
        lines.append(f"| {r['ranks']} | {r['grid']} | {r['side']}² | {r['wall']:.2f} | {sp} | {r['eff']:.2f} | "
                     f"{r['sent']} | {100 * r['sent_frac']:.4f} % | {st} |")
    lines.append("")
    lines.append(f"Load average at the end (other work on the machine inflates times): {os.getloadavg()}")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out + ".md", "w") as f:
            f.write(text)
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            fig, ax = plt.subplots(1, 2, figsize=(9, 3.5))
            ranks = [r["ranks"] for r in rows]
            ax[0].plot(ranks, [r["wall"] for r in rows], "o-")
            ax[0].set_xlabel("ranks"), ax[0].set_ylabel("wall s"), ax[0].set_title(f"{a.mode} scaling: time")
            ax[1].plot(ranks, [r["eff"] for r in rows], "o-")
            ax[1].axhline(1.0, color="grey", lw=0.5)
            ax[1].set_xlabel("ranks"), ax[1].set_ylabel("efficiency"), ax[1].set_ylim(0, 1.2)
            ax[1].set_title("parallel efficiency")
            fig.tight_layout()
            fig.savefig(a.out + ".png", dpi=100)
            print(f"plot: {a.out}.png", file=sys.stderr)
        except ImportError:
            print("no matplotlib: install python3-matplotlib for the plot", file=sys.stderr)


if __name__ == "__main__":
    main()
