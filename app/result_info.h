// `tessera info` (issue 17 item 7): one screen per result file: how much of the valid phase
// was labelled, the components by size, the datasets, and the run's parameters and counts (the
// root attributes, README "Output (HDF5)").
#pragma once
#include <functional>
#include <string>

namespace tessera {

// The report of result `path` (io/hdf5_writer.h summarize_result; InputError for a file that is
// not a readable tessera result). progress() is called after each block of rows read.
std::string result_info(const std::string& path, const std::function<void()>& progress = {});

}  // namespace tessera
