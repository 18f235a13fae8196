#!/usr/bin/env python3
"""A/B of two builds' in-memory stages (tessera_bench_stages), alternating on the same machine.

    python3 jobs/ab_stages.py BEFORE/tessera_bench_stages build/tessera_bench_stages \\
        --cases topo holes --sizes 4096 8192 --rounds 4 --backend cpu

Each round runs every (case, size) once per build, the builds alternating; every run is
`--repeat 5` (the binary's own median). Prints, per case, size and build, the median over the
rounds of each stage and of the total (seconds) and the range of the totals: on a shared or
virtual machine single runs swing by 1.5x (page faults, neighbours), so read medians.
"""
import argparse
import statistics
import subprocess

STAGES = ["total", "residues", "matching", "rasterise", "union_find", "apply"]


def run(binary, case, size, backend, repeat):
    out = subprocess.run([binary, "--case", case, "--size", str(size), "--backend", backend, "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True)
    # | case | size | backend | threads | total | without copies | upload | residues | matching |
    #   rasterise | union_find | offset_solve | apply | download | Gpx/s | Gpx/s resident |
    row = next(l for l in (out.stdout + out.stderr).splitlines() if l.startswith(f"| {case} |"))
    f = [x.strip() for x in row.strip("|").split("|")]
    return {"total": float(f[4]), "residues": float(f[7]), "matching": float(f[8]), "rasterise": float(f[9]),
            "union_find": float(f[10]), "apply": float(f[12])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--cases", nargs="+", default=["topo", "holes"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8192])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backend", default="cpu")
    a = ap.parse_args()
    res = {}
    for _ in range(a.rounds):
        for case in a.cases:
            for n in a.sizes:
                for name, b in (("before", a.before), ("after", a.after)):
                    res.setdefault((case, n, name), []).append(run(b, case, n, a.backend, a.repeat))
    print("| case | size | build | " + " | ".join(STAGES) + " | total range |")
    print("|---|---|---|" + "---|" * (len(STAGES) + 1))
    for (case, n, name), runs in res.items():
        med = [statistics.median(r[s] for r in runs) for s in STAGES]
        tot = [r["total"] for r in runs]
        print(f"| {case} | {n}² | {name} | " + " | ".join(f"{v:.3f}" for v in med) +
              f" | {min(tot):.3f}-{max(tot):.3f} |")


if __name__ == "__main__":
    main()
