#!/usr/bin/env bash
# The result as the InSAR tools read it (issue 17), on NP ranks: a projected (UTM), a geographic
# (EPSG:4326) and an un-georeferenced input of one synthetic scene are unwrapped with every
# dataset and every GeoTIFF, then tests/io/cf_outputs_check.py compares each with the input
# through GDAL, xarray and h5py.
# usage: cf_outputs.sh MPIEXEC TESSERA NP PYTHON3
set -euo pipefail
mpiexec=$1 tessera=$2 np=$3 python=$4
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/tessera_cf_outputs.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { "$mpiexec" --oversubscribe -np "$np" -x OMP_NUM_THREADS=1 "$tessera" "$@"; }

"$tessera" synth --case holes --size 600x520 "$work/s" >/dev/null
gdal_translate -q -a_srs EPSG:4326 -a_ullr -118.5 35.3 -118.24 35.0 "$work/s/holes_wrapped.tif" "$work/geo.tif"
# No georeferencing: a VRT of the scene without its GeoTransform and SRS.
gdal_translate -q -of VRT "$work/s/holes_wrapped.tif" "$work/plain.vrt"
sed -i '/<SRS.*<\/SRS>/d; /<GeoTransform>/d' "$work/plain.vrt"

status=0
# chunked: the projected input in chunks (--chunk-rows, section 5.1): the HDF5 written window
# by window, the GeoTIFFs copied from it.
for kind in projected chunked geographic none; do
  case $kind in
    projected | chunked) in=$work/s/holes_wrapped.tif ;;
    geographic) in=$work/geo.tif ;;
    none) in=$work/plain.vrt ;;
  esac
  extra=() limit=()
  [[ $kind == projected || $kind == chunked ]] && extra=(--overviews)
  [[ $kind == chunked ]] && limit=(--chunk-rows 128)
  out=$work/$kind
  # --min-component-size: a region of finite phase gets label 0 (the nodata conventions need both kinds)
  run unwrap "$in" "$out.h5" --coherence "$work/s/holes_coherence.tif" --min-coherence 0.3 --tile-size 128 --min-component-size 150000 \
      --save-cycles --save-residues --save-cuts --geotiff "$out.u.tif" --conncomp-geotiff "$out.cc.tif" \
      --dolphin "$out" "${extra[@]}" "${limit[@]}" -q
  "$python" "$here/cf_outputs_check.py" "$out.h5" "$in" "${kind/chunked/projected}" --geotiff "$out.u.tif" \
      --conncomp "$out.cc.tif" --dolphin "$out" "${extra[@]}" || status=1
done
# The GeoTIFFs are outputs like the others (io/output_set.h): an existing one is refused without
# --overwrite and left as it was, and so is a dolphin name that is the input.
p=$work/projected
before=$(md5sum "$p.h5" "$p.cc.tif" "$p.unw.conncomp.tif")
if run unwrap "$work/s/holes_wrapped.tif" "$work/again.h5" --conncomp-geotiff "$p.cc.tif" -q 2>"$work/err"; then
  echo "FAIL: an existing --conncomp-geotiff output was replaced without --overwrite"; status=1
fi
grep -q "$p.cc.tif" "$work/err" || { echo "FAIL: the refusal does not name $p.cc.tif: $(cat "$work/err")"; status=1; }
cp "$work/s/holes_wrapped.tif" "$work/in.unw.tif"
if run unwrap "$work/in.unw.tif" "$work/again.h5" --dolphin "$work/in" --overwrite -q 2>"$work/err"; then
  echo "FAIL: --dolphin writing over the input was not refused"; status=1
fi
[[ $(md5sum "$p.h5" "$p.cc.tif" "$p.unw.conncomp.tif") == "$before" ]] || { echo "FAIL: a refused run changed outputs"; status=1; }
cmp -s "$work/in.unw.tif" "$work/s/holes_wrapped.tif" || { echo "FAIL: a refused run changed its input"; status=1; }
[[ ! -e $work/again.h5 ]] || { echo "FAIL: a refused run left $work/again.h5"; status=1; }
exit $status
