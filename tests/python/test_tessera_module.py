#!/usr/bin/env python3
"""`import tessera` (python/): the command line's result from NumPy arrays, bit for bit.

Run by CTest (test python_module) with PYTHONPATH at build/python and TESSERA_EXE the
program. The scenes come from `tessera synth` (GeoTIFFs read with GDAL's Python bindings) or
are made here and written as GeoTIFFs for the command line; the command line's HDF5 is read
with h5py. Every check looks at the input and the output arrays only.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import h5py
import numpy as np
from osgeo import gdal

import tessera

TESSERA = os.environ.get("TESSERA_EXE", "tessera")
TWO_PI = 2 * np.pi
gdal.UseExceptions()


def read_raster(path):
    ds = gdal.Open(path)
    return ds.GetRasterBand(1).ReadAsArray()


def write_raster(path, a, nodata=None):
    types = {np.dtype(np.float32): gdal.GDT_Float32, np.dtype(np.float64): gdal.GDT_Float64,
             np.dtype(np.complex64): gdal.GDT_CFloat32, np.dtype(np.complex128): gdal.GDT_CFloat64,
             np.dtype(np.uint8): gdal.GDT_Byte}
    ds = gdal.GetDriverByName("GTiff").Create(path, a.shape[1], a.shape[0], 1, types[a.dtype])
    band = ds.GetRasterBand(1)
    if nodata is not None:
        band.SetNoDataValue(nodata)
    band.WriteArray(a)
    ds = None


def cli_unwrap(inp, out, *options):
    subprocess.run([TESSERA, "unwrap", inp, out, "-q", *options], check=True)
    with h5py.File(out, "r") as f:
        return f["unwrapped_phase"][...], f["connected_components"][...]


def assert_same_bits(test, got, want):
    test.assertEqual(got[0].dtype, np.float32)
    test.assertEqual(got[1].dtype, np.uint32)
    test.assertEqual(got[0].shape, want[0].shape)
    test.assertTrue(np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32)),
                    "unwrapped phase differs in %d pixels" % np.count_nonzero(got[0].view(np.uint32) != want[0].view(np.uint32)))
    test.assertTrue(np.array_equal(got[1], want[1]), "components differ")


def wrap(x):
    return np.angle(np.exp(1j * x))


class Scenes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tessera_python_")
        cls.dir = cls.tmp.name
        subprocess.run([TESSERA, "synth", "--case", "holes", "--size", "300x400", "--seed", "7", cls.dir],
                       check=True, stdout=subprocess.DEVNULL)
        cls.wrapped_tif = os.path.join(cls.dir, "holes_wrapped.tif")
        cls.coherence_tif = os.path.join(cls.dir, "holes_coherence.tif")
        cls.phase = read_raster(cls.wrapped_tif)
        cls.coherence = read_raster(cls.coherence_tif)
        cls.truth = read_raster(os.path.join(cls.dir, "holes_truth.tif"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    # (1) The command line's result, bit for bit.
    def test_same_bits_as_the_command_line(self):
        self.assertEqual(self.phase.dtype, np.float32)
        self.assertTrue(np.isnan(self.phase).any())  # the nodata river
        want = cli_unwrap(self.wrapped_tif, self.path("cli.h5"), "--coherence", self.coherence_tif,
                          "--min-coherence", "0.3", "--tile-size", "128")
        assert_same_bits(self, tessera.unwrap(self.phase, self.coherence, min_coherence=0.3, tile_size=128), want)
        # Any tile size gives the same (docs/ARCHITECTURE.md section 1).
        assert_same_bits(self, tessera.unwrap(self.phase, self.coherence, min_coherence=0.3), want)
        # Not a vacuous comparison: components and NaN both present.
        self.assertGreater(want[1].max(), 0)
        self.assertTrue(np.isnan(want[0]).any())

    def test_options_as_the_command_line(self):
        want = cli_unwrap(self.wrapped_tif, self.path("cli_opts.h5"), "--cut-radius", "5", "--min-component-size",
                          "500", "--reference", "40", "50")
        got = tessera.unwrap(self.phase, cut_radius=5, min_component_size=500, reference=(40, 50), backend="cpu")
        assert_same_bits(self, got, want)
        self.assertEqual(got[0][40, 50], 0.0)

    # Section 3.6: a +/- vortex pair 24 apart (L1), 109 from the sides, R = 16: one cut between
    # them with the far reach, two cuts to the top without (--no-far-reach / far_reach=False).
    def test_far_reach_as_the_command_line(self):
        r, c = np.mgrid[0:240, 0:240].astype(np.float64)
        phi = wrap(np.arctan2(r - 108.5, c - 108.5) - np.arctan2(r - 120.5, c - 120.5)).astype(np.float32)
        tif = self.path("vortex_pair.tif")
        write_raster(tif, phi)
        reach = cli_unwrap(tif, self.path("far.h5"))
        side = cli_unwrap(tif, self.path("no_far.h5"), "--no-far-reach")
        assert_same_bits(self, tessera.unwrap(phi), reach)
        assert_same_bits(self, tessera.unwrap(phi, far_reach=False), side)
        self.assertGreater(np.count_nonzero(reach[0] != side[0]), 100)
        with h5py.File(self.path("far.h5"), "r") as f, h5py.File(self.path("no_far.h5"), "r") as g:
            self.assertEqual((f.attrs["far_reach"], f.attrs["pair_cuts"], f.attrs["ground_cuts"]), (1, 1, 0))
            self.assertEqual((g.attrs["far_reach"], g.attrs["pair_cuts"], g.attrs["ground_cuts"]), (0, 0, 2))

    # Section 2.1: the guide of a noisy phase, as the command line's, in one piece and in chunks.
    def test_guide_window_as_the_command_line(self):
        want = cli_unwrap(self.wrapped_tif, self.path("cli_guide.h5"), "--guide-window", "5", "--tile-size", "32")
        assert_same_bits(self, tessera.unwrap(self.phase, guide_window=5, tile_size=32), want)
        assert_same_bits(self, tessera.unwrap(self.phase, guide_window=5, chunk_rows=64), want)
        self.assertGreater(np.count_nonzero(want[0] != tessera.unwrap(self.phase, guide_window=0)[0]), 0)
        with self.assertRaisesRegex(ValueError, "guide_window 4"):
            tessera.unwrap(self.phase, guide_window=4)
        with self.assertRaisesRegex(ValueError, "guide_window 'five'"):
            tessera.unwrap(self.phase, guide_window="five")
        with self.assertRaisesRegex(TypeError, "guide_window"):
            tessera.unwrap(self.phase, guide_window=5.0)

    # Section 2.2: 'auto', the default, as the command line's default (the census decides alike).
    def test_guide_auto_as_the_command_line(self):
        want = cli_unwrap(self.wrapped_tif, self.path("cli_auto.h5"), "--tile-size", "32")
        assert_same_bits(self, tessera.unwrap(self.phase, tile_size=32), want)
        assert_same_bits(self, tessera.unwrap(self.phase, guide_window="auto", chunk_rows=64), want)
        with h5py.File(self.path("cli_auto.h5"), "r") as f:
            n = int(f.attrs["guide_window"])
            self.assertEqual(int(f.attrs["guide_auto"]), 1)
            self.assertEqual(n, 5 if 20 * int(f.attrs["census_residues"]) > int(f.attrs["census_plaquettes"]) else 0)
        assert_same_bits(self, tessera.unwrap(self.phase, guide_window=n), want)

    def test_chunks_as_the_command_line(self):
        want = cli_unwrap(self.wrapped_tif, self.path("cli_chunks.h5"), "--coherence", self.coherence_tif,
                          "--min-coherence", "0.3", "--tile-size", "32", "--chunk-rows", "64")
        got = tessera.unwrap(self.phase, self.coherence, min_coherence=0.3, tile_size=32, chunk_rows=64)
        assert_same_bits(self, got, want)
        assert_same_bits(self, tessera.unwrap(self.phase, self.coherence, min_coherence=0.3), want)
        scratch = self.path("scratch")
        os.makedirs(scratch)
        got = tessera.unwrap(self.phase, self.coherence, min_coherence=0.3, tile_size=32, chunk_rows=64, scratch=scratch)
        assert_same_bits(self, got, want)
        self.assertEqual(os.listdir(scratch), [])
        with self.assertRaises(ValueError) as ctx:  # --scratch: a directory that is not there
            tessera.unwrap(self.phase, tile_size=32, chunk_rows=64, scratch=self.path("missing"))
        self.assertIn("--scratch", str(ctx.exception))
        with self.assertRaises(ValueError) as ctx:  # less than the process holds already
            tessera.unwrap(self.phase, memory_limit=1 << 20)
        self.assertIn("memory-limit", str(ctx.exception))

    def test_float64_nodata_and_mask_as_the_command_line(self):
        phase64 = self.phase.astype(np.float64)
        phase64[np.isnan(phase64)] = -9999.0  # nodata as a value, as in many InSAR products
        rng = np.random.default_rng(3)
        mask = np.ones(phase64.shape, np.uint8)
        mask[100:140, 200:260] = 0
        mask[rng.random(mask.shape) < 0.01] = 0
        write_raster(self.path("p64.tif"), phase64, nodata=-9999.0)
        write_raster(self.path("mask.tif"), mask)
        want = cli_unwrap(self.path("p64.tif"), self.path("cli64.h5"), "--mask", self.path("mask.tif"))
        for m in (mask, mask.astype(bool), mask.astype(np.float64) * 3.5):
            assert_same_bits(self, tessera.unwrap(phase64, mask=m, nodata=-9999.0), want)
        self.assertTrue(np.isnan(want[0][100:140, 200:260]).all())
        # Fortran order and a non-native byte order are read as the same values.
        assert_same_bits(self, tessera.unwrap(np.asfortranarray(phase64).astype(">f8"), mask=mask, nodata=-9999.0), want)

    def test_complex_as_the_command_line(self):
        amp = np.where(np.isnan(self.phase), 0.0, 0.5 + self.coherence)
        ph = np.nan_to_num(self.phase)
        for dtype in (np.complex64, np.complex128):
            ifg = (amp * np.exp(1j * ph)).astype(dtype)
            name = self.path("ifg_%s.tif" % np.dtype(dtype).name)
            write_raster(name, ifg)
            want = cli_unwrap(name, name + ".h5", "--coherence", self.coherence_tif, "--min-coherence", "0.3")
            assert_same_bits(self, tessera.unwrap(ifg, self.coherence, min_coherence=0.3), want)

    # (2) An unwrapping of the input, checked from the arrays alone.
    def test_result_is_an_unwrapping_of_the_input(self):
        u, cc = tessera.unwrap(self.phase, self.coherence, min_coherence=0.3)
        valid = ~np.isnan(u)
        # Invalid input stays invalid, and nothing invalid is labelled.
        self.assertFalse(valid[np.isnan(self.phase)].any())
        self.assertFalse(valid[self.coherence < 0.3].any())
        self.assertTrue((cc[~valid] == 0).all())
        self.assertGreater(valid.mean(), 0.5)
        # u - phi is a whole number of cycles.
        k = (u[valid] - self.phase[valid]) / TWO_PI
        self.assertLess(np.abs(k - np.round(k)).max(), 1e-3)
        # Inside a component, neighbours differ by the wrapped difference of their phases
        # (except across branch cuts), and each component carries one cycle offset to the truth.
        for axis in (0, 1):
            a = [slice(None), slice(None)]
            b = [slice(None), slice(None)]
            a[axis], b[axis] = slice(0, -1), slice(1, None)
            a, b = tuple(a), tuple(b)
            same = (cc[a] == cc[b]) & (cc[a] > 0)
            du = (u[b] - u[a])[same]
            dphi = wrap(self.phase[b] - self.phase[a])[same]
            self.assertGreater(same.sum(), 50000)
            self.assertGreater(np.mean(np.abs(du - dphi) < 1e-3), 0.99)
        for label in range(1, cc.max() + 1):
            px = cc == label
            offset = np.round((u[px] - self.truth[px]) / TWO_PI)
            values, counts = np.unique(offset, return_counts=True)
            self.assertGreater(counts.max() / px.sum(), 0.99, "component %d" % label)

    # (3) An interferogram gives what its phase gives.
    def test_complex_gives_what_its_phase_gives(self):
        rng = np.random.default_rng(5)
        ph = np.nan_to_num(self.phase)
        ifg = (rng.uniform(0.1, 4.0, ph.shape) * np.exp(1j * ph)).astype(np.complex128)
        ifg[np.isnan(self.phase)] = 0
        phase_of_ifg = np.angle(ifg).astype(np.float32)  # atan2 in double, narrowed, as GDAL's CFloat64
        phase_of_ifg[ifg == 0] = np.nan
        u1, c1 = tessera.unwrap(ifg)
        u2, c2 = tessera.unwrap(phase_of_ifg)
        self.assertTrue(np.array_equal(u1.view(np.uint32), u2.view(np.uint32)))
        self.assertTrue(np.array_equal(c1, c2))
        self.assertTrue(np.isnan(u1[np.isnan(self.phase)]).all())

    # (4) Bad input: a TypeError or ValueError naming the argument.
    def test_bad_input_names_the_argument(self):
        p = self.phase
        cases = [
            (ValueError, "coherence", lambda: tessera.unwrap(p, self.coherence[:-1])),
            (ValueError, "mask", lambda: tessera.unwrap(p, mask=np.ones((4, 4), bool))),
            (ValueError, "phase_or_ifg", lambda: tessera.unwrap(p[0])),
            (ValueError, "phase_or_ifg", lambda: tessera.unwrap(np.zeros((2, 3, 4), np.float32))),
            (TypeError, "phase_or_ifg", lambda: tessera.unwrap(np.zeros(p.shape, np.int32))),
            (TypeError, "phase_or_ifg", lambda: tessera.unwrap("not an array")),
            (TypeError, "coherence", lambda: tessera.unwrap(p, self.coherence.astype(np.complex64))),
            (TypeError, "mask", lambda: tessera.unwrap(p, mask=np.ones(p.shape, np.complex64))),
            (ValueError, "phase_or_ifg", lambda: tessera.unwrap(np.degrees(p))),        # degrees
            (ValueError, "phase_or_ifg", lambda: tessera.unwrap(np.full(p.shape, np.nan, np.float32))),
            (ValueError, "phase_or_ifg", lambda: tessera.unwrap(np.zeros((1, 5), np.float32))),
            (ValueError, "coherence", lambda: tessera.unwrap(p, self.coherence * 3)),   # not in [0, 1]
            (ValueError, "cut_radius", lambda: tessera.unwrap(p, cut_radius=0)),
            (ValueError, "min_coherence", lambda: tessera.unwrap(p, min_coherence=1.5)),
            (ValueError, "tile_size", lambda: tessera.unwrap(p, tile_size=1)),
            (ValueError, "reference", lambda: tessera.unwrap(p, reference=(300, 0))),
            (ValueError, "backend", lambda: tessera.unwrap(p, backend="gpu")),
            (TypeError, "", lambda: tessera.unwrap(p, tile_siz=64)),  # pybind11's own message
        ]
        for exc, name, call in cases:
            with self.assertRaises(exc) as ctx:
                call()
            self.assertIn(name, str(ctx.exception))
            if name:  # ours: one line, as the command line prints it
                self.assertEqual(len(str(ctx.exception).splitlines()), 1, str(ctx.exception))
        # The module still works after every error.
        self.assertEqual(tessera.unwrap(p)[0].shape, p.shape)

    # A failure inside the core (tests inject one through TESSERA_INJECT_ERROR, as the MPI
    # tests do) is a RuntimeError in Python: the process goes on.
    def test_core_failures_are_exceptions_not_exits(self):
        code = ("import numpy as np, tessera\n"
                "try:\n"
                "    tessera.unwrap(np.zeros((40, 50), np.float32))\n"
                "except RuntimeError as e:\n"
                "    print('RuntimeError:', e)\n"
                "print('alive')\n")
        for spec, words in (("0:residues:invariant", "internal error"), ("0:union_find", "injected error")):
            r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, TESSERA_INJECT_ERROR=spec),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("RuntimeError: " + words, r.stdout)
            self.assertTrue(r.stdout.endswith("alive\n"), r.stdout)

    # (5) The GIL is released while it runs.
    def test_other_threads_run_meanwhile(self):
        ticks, stop = [], threading.Event()

        def count():
            while not stop.is_set():
                ticks.append(time.perf_counter())
                time.sleep(0.001)

        t = threading.Thread(target=count)
        t.start()
        try:
            # A scene large enough that the call lasts long enough to tell (machines differ).
            for reps in (4, 8, 16):
                phase = np.tile(self.phase, (reps, reps))
                time.sleep(0.05)
                t0 = time.perf_counter()
                tessera.unwrap(phase)
                t1 = time.perf_counter()
                if t1 - t0 > 0.3:
                    break
        finally:
            stop.set()
            t.join()
        inside = [s for s in ticks if t0 <= s <= t1]
        gaps = np.diff([t0] + inside + [t1])
        self.assertGreater(t1 - t0, 0.1, "unwrap too quick to tell")
        self.assertGreater(len(inside), 10)
        self.assertLess(gaps.max(), 0.5 * (t1 - t0))

    def test_threads_calling_at_once_get_their_own_results(self):
        want = tessera.unwrap(self.phase, self.coherence, min_coherence=0.3)
        results = [None] * 4

        def run(i):
            results[i] = tessera.unwrap(self.phase, self.coherence, min_coherence=0.3, tile_size=64 * (i + 1))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results:
            assert_same_bits(self, r, want)

    # MPI: started by the module in a plain python3 and ended at exit; left alone when mpi4py
    # started it; under mpirun every rank unwraps its own array alone.
    def test_mpi_in_plain_python_mpi4py_and_mpirun(self):
        np.save(self.path("p.npy"), self.phase)
        want = tessera.unwrap(self.phase)
        script = self.path("child.py")
        with open(script, "w") as f:
            f.write("import os, sys, numpy as np\n"
                    "if sys.argv[2] == 'mpi4py': from mpi4py import MPI\n"
                    "import tessera\n"
                    "u, cc = tessera.unwrap(np.load(sys.argv[1]))\n"
                    "rank = os.environ.get('OMPI_COMM_WORLD_RANK', '0')\n"
                    "np.save(sys.argv[1] + '.u' + sys.argv[2] + rank + '.npy', u)\n"
                    "np.save(sys.argv[1] + '.c' + sys.argv[2] + rank + '.npy', cc)\n")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        runs = [("plain", [sys.executable], 1)]
        try:
            import mpi4py  # noqa: F401  (python3-mpi4py, jobs/setup.sh)
            runs.append(("mpi4py", [sys.executable], 1))
        except ImportError:
            print("mpi4py not installed: the run after mpi4py's MPI_Init is left out", file=sys.stderr)
        mpirun = shutil.which("mpirun")
        if mpirun:
            runs.append(("mpirun", [mpirun, "--oversubscribe", "-np", "2", "-x", "PYTHONPATH", sys.executable], 2))
        for how, cmd, ranks in runs:
            r = subprocess.run(cmd + [script, self.path("p.npy"), how], env=env, capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(r.returncode, 0, how + ": " + r.stderr)
            self.assertEqual(r.stderr.strip(), "", how)  # no MPI complaint at exit
            for rank in range(ranks):
                u = np.load(self.path("p.npy.u%s%d.npy" % (how, rank)))
                cc = np.load(self.path("p.npy.c%s%d.npy" % (how, rank)))
                assert_same_bits(self, (u, cc), want)

    def test_version_and_docstring(self):
        self.assertRegex(tessera.__version__, r"^\d+\.\d+\.\d+$")
        self.assertIn("coherence", tessera.unwrap.__doc__)
        self.assertIn("conncomp", tessera.unwrap.__doc__)


if __name__ == "__main__":
    unittest.main()
