#include "io/unwrap_result_writer.h"

#include <cmath>
#include <string>

#include "io/cf_grid.h"

namespace tessera {

namespace {

// netCDF's default fill values (netcdf.h NC_FILL_INT, NC_FILL_BYTE, NC_FILL_UBYTE): never written
// to /cycles, /residues, /branch_cuts, whose every pixel holds a value (0 included).
constexpr int64_t kFillInt32 = -2147483647, kFillInt8 = -127, kFillUInt8 = 255;

// The 2-D datasets a result may hold (write_unwrap_datasets), in the order they are written.
const char* const kResultDatasets[] = {"unwrapped_phase", "connected_components", "cycles", "residues", "branch_cuts"};

std::vector<Attribute> with_cf(std::vector<Attribute> attrs, const char* long_name, const char* units) {
    attrs.push_back({"long_name", std::string(long_name)});
    attrs.push_back({"units", std::string(units)});
    return attrs;
}

std::vector<Attribute> phase_attributes() {
    return with_cf({{"description", std::string("unwrapped phase u = phi + 2 pi k (minus reference_phase with "
                                                "--reference: u = 0 at REF_Y, REF_X); NaN where invalid")},
                    {"_FillValue", std::nan("")}},
                   "unwrapped phase", "radians");
}

// write_unwrap_datasets' writes, in the order of kResultDatasets.
void write_datasets(Hdf5Writer& out, const UnwrapResultWindow& r, int compress_phase) {
    // A noisy float phase deflates about 1.3x at ~45 MB/s per core (README): off by default.
    out.set_deflate(compress_phase);
    out.write_f32("unwrapped_phase", r.own, r.u, r.stride, phase_attributes());
    out.set_deflate(1);
    out.write_labels("connected_components", r.own, r.label, r.label_bytes, r.stride,
                     with_cf({{"description", std::string("connected component 1..N by size descending; 0 = invalid, "
                                                          "low coherence or small component")},
                              {"_FillValue", int64_t{0}}},
                             "connected component", "1"));
    if (r.cycles)
        out.write_i32("cycles", r.own, r.cycles, r.stride,
                      with_cf({{"description", std::string("integer cycles k: u = phi + 2 pi k (0 where invalid)")},
                               {"_FillValue", kFillInt32}},
                              "integer cycles", "1"));
    if (r.residues)
        out.write_i8("residues", r.own, r.residues, r.own.cols,
                     with_cf({{"description", std::string("residue charge of plaquette (r,c), corners (r,c)..(r+1,c+1)")},
                              {"_FillValue", kFillInt8}},
                             "residue charge", "1"));
    if (r.cuts)
        out.write_u8("branch_cuts", r.own, r.cuts, r.own.cols,
                     with_cf({{"description", std::string("blocked edges: bit 0 right edge, bit 1 down edge (cuts and edges touching "
                                                          "invalid pixels); bit 2: the pixel's cycles corrected from its neighbours")},
                              {"_FillValue", kFillUInt8}},
                             "blocked edges", "1"));
}

}  // namespace

void prepare_unwrap_result(Hdf5Writer& out, int compress_phase, int threads) {
    out.set_deflate(compress_phase);
    out.prepare_f32("unwrapped_phase", phase_attributes(), threads);
}

void write_unwrap_result(Hdf5Writer& out, const UnwrapResultWindow& r, int compress_phase,
                         const std::vector<Attribute>& root_attributes) {
    write_unwrap_datasets(out, r, compress_phase);
    finish_unwrap_result(out, root_attributes);
}

void write_unwrap_datasets(Hdf5Writer& out, const UnwrapResultWindow& r, int compress_phase) {
    // The phase's copy into the file beside the compressed datasets' (section 7).
    out.write_beside([&] { write_datasets(out, r, compress_phase); });
}

void finish_unwrap_result(Hdf5Writer& out, const std::vector<Attribute>& root_attributes) {
    // netCDF-4/CF-1.8 (section 7): the grid of the input's georeferencing, which the root
    // attributes carry, made once the datasets exist.
    const CfGrid grid = cf_grid(georef_of_attributes(root_attributes), out.rows(), out.cols());
    out.write_coordinate(grid.y.name, grid.y.values, grid.y.attributes);
    out.write_coordinate(grid.x.name, grid.x.values, grid.x.attributes);
    if (!grid.grid_mapping.empty()) out.write_scalar_variable(grid.grid_mapping, grid.grid_mapping_attributes);
    for (const char* name : kResultDatasets) {
        if (!out.has_dataset(name)) continue;
        out.attach_dimensions(name, {grid.y.name, grid.x.name});
        // As xarray writes rioxarray's datasets: the grid mapping also a (scalar) coordinate of
        // each variable, so that rioxarray finds the CRS with no options; GDAL reads it as before.
        if (!grid.grid_mapping.empty())
            out.write_dataset_attributes(name, {{"grid_mapping", grid.grid_mapping}, {"coordinates", grid.grid_mapping}});
    }
    std::vector<Attribute> root = root_attributes;
    root.push_back({"Conventions", std::string(kCfConventions)});
    out.write_attributes(root);
}

}  // namespace tessera
