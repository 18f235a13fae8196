#!/usr/bin/env bash
# On the GPU host, from an unpacked bundle (issue 16): the NISAR-size topo mosaic VRT read with the
# VRT's default blocks (128 x 128) and with blocks of its sources' tiles (256 x 256), alternating,
# end to end (`tessera unwrap --backend cuda`, TESSERA_TRACE=1): does the strip height the reader
# takes from the VRT's blocks cost pass 1 its reads?
#   bash jobs/gpu/device_vrt_blocks.sh BUNDLE_DIR [ROWSxCOLS] [ROUNDS]
set -u
b=$1 size=${2:-69696x70560} rounds=${3:-2}
. "$b/env.sh"
export OMP_NUM_THREADS=$(nproc)
d=$(mktemp -d -p /tmp)
R=${size%x*} C=${size#*x}; br=$((R / 8)) bc=$((C / 8))
tessera synth --overwrite --case topo --size ${br}x${bc} --seed 3 "$d" >/dev/null
for blk in default 256; do
  attr=; [ "$blk" = default ] || attr=" blockXSize=\"$blk\" blockYSize=\"$blk\""
  {
    echo "<VRTDataset rasterXSize=\"$C\" rasterYSize=\"$R\"><VRTRasterBand dataType=\"Float32\" band=\"1\"$attr>"
    for i in 0 1 2 3 4 5 6 7; do for j in 0 1 2 3 4 5 6 7; do
      echo "<SimpleSource><SourceFilename relativeToVRT=\"1\">topo_wrapped.tif</SourceFilename><SourceBand>1</SourceBand><SrcRect xOff=\"0\" yOff=\"0\" xSize=\"$bc\" ySize=\"$br\"/><DstRect xOff=\"$((j * bc))\" yOff=\"$((i * br))\" xSize=\"$bc\" ySize=\"$br\"/></SimpleSource>"
    done; done
    echo "</VRTRasterBand></VRTDataset>"
  } > "$d/mosaic_$blk.vrt"
done
for k in $(seq "$rounds"); do
  for blk in default 256; do
    rm -f "$d/out.h5"
    TESSERA_TRACE=1 tessera unwrap --backend cuda --tile-size 1024 "$d/mosaic_$blk.vrt" "$d/out.h5" 2>&1 |
      grep -E "chunks/pass|matching  |Mpixel" | tr -s ' ' | tr '\n' ';'
    echo " <- VRT blocks $blk, round $k"
  done
done
rm -rf "$d"
