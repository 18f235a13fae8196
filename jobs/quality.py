#!/usr/bin/env python3
"""Quality table of issue 13 (item 6): tessera after and before, and the textbook Goldstein.

    python3 jobs/quality.py                                  # the full table (1024, 2048, 4096)
    python3 jobs/quality.py --sizes 512 1024 --out /tmp/q.md # a quick run

Scenes (deterministic, fixed seeds):
  * the four synthetic cases of `tessera synth` (bowl, topo, holes, fringes) at every --sizes,
    each run twice: without coherence, and with `--coherence C --min-coherence 0.3`;
  * "lakes": the bowl case with a `--mask` of three discs of 0 (lakes) in the middle, noise as
    the phase under them, truth NaN there; at the --lake-sizes (default: the --sizes <= 2048);
  * the five Ghiglia & Pritt scenes of --gp-dir (1-byte phase over 2 pi, 1-byte mask and
    correlation, big-endian float32 truth in radians); longs and isola (the two with truth) run
    with their mask, and again with their correlation as coherence; head, knee and ifsar have
    no truth: residues, components and time only.
Tools: `--after` (default build/tessera), `--before` (default /work/before/tessera), both
`unwrap -q` with their defaults otherwise, and bench/goldstein_ref (raw float32, NaN = invalid,
`--mask`), built with `cmake -S bench -B build-bench`. Times are wall clock of the whole process
(tessera: GDAL read, unwrap, HDF5 write; goldstein: raw read and write).
Score (`bench/score --per-region`): regions = 4-connected regions of valid pixels (finite
truth; in a run with coherence also coherence >= 0.3, for every tool alike: goldstein gets
those pixels as NaN); per region the modal offset rint((unw - truth) / 2pi); a pixel is right
when its output is finite and carries its region's offset; "one offset" = the fraction of
valid pixels carrying the scene's single most common offset.
Writes the markdown table (--out, default bench/results/quality_cpu.md) and the raw numbers
beside it (same name, .csv). Scratch goes to a fresh directory under --scratch (default /tmp),
removed at the end; the tools run one after another.
"""
import argparse
import csv
import datetime
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:  # e.g. a pyenv python3 first on PATH: Debian's python3-numpy is /usr/bin/python3's
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("quality.py: needs numpy (Debian: apt-get install python3-numpy, then /usr/bin/python3)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_COH = 0.3
CASES = ["bowl", "topo", "holes", "fringes"]
EXTRA_CASES = ["noisy"]  # `tessera synth --case noisy` (two looks; docs/ARCHITECTURE.md 2.1): only when asked
SEEDS = {"bowl": 1301, "topo": 1302, "holes": 1303, "fringes": 1304, "lakes": 1305, "noisy": 1306}
GP = [  # name, cols, rows, has truth (with mask and corr)
    ("longs", 152, 458, True), ("isola", 157, 458, True),
    ("head", 256, 256, False), ("knee", 256, 256, False), ("ifsar", 512, 512, False),
]
FIELDS = ["scene", "size", "coherence", "tool", "per_region_correct", "fraction_one_offset", "regions",
          "regions_all_right", "valid", "correct", "one_offset", "components", "residues", "time_s", "status"]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return p


TIMEOUT = None  # --timeout: seconds a tool run may take (None: no limit)


def timed(cmd, env=None):
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                           env=None if not env else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        p = subprocess.CompletedProcess(cmd, 124, "", f"timed out after {TIMEOUT} s")
    return time.perf_counter() - t, p


def field(text, key):
    m = re.search(rf"(?:^|\s){key}=(\S+)", text)
    return m.group(1) if m else None


# ---------------------------------------------------------------- rasters


def write_envi(path, arr):
    """Raw little-endian array + ENVI header (PATH without extension + .hdr), which GDAL reads."""
    types = {np.dtype(np.float32): 4, np.dtype(np.uint8): 1}
    arr = np.ascontiguousarray(arr)
    arr.astype(arr.dtype.newbyteorder("<"), copy=False).tofile(path)
    hdr = os.path.splitext(path)[0] + ".hdr"
    with open(hdr, "w") as f:
        f.write(f"ENVI\nsamples = {arr.shape[1]}\nlines = {arr.shape[0]}\nbands = 1\nheader offset = 0\n"
                f"file type = ENVI Standard\ndata type = {types[arr.dtype]}\ninterleave = bsq\nbyte order = 0\n")
    return path


def tif_to_f32(src, dst, rows, cols):
    run(["gdal_translate", "-q", "-of", "ENVI", "-ot", "Float32", src, dst])
    return np.fromfile(dst, dtype="<f4").reshape(rows, cols)


# ---------------------------------------------------------------- tools


class Tools:
    def __init__(self, a):
        self.a = a
        self.score_bin = os.path.join(a.bench_build, "score")
        self.gold_bin = os.path.join(a.bench_build, "goldstein_ref")
        self.help = {}

    def score(self, unw, truth, rows, cols, coh=None):
        cmd = [self.score_bin, unw, truth, str(rows), str(cols), "--per-region"]
        if coh:
            cmd += ["--coherence", coh, "--min-coherence", str(MIN_COH)]
        out = run(cmd).stdout
        return {k: int(field(out, k)) for k in
                ("regions", "regions_all_right", "valid", "correct", "one_offset", "output_regions",
                 "output_regions_ge100")}

    def tessera(self, binary, d, tag, phase, rows, cols, coh=None, mask=None, extra=(), env=None):
        """Runs `binary unwrap [extra]`; returns (seconds, unw.f32 path or None, components, residues, status)."""
        if not os.path.exists(binary):
            return None, None, None, None, f"missing {binary}"
        if binary not in self.help:
            self.help[binary] = run([binary, "unwrap", "--help"], check=False).stdout
        out = os.path.join(d, f"{tag}.h5")  # a fresh path for every run (no --overwrite needed)
        cmd = [binary, "unwrap"]
        if re.search(r"-q,--quiet", self.help[binary]):
            cmd.append("-q")
        if coh:
            cmd += ["--coherence", coh, "--min-coherence", str(MIN_COH)]
        if mask:
            cmd += ["--mask", mask]
        cmd += list(extra) + [phase, out]
        sec, p = timed(cmd, env)
        if p.returncode != 0 or not os.path.exists(out):
            for f in (out, out + ".tmp"):
                if os.path.exists(f):
                    os.remove(f)
            return sec, None, None, None, f"exit {p.returncode}: {p.stderr.strip()[-200:]}"
        unw, lab = os.path.join(d, f"{tag}_unw.f32"), os.path.join(d, f"{tag}_lab.u32")
        run(["h5dump", "-d", "/unwrapped_phase", "-b", "LE", "-o", unw, out])
        run(["h5dump", "-d", "/connected_components", "-b", "LE", "-o", lab, out])
        labels = np.fromfile(lab, dtype="<u4")
        components = int(np.count_nonzero(np.bincount(labels)[1:]))
        del labels
        m = re.search(r"\(0\):\s*(-?\d+)", run(["h5dump", "-a", "/residues", out]).stdout)
        residues = int(m.group(1)) if m else None
        os.remove(out)
        os.remove(lab)
        return sec, unw, components, residues, "ok"

    def snaphu(self, d, tag, phase_raw, rows, cols, mask_u8=None, coh_raw=None):
        """SNAPHU -s on the raw phase (NaN -> 0 and masked, as goldstein's NaN), its correlation from
        the coherence raster when the run has one; its output is finite everywhere (no components)."""
        ph = np.fromfile(phase_raw, dtype="<f4")
        valid = np.isfinite(ph)
        if mask_u8:
            valid &= np.fromfile(mask_u8, dtype=np.uint8) != 0
        inp = os.path.join(d, f"{tag}_in.f32")
        np.where(valid, ph, np.float32(0)).astype(np.float32).tofile(inp)
        msk = os.path.join(d, f"{tag}_mask.u8")
        valid.astype(np.uint8).tofile(msk)
        out = os.path.join(d, f"{tag}_unw.f32")
        cmd = [self.a.snaphu, inp, str(cols), "-s", "-C", "INFILEFORMAT FLOAT_DATA", "-C", "OUTFILEFORMAT FLOAT_DATA",
               "-M", msk, "-o", out]
        if coh_raw:
            cmd += ["-c", coh_raw, "-C", "CORRFILEFORMAT FLOAT_DATA"]
        sec, p = timed(cmd)
        os.remove(inp)
        os.remove(msk)
        if p.returncode != 0 or not os.path.exists(out):
            return sec, None, f"exit {p.returncode}: {p.stderr.strip()[-200:]}"
        # Masked pixels are invalid in the others' outputs: NaN here too.
        u = np.fromfile(out, dtype="<f4")
        np.where(valid, u, np.float32(np.nan)).astype(np.float32).tofile(out)
        return sec, out, "ok"

    def goldstein(self, d, tag, phase_raw, rows, cols, mask_u8=None):
        out = os.path.join(d, f"{tag}_unw.f32")
        cmd = [self.gold_bin, phase_raw, str(rows), str(cols), out]
        if mask_u8:
            cmd += ["--mask", mask_u8]
        sec, p = timed(cmd)
        if p.returncode != 0:
            return sec, None, None, f"exit {p.returncode}: {p.stderr.strip()[-200:]}"
        return sec, out, int(field(p.stdout, "residues")), "ok"


def run_scene(tools, rows_out, scene, size, d, rows, cols, phase, coh, mask, gold_phase, gold_mask, truth,
              score_coh=None):
    """All three tools on one scene. phase/coh/mask: rasters for tessera (coh None = without
    coherence); gold_phase: raw float32 for goldstein (NaN where invalid or coherence < 0.3);
    truth: raw float32 or None; the score masks coherence < 0.3 of score_coh (default: coh)."""
    score_coh = score_coh or coh
    a = tools.a
    tools_run = [("tessera after", a.after), ("tessera before", a.before), ("goldstein", None)]
    if a.snaphu:
        tools_run.append(("snaphu -s", "snaphu"))
    for tool, binary in tools_run:
        if binary == "none":  # --before none: no earlier build to compare
            continue
        tag = tool.replace(" ", "_").replace("-", "")
        if binary == "snaphu":
            sec, unw, status = tools.snaphu(d, tag, gold_phase, rows, cols, gold_mask, score_coh if coh else None)
            res = comps = None
        elif binary:
            extra = shlex.split(a.after_args if tool == "tessera after" else a.before_args)
            env = dict(kv.split("=", 1) for kv in shlex.split(a.before_env)) if tool == "tessera before" else None
            sec, unw, comps, res, status = tools.tessera(binary, d, tag, phase, rows, cols, coh, mask, extra, env)
        else:
            sec, unw, res, status = tools.goldstein(d, tag, gold_phase, rows, cols, gold_mask)
            comps = None
        row = dict(scene=scene, size=size, coherence="yes" if coh else "no", tool=tool, residues=res,
                   time_s=None if sec is None else round(sec, 3), status=status)
        if unw:
            if truth:
                row.update(tools.score(unw, truth, rows, cols, score_coh))
                row["per_region_correct"] = row["correct"] / row["valid"] if row["valid"] else None
                row["fraction_one_offset"] = row["one_offset"] / row["valid"] if row["valid"] else None
            elif binary is None:
                # no truth: the output regions still count (score against the output itself)
                row.update(tools.score(unw, unw, rows, cols))
            if binary is None or binary == "snaphu":
                comps = row.get("output_regions_ge100")
            os.remove(unw)
        row["components"] = comps
        for k in ("output_regions", "output_regions_ge100"):
            row.pop(k, None)
        if truth is None:
            for k in ("regions", "regions_all_right", "valid", "correct", "one_offset"):
                row.pop(k, None)
        rows_out.append(row)
        pr, one = row.get("per_region_correct"), row.get("fraction_one_offset")
        score_text = "" if pr is None else f"per_region={pr:.7f} one_offset={one:.7f} "
        log(f"  {scene} {size} coherence={row['coherence']} {tool}: {score_text}"
            f"components={comps} residues={res} {0 if sec is None else sec:.2f} s {status}")


# ---------------------------------------------------------------- scenes


def scene_size(text):
    """N (an N x N scene) or ROWSxCOLS."""
    m = re.fullmatch(r"(\d+)(?:x(\d+))?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: a size is N or ROWSxCOLS")
    return int(m.group(1)), int(m.group(2) or m.group(1))


def size_text(rows, cols):
    return f"{rows}²" if rows == cols else f"{rows}x{cols}"


def synth_scenes(tools, rows_out, work):
    a = tools.a
    for n in a.sizes:
        rows, cols = n
        for case in a.cases:
            for seed in a.seeds or [None]:  # --seeds: these seeds for every case, each a scene of its own
                name = case if seed is None else f"{case} seed {seed}"
                d = os.path.join(work, f"{case}{rows}x{cols}")
                os.makedirs(d)
                run([a.after, "synth", "--case", case, "--size", f"{rows}x{cols}", "--seed", str(SEEDS[case] if seed is None else seed), d])
                wrapped, coh = os.path.join(d, f"{case}_wrapped.tif"), os.path.join(d, f"{case}_coherence.tif")
                truth = os.path.join(d, "truth.f32")
                tif_to_f32(os.path.join(d, f"{case}_truth.tif"), truth, rows, cols)
                phase = tif_to_f32(wrapped, os.path.join(d, "wrapped.f32"), rows, cols)
                cohv = tif_to_f32(coh, os.path.join(d, "coh.f32"), rows, cols)
                gold_coh = write_envi(os.path.join(d, "wrapped_coh.f32"),
                                      np.where(cohv >= MIN_COH, phase, np.float32(np.nan)).astype(np.float32))
                del phase, cohv
                for use_coh in (False, True):
                    run_scene(tools, rows_out, name, size_text(rows, cols), d, rows, cols, wrapped,
                              os.path.join(d, "coh.f32") if use_coh else None, None,
                              gold_coh if use_coh else os.path.join(d, "wrapped.f32"), None, truth,
                              score_coh=os.path.join(d, "coh.f32"))
                shutil.rmtree(d)


def lake_mask(n):
    """1 everywhere except three discs of 0 (lakes) in the middle of an n x n scene."""
    r, c = np.mgrid[0:n, 0:n].astype(np.float64) / n
    lakes = ((r - 0.50) ** 2 + (c - 0.45) ** 2 < 0.12 ** 2) | \
            ((r - 0.34) ** 2 + (c - 0.64) ** 2 < 0.06 ** 2) | \
            ((r - 0.68) ** 2 + (c - 0.62) ** 2 < 0.05 ** 2)
    return np.where(lakes, 0, 1).astype(np.uint8)


def lake_scenes(tools, rows_out, work):
    a = tools.a
    for n in a.lake_sizes:
        d = os.path.join(work, f"lakes{n}")
        os.makedirs(d)
        run([a.after, "synth", "--case", "bowl", "--size", f"{n}x{n}", "--seed", str(SEEDS["lakes"]), d])
        phase = tif_to_f32(os.path.join(d, "bowl_wrapped.tif"), os.path.join(d, "bowl.f32"), n, n)
        truth = tif_to_f32(os.path.join(d, "bowl_truth.tif"), os.path.join(d, "bowl_truth.f32"), n, n)
        mask = lake_mask(n)
        water = mask == 0
        noise = np.random.default_rng(SEEDS["lakes"]).uniform(-np.pi, np.pi, size=(n, n)).astype(np.float32)
        phase = np.where(water, noise, phase).astype(np.float32)  # water: decorrelated phase
        truth = np.where(water, np.float32(np.nan), truth).astype(np.float32)
        ph = write_envi(os.path.join(d, "phase.f32"), phase)
        tr = write_envi(os.path.join(d, "truth.f32"), truth)
        mk = write_envi(os.path.join(d, "mask.u8"), mask)  # tessera reads it via the .hdr; goldstein raw
        del phase, truth, noise, mask, water
        run_scene(tools, rows_out, "lakes (bowl + 3 masked discs)", f"{n}²", d, n, n, ph, None, mk, ph, mk, tr)
        shutil.rmtree(d)


def gp_scenes(tools, rows_out, work):
    a = tools.a
    for name, cols, rows, has_truth in GP:
        base = os.path.join(a.gp_dir, f"{name}.{cols}x{rows}")
        if not os.path.exists(base + ".phase"):
            log(f"  skipping {name}: no {base}.phase")
            continue
        d = os.path.join(work, f"gp_{name}")
        os.makedirs(d)
        raw = np.fromfile(base + ".phase", dtype=np.uint8).reshape(rows, cols)
        phase = (raw.astype(np.float64) * (2.0 * np.pi / 256.0)).astype(np.float32)  # as tests/app/test_gp_data
        ph = write_envi(os.path.join(d, "phase.f32"), phase)
        size = f"{rows}x{cols}"
        if not has_truth:
            run_scene(tools, rows_out, f"G&P {name}", size, d, rows, cols, ph, None, None, ph, None, None)
        else:
            m = np.fromfile(base + ".mask", dtype=np.uint8).reshape(rows, cols)
            mask = (m != 0).astype(np.uint8)
            mk = write_envi(os.path.join(d, "mask.u8"), mask)
            surf = np.fromfile(base + ".surf", dtype=">f4").reshape(rows, cols).astype(np.float32)
            tr = write_envi(os.path.join(d, "truth.f32"), np.where(mask != 0, surf, np.float32(np.nan)))
            corr = np.fromfile(base + ".corr", dtype=np.uint8).reshape(rows, cols).astype(np.float32) / 255.0
            co = write_envi(os.path.join(d, "corr.f32"), corr.astype(np.float32))
            gc = write_envi(os.path.join(d, "phase_coh.f32"),
                            np.where(corr >= MIN_COH, phase, np.float32(np.nan)).astype(np.float32))
            run_scene(tools, rows_out, f"G&P {name} (mask)", size, d, rows, cols, ph, None, mk, ph, mk, tr)
            run_scene(tools, rows_out, f"G&P {name} (mask)", size, d, rows, cols, ph, co, mk, gc, mk, tr)
        shutil.rmtree(d)


# ---------------------------------------------------------------- output


def fmt(v, digits=None):
    if v is None:
        return "—"
    if digits is not None:
        return f"{v:.{digits}f}"
    return str(v)


def machine():
    cpu = "unknown"
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in run(["lscpu"]).stdout.splitlines()
                   if l.startswith("Model name"))
    except (RuntimeError, StopIteration, OSError):
        pass
    return run(["nproc"]).stdout.strip(), cpu


