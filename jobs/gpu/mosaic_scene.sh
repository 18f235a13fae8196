# Sourced by the device scripts with $d (a scratch folder) and $mosaic (ROWSxCOLS) set: a topo scene
# of an eighth of each side and $d/mosaic.vrt, eight copies side by side and eight rows of them
# (sources placed by hand): the NISAR-size scene of issue 16 without its 20 GB on disk.
R=${mosaic%x*} C=${mosaic#*x}; br=$((R / 8)) bc=$((C / 8))
tessera synth --overwrite --case topo --size ${br}x${bc} --seed 3 "$d" >/dev/null
{
  echo "<VRTDataset rasterXSize=\"$C\" rasterYSize=\"$R\"><VRTRasterBand dataType=\"Float32\" band=\"1\">"
  for i in 0 1 2 3 4 5 6 7; do for j in 0 1 2 3 4 5 6 7; do
    echo "<SimpleSource><SourceFilename relativeToVRT=\"1\">topo_wrapped.tif</SourceFilename><SourceBand>1</SourceBand><SrcRect xOff=\"0\" yOff=\"0\" xSize=\"$bc\" ySize=\"$br\"/><DstRect xOff=\"$((j * bc))\" yOff=\"$((i * br))\" xSize=\"$bc\" ySize=\"$br\"/></SimpleSource>"
  done; done
  echo "</VRTRasterBand></VRTDataset>"
} > "$d/mosaic.vrt"
