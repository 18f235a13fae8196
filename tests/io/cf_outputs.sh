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
for kind in projected geographic none; do
  case $kind in
    projected) in=$work/s/holes_wrapped.tif ;;
    geographic) in=$work/geo.tif ;;
    none) in=$work/plain.vrt ;;
  esac
  extra=()
  [[ $kind == projected ]] && extra=(--overviews)
  out=$work/$kind
  run unwrap "$in" "$out.h5" --coherence "$work/s/holes_coherence.tif" --min-coherence 0.3 --tile-size 128 \
      --save-cycles --save-residues --save-cuts --geotiff "$out.u.tif" --conncomp-geotiff "$out.cc.tif" \
      --dolphin "$out" "${extra[@]}" -q
  "$python" "$here/cf_outputs_check.py" "$out.h5" "$in" "$kind" --geotiff "$out.u.tif" --conncomp "$out.cc.tif" \
      --dolphin "$out" "${extra[@]}" || status=1
done
exit $status