def binary_note(path):
    if not os.path.exists(path):
        return f"`{path}` (missing)"
    t = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    return f"`{path}` (built {t:%Y-%m-%d %H:%M} UTC)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=scene_size, nargs="+", default=[(1024, 1024), (2048, 2048), (4096, 4096)],
                    help="N (N x N) or ROWSxCOLS; the lake scene only at square sizes")
    ap.add_argument("--lake-sizes", type=int, nargs="*", default=None,
                    help="sizes of the lake scene (default: the --sizes <= 2048)")
    ap.add_argument("--cases", nargs="+", default=CASES, choices=CASES + EXTRA_CASES)
    ap.add_argument("--snaphu", default=None,
                    help="a SNAPHU binary (not part of tessera: built from its sources by whoever runs this) "
                         "run as a fourth tool, `-s` (smooth mode), its correlation input from the coherence")
    ap.add_argument("--no-gp", action="store_true", help="leave out the Ghiglia & Pritt scenes")
    ap.add_argument("--after", default=os.path.join(ROOT, "build", "tessera"))
    ap.add_argument("--before", default="/work/before/tessera", help="an earlier build, or none")
    ap.add_argument("--after-args", default="", help="more `unwrap` options for the after build, e.g. '--cut-radius 32'")
    ap.add_argument("--before-args", default="", help="more `unwrap` options for the before build")
    ap.add_argument("--before-env", default="", help="environment of the before build, e.g. 'TESSERA_FAR_REACH=0'")
    ap.add_argument("--seeds", type=int, nargs="*", default=None,
                    help="synthetic scenes of these seeds, every case (default: one per case, its own seed)")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="added to every scene's seed: the same kinds of scene, other instances")
    ap.add_argument("--bench-build", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--gp-dir", default=os.path.normpath(os.path.join(ROOT, "..", "shared", "bench_real_gp")))
    ap.add_argument("--scratch", default="/tmp")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "quality_cpu.md"))
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds one tool run may take; a run past it is a table row 'exit 124: timed out'")
    a = ap.parse_args()
    global TIMEOUT
    TIMEOUT = a.timeout
    if a.lake_sizes is None:
        a.lake_sizes = [r for r, c in a.sizes if r == c and r <= 2048]
    a.after = os.path.abspath(a.after)
    a.before = a.before if a.before == "none" else os.path.abspath(a.before)
    for k in SEEDS:
        SEEDS[k] += a.seed_offset
    command = "python3 jobs/quality.py " + shlex.join(sys.argv[1:])  # (numpy: Debian's /usr/bin/python3)
    t_start = time.perf_counter()
    started = datetime.datetime.now(datetime.timezone.utc)

    run(["cmake", "-S", os.path.join(ROOT, "bench"), "-B", a.bench_build, "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", a.bench_build])
    tools = Tools(a)
    rows_out = []
    work = tempfile.mkdtemp(prefix="tessera_quality_", dir=a.scratch)
    try:
        synth_scenes(tools, rows_out, work)
        lake_scenes(tools, rows_out, work)
        if not a.no_gp:
            gp_scenes(tools, rows_out, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = time.perf_counter() - t_start

    nproc, cpu = machine()
    lines = [
        "# Quality: per valid region, tessera after and before, textbook Goldstein"
        + (", SNAPHU" if a.snaphu else "") + " (issue 13)",
        "",
        f"Command: `{command}`  ",
        f"Machine: nproc {nproc}, {cpu}; date {started:%Y-%m-%d %H:%M} UTC; whole run {total:.0f} s; "
        f"load average at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())} (other work inflates times)  ",
        f"after: {binary_note(a.after)}{' `' + a.after_args + '`' if a.after_args else ''}; "
        f"before: {binary_note(a.before)}{' `' + a.before_args + '`' if a.before_args else ''}{' with `' + a.before_env + '`' if a.before_env else ''}; goldstein: "
        f"`bench/goldstein_ref` (one thread, default max box 60)"
        + (f"; snaphu: `{a.snaphu} -s` (SNAPHU's smooth mode, `-c` its correlation from the coherence in the "
           "runs with it, `-M` the invalid pixels; built from its sources, not part of tessera)" if a.snaphu else ""),
        "",
        "tessera runs `unwrap -q` with its defaults (tile 512, min component size 100); \"coherence yes\": "
        f"`--coherence C --min-coherence {MIN_COH}` (and NaN in goldstein's input there). In the synthetic "
        f"scenes pixels with coherence < {MIN_COH} (pure noise: no unwrapper can get them right) leave the "
        "score in both runs; only the unwrapper's input differs. Synthetic scenes: `tessera synth` seeds "
        + (", ".join(f"{k} {v}" for k, v in SEEDS.items() if k != "lakes") if not a.seeds
           else f"{', '.join(map(str, a.seeds))} for every case (the scene's name says which)")
        + f"; lakes: the bowl case (seed {SEEDS['lakes']}) with a `--mask` of three discs of 0 "
        "(radii 0.12, 0.06, 0.05 of the side) in the middle, uniform noise as the phase under them, truth "
        "NaN there. G&P: Ghiglia & Pritt's book data (longs, isola with their mask; coherence yes = their "
        "correlation / 255); head, knee, ifsar have no truth.",
        "",
        "per-region correct: pixels whose output is finite and carries the modal offset of their "
        "4-connected region of valid pixels, over all valid pixels (components do not excuse a wrong "
        "offset); one offset: fraction of valid pixels on the scene's single most common offset; "
        "regions right: valid regions with every pixel right / valid regions; components: tessera's labels "
        "> 0, goldstein's 4-connected regions of finite output with >= 100 pixels; time: wall clock of "
        "the whole process (tessera with GDAL read and HDF5 write; goldstein raw I/O).",
        "",
        "| scene | size | coherence | tool | per-region correct | one offset | regions right | components "
        "| residues | time s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows_out:
        right = f"{r['regions_all_right']}/{r['regions']}" if r.get("regions") is not None else "—"
        note = "" if r["status"] == "ok" else f" ({r['status'][:60]})"
        lines.append(f"| {r['scene']} | {r['size']} | {r['coherence']} | {r['tool']}{note} | "
                     f"{fmt(r.get('per_region_correct'), 7)} | {fmt(r.get('fraction_one_offset'), 7)} | {right} | "
                     f"{fmt(r.get('components'))} | {fmt(r.get('residues'))} | {fmt(r.get('time_s'), 2)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    csv_path = os.path.splitext(a.out)[0] + ".csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows_out:
            w.writerow({k: r.get(k) for k in FIELDS})
    log(f"wrote {a.out} and {csv_path} in {total:.0f} s")


if __name__ == "__main__":
    main()
