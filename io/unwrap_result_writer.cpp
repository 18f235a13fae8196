#include "io/unwrap_result_writer.h"

#include <cmath>
#include <string>

namespace tessera {

void write_unwrap_result(Hdf5Writer& out, const UnwrapResultWindow& r, int compress_phase,
                         const std::vector<Attribute>& root_attributes) {
    write_unwrap_datasets(out, r, compress_phase);
    out.write_attributes(root_attributes);
}

void write_unwrap_datasets(Hdf5Writer& out, const UnwrapResultWindow& r, int compress_phase) {
    const double nan = std::nan("");
    // A noisy float phase deflates about 1.3x at ~45 MB/s per core (README): off by default.
    out.set_deflate(compress_phase);
    out.write_f32("unwrapped_phase", r.own, r.u, r.stride,
                  {{"units", std::string("radians")},
                   {"description", std::string("unwrapped phase u = phi + 2 pi k (minus reference_phase with "
                                               "--reference: u = 0 at REF_Y, REF_X); NaN where invalid")},
                   {"_FillValue", nan}});
    out.set_deflate(1);
    out.write_labels("connected_components", r.own, r.label, r.label_bytes, r.stride,
                     {{"description", std::string("connected component 1..N by size descending; 0 = invalid, low "
                                                  "coherence or small component")}});
    if (r.cycles)
        out.write_i32("cycles", r.own, r.cycles, r.stride,
                      {{"description", std::string("integer cycles k: u = phi + 2 pi k (0 where invalid)")}});
    if (r.residues)
        out.write_i8("residues", r.own, r.residues, r.own.cols,
                     {{"description", std::string("residue charge of plaquette (r,c), corners (r,c)..(r+1,c+1)")}});
    if (r.cuts)
        out.write_u8("branch_cuts", r.own, r.cuts, r.own.cols,
                     {{"description", std::string("blocked edges: bit 0 right edge, bit 1 down edge (cuts and "
                                                  "edges touching invalid pixels)")}});
}

}  // namespace tessera
