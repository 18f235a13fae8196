// Each interferogram's own coherence and mask (issue 17 item 4): `--coherence` and `--mask` name
// one file for every input, or a template filled from each input's path:
//   {dir}   its directory ("." when it has none)
//   {stem}  its file name without the last extension (as a batch's OUT_DIR/<stem>.h5)
//   {name}  its file name without any extension (up to the first dot)
// e.g. dolphin's interferograms/20200101_20200113.int.tif with '{dir}/{name}.cor.tif', or an
// ISCE2 stack's <pair>/filt_fine.int with '{dir}/filt_fine.cor' (its .cor has 2 bands:
// --coherence-band 2).
#pragma once
#include <mpi.h>

#include <string>

#include "io/raster_reader.h"
#include "pipeline/unwrap_pipeline.h"

namespace tessera {

// Whether `s` is a template (holds a '{').
bool is_partner_template(const std::string& s);

// The partner of `input`: `tmpl` with its fields filled, or `tmpl` itself when it is not a
// template (also when empty). Throws InputError::everywhere naming `option` for an unknown
// field or an unclosed brace (the same on every rank).
std::string partner_file(const std::string& tmpl, const std::string& input, const std::string& option);

// The coherence and mask (o.coherence, o.mask: files or templates) of input `in` (header `ri`):
// their files open, their bands are chosen (io/raster_reader.h auxiliary_band) and, with
// `same_size`, their size is the input's. Checked before any work, so that a stack with a missing
// partner fails at once; InputError naming the interferogram, the template and the problem.
void check_partners(const std::string& in, const RasterInfo& ri, const UnwrapOptions& o, bool same_size);

// One run (not a batch): o.coherence and o.mask filled for o.input when they are templates, after
// check_partners (errors agreed on over `comm`, section 7). Collective when either is a template.
void use_own_partners(UnwrapOptions& o, MPI_Comm comm);

}  // namespace tessera
