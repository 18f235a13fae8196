"""Checks a tessera result against its input with the readers users have (issue 17):
GDAL's netCDF driver (gdalinfo -json), xarray (h5netcdf engine), rioxarray and h5py, and the GeoTIFFs
written next to it. Independent of tessera's code: every expectation comes from the input
raster (read through GDAL) and from the HDF5 datasets themselves.

usage: cf_outputs_check.py RESULT.h5 INPUT KIND [--conncomp TIF] [--dolphin PREFIX] [--geotiff TIF]
                          [--overviews]
KIND: projected | geographic | none (the input's georeferencing).
Exit 0 when every check passes; each failure is printed on one line."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import xarray as xr

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def gdalinfo(name, *extra):
    out = subprocess.run(["gdalinfo", "-json", *extra, name], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"gdalinfo {name} failed: {out.stderr.strip()}")
    check("Warning" not in out.stderr, f"gdalinfo {name}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def srs_of(info):
    return (info.get("coordinateSystem") or {}).get("wkt", "")


def same_srs(a, b):
    # gdalsrsinfo -e finds the EPSG code of each; equal WKT2 text or equal codes count as one CRS.
    if a == b:
        return True
    codes = []
    for wkt in (a, b):
        out = subprocess.run(["gdalsrsinfo", "-e", "-o", "epsg", wkt], capture_output=True, text=True)
        codes.append(out.stdout.strip())
    return codes[0] == codes[1] and codes[0].startswith("EPSG")


def read_raster(name, dtype):
    """The first band of `name` as a numpy array (gdal_translate to raw, no Python bindings)."""
    with tempfile.TemporaryDirectory() as d:
        raw = os.path.join(d, "band.bin")
        gdal_type = {"float32": "Float32", "uint32": "UInt32", "uint16": "UInt16"}[np.dtype(dtype).name]
        subprocess.run(["gdal_translate", "-q", "-of", "ENVI", "-ot", gdal_type, "-b", "1", name, raw], check=True)
        info = gdalinfo(name)
        w, h = info["size"]
        return np.fromfile(raw, dtype=dtype).reshape(h, w)


def image_structure(info):
    return info.get("metadata", {}).get("IMAGE_STRUCTURE", {})


def check_geotiff(path, dtype, nodata, predictor, expected, in_info, want_overviews):
    info = gdalinfo(path)
    band = info["bands"][0]
    check(band["type"] == dtype, f"{path}: type {band['type']}, expected {dtype}")
    got_nodata = band.get("noDataValue")
    check(got_nodata == nodata or (nodata == "nan" and str(got_nodata).lower() == "nan"),
          f"{path}: nodata {got_nodata}, expected {nodata}")
    check(band["block"] == [256, 256], f"{path}: blocks {band['block']}, expected tiles of 256 x 256")
    st = image_structure(info)
    check(st.get("COMPRESSION") == "DEFLATE", f"{path}: compression {st.get('COMPRESSION')}")
    check(st.get("PREDICTOR") == str(predictor), f"{path}: predictor {st.get('PREDICTOR')}, expected {predictor}")
    check(bool(band.get("overviews")) == want_overviews, f"{path}: overviews {band.get('overviews')}")
    check(np.allclose(info.get("geoTransform", []), in_info.get("geoTransform", []), rtol=0, atol=1e-9),
          f"{path}: geotransform {info.get('geoTransform')} differs from the input's {in_info.get('geoTransform')}")
    check(same_srs(srs_of(info), srs_of(in_info)) if srs_of(in_info) else not srs_of(info),
          f"{path}: CRS differs from the input's")
    data = read_raster(path, expected.dtype)
    if expected.dtype.kind == "f":
        check(np.array_equal(data, expected, equal_nan=True), f"{path}: pixels differ from the HDF5's")
    else:
        check(np.array_equal(data, expected), f"{path}: pixels differ from the HDF5's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result")
    ap.add_argument("input")
    ap.add_argument("kind", choices=["projected", "geographic", "none"])
    ap.add_argument("--geotiff")
    ap.add_argument("--conncomp")
    ap.add_argument("--dolphin")
    ap.add_argument("--overviews", action="store_true")
    a = ap.parse_args()

    in_info = gdalinfo(a.input)
    h, w = in_info["size"][1], in_info["size"][0]
    georef = a.kind != "none"
    gt = in_info.get("geoTransform") if georef else [0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    check(not georef or srs_of(in_info), f"{a.input}: expected a georeferenced input")

    # --- the HDF5 as h5py sees it: the datasets and their attributes ---
    names = ["unwrapped_phase", "connected_components", "cycles", "residues", "branch_cuts"]
    optional = names[2:]  # --save-cycles, --save-residues, --save-cuts
    fills = {"unwrapped_phase": np.float32("nan"), "connected_components": 0, "cycles": -2147483647,
             "residues": -127, "branch_cuts": 255}
    ydim, xdim = ("lat", "lon") if a.kind == "geographic" else ("y", "x")
    raw = {}
    with h5py.File(a.result, "r") as f:
        check(f.attrs.get("Conventions", b"").decode() == "CF-1.8", "root attribute Conventions is not CF-1.8")
        for n in names:
            check(n in f or n in optional, f"/{n} missing")
            if n not in f:
                continue
            d = f[n]
            raw[n] = d[()]
            fv = d.attrs.get("_FillValue")
            check(fv is not None, f"/{n}: no _FillValue")
            if fv is not None:
                check(np.asarray(fv).dtype == d.dtype, f"/{n}: _FillValue of type {np.asarray(fv).dtype}, dataset {d.dtype}")
                check(np.array_equal(np.asarray(fv), np.asarray(fills[n]).astype(d.dtype), equal_nan=True),
                      f"/{n}: _FillValue {fv}, expected {fills[n]}")
            for attr in ("long_name", "units"):
                check(attr in d.attrs, f"/{n}: no {attr}")
            check((d.attrs.get("grid_mapping", b"").decode() == "spatial_ref") == georef,
                  f"/{n}: grid_mapping {d.attrs.get('grid_mapping')} (georeferenced input: {georef})")
            scales = [[s.name for s in d.dims[i].values()] for i in range(2)]
            check(scales == [["/" + ydim], ["/" + xdim]], f"/{n}: dimension scales {scales}")
        check(("spatial_ref" in f) == georef, f"spatial_ref present: {'spatial_ref' in f}, georeferenced: {georef}")
        if georef and "spatial_ref" in f:
            sr = f["spatial_ref"].attrs
            for attr in ("crs_wkt", "spatial_ref", "GeoTransform"):
                check(attr in sr, f"/spatial_ref: no {attr}")
            if "GeoTransform" in sr:
                check(np.allclose([float(v) for v in sr["GeoTransform"].decode().split()], gt, rtol=0, atol=1e-9),
                      f"/spatial_ref GeoTransform {sr['GeoTransform']} differs from the input's {gt}")

    names = [n for n in names if n in raw]

    # --- GDAL's netCDF driver ---
    for n in ("unwrapped_phase", "connected_components"):
        info = gdalinfo(f'NETCDF:"{a.result}":{n}')
        check(info["size"] == [w, h], f"NETCDF {n}: size {info['size']}")
        if georef:
            check(np.allclose(info.get("geoTransform", []), gt, rtol=0, atol=1e-9),
                  f"NETCDF {n}: geotransform {info.get('geoTransform')} differs from the input's {gt}")
            check(same_srs(srs_of(info), srs_of(in_info)), f"NETCDF {n}: CRS differs from the input's")
        else:
            check(not srs_of(info), f"NETCDF {n}: a CRS on a result without georeferencing")
    if georef:
        # The grid mapping through GDAL's own CRS tool as well.
        out = subprocess.run(["gdalsrsinfo", "-o", "epsg", f'NETCDF:"{a.result}":unwrapped_phase'],
                             capture_output=True, text=True)
        exp = subprocess.run(["gdalsrsinfo", "-o", "epsg", a.input], capture_output=True, text=True)
        check(out.returncode == 0 and out.stdout.strip() == exp.stdout.strip(),
              f"gdalsrsinfo: {out.stdout.strip()} {out.stderr.strip()} vs the input's {exp.stdout.strip()}")
        # Rows as GDAL reads them through the netCDF driver: the HDF5's, top row first.
        u = read_raster(f'NETCDF:"{a.result}":unwrapped_phase', np.float32)
        check(np.array_equal(u, raw["unwrapped_phase"], equal_nan=True), "NETCDF unwrapped_phase: pixels differ")

    # --- xarray, no options ---
    ds = xr.open_dataset(a.result, engine="h5netcdf")
    try:
        for n in names:
            check(ds[n].dims == (ydim, xdim), f"xarray {n}: dims {ds[n].dims}")
        check(xdim in ds.variables and ydim in ds.variables, f"xarray: no coordinates {ydim}, {xdim}")
        ex = gt[0] + gt[1] * (np.arange(w) + 0.5)
        ey = gt[3] + gt[5] * (np.arange(h) + 0.5)
        check(xdim in ds.variables and np.allclose(ds[xdim].values, ex, rtol=0, atol=1e-9 * max(1.0, abs(gt[0]))), f"xarray {xdim} coordinates")
        check(ydim in ds.variables and np.allclose(ds[ydim].values, ey, rtol=0, atol=1e-9 * max(1.0, abs(gt[3]))), f"xarray {ydim} coordinates")
        check(np.array_equal(ds["unwrapped_phase"].values, raw["unwrapped_phase"], equal_nan=True),
              "xarray unwrapped_phase differs from the HDF5's")
        # Decoded with the fill values: masked exactly where the HDF5 holds them.
        for n in names[1:]:
            v = ds[n].values
            fill = fills[n]
            check(np.array_equal(np.isnan(v), raw[n] == fill) and np.array_equal(v[~np.isnan(v)], raw[n][raw[n] != fill]),
                  f"xarray {n} differs from the HDF5's")
        check(("spatial_ref" in ds.variables) == georef, "xarray: spatial_ref")
        check(ds.attrs.get("Conventions") == "CF-1.8", "xarray: Conventions")
    finally:
        ds.close()
    # --- rioxarray, no options: on the xarray dataset and through rasterio (GDAL) ---
    import rioxarray  # noqa: F401  (registers .rio)

    ds = xr.open_dataset(a.result, engine="h5netcdf")
    try:
        for n in names:
            crs = ds[n].rio.crs
            if georef:
                check(crs is not None and same_srs(crs.to_wkt(), srs_of(in_info)), f"rioxarray {n}: CRS {crs}")
                t = ds[n].rio.transform()
                check(np.allclose([t.c, t.a, t.b, t.f, t.d, t.e], gt, rtol=0, atol=1e-9),
                      f"rioxarray {n}: transform {tuple(t)[:6]} differs from the input's {gt}")
            else:
                check(crs is None, f"rioxarray {n}: CRS {crs} on a result without georeferencing")
    finally:
        ds.close()
    if georef:
        r = rioxarray.open_rasterio(f'NETCDF:"{a.result}":unwrapped_phase')
        t = r.rio.transform()
        check(r.rio.crs is not None and same_srs(r.rio.crs.to_wkt(), srs_of(in_info)),
              f"rioxarray.open_rasterio: CRS {r.rio.crs}")
        check(np.allclose([t.c, t.a, t.b, t.f, t.d, t.e], gt, rtol=0, atol=1e-9),
              f"rioxarray.open_rasterio: transform {tuple(t)[:6]}")
        r.close()

    raw_ds = xr.open_dataset(a.result, engine="h5netcdf", mask_and_scale=False)
    for n in names:
        check(raw_ds[n].dtype == raw[n].dtype and np.array_equal(raw_ds[n].values, raw[n], equal_nan=True),
              f"xarray (undecoded) {n} differs from the HDF5's")
    raw_ds.close()

    # --- the GeoTIFFs ---
    u, cc = raw["unwrapped_phase"], raw["connected_components"]
    # The scene must hold both kinds of label 0 for the nodata conventions to be tested.
    check(np.isnan(u).any() and ((cc == 0) & ~np.isnan(u)).any(),
          "the scene has no invalid pixel or no valid pixel of label 0: nodata conventions untested")
    if a.geotiff:
        check_geotiff(a.geotiff, "Float32", "nan", 3, u, in_info, a.overviews)
    if a.conncomp:
        check_geotiff(a.conncomp, "UInt32", 0, 2, cc, in_info, a.overviews)
    if a.dolphin:
        check_geotiff(a.dolphin + ".unw.tif", "Float32", 0, 3, np.where(np.isnan(u), np.float32(0), u), in_info,
                      a.overviews)
        dcc = np.where(np.isnan(u), 65535, np.where(cc < 65535, cc, 0)).astype(np.uint16)
        check_geotiff(a.dolphin + ".unw.conncomp.tif", "UInt16", 65535, 2, dcc, in_info, a.overviews)

    print(f"cf_outputs_check: {a.result} ({a.kind}): {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
