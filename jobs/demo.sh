#!/usr/bin/env bash
# README command 1: set up, build, write the default synthetic scene as GeoTIFF and unwrap it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash jobs/setup.sh
out=${TESSERA_DEMO_DIR:-demo}
size=${TESSERA_DEMO_SIZE:-2048x2048}
./build/tessera synth --overwrite --case holes --size "$size" --seed 1 "$out" >/dev/null
./build/tessera unwrap --overwrite "$out/holes_wrapped.tif" "$out/holes_unwrapped.h5" \
    --coherence "$out/holes_coherence.tif" --min-coherence 0.3 \
    --geotiff "$out/holes_unwrapped.tif" --quicklook "$out/holes_quicklook.png"
echo
echo "result: $out/holes_unwrapped.h5 (GeoTIFF $out/holes_unwrapped.tif, quicklook $out/holes_quicklook.png); describe it with:"
echo "  ./build/tessera info $out/holes_unwrapped.h5"
