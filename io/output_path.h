// Output paths: fail before any work when an output cannot or must not be written (section 7).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// Throws InputError(path, ...) when the parent directory is missing, not a directory,
// or not writable.
void check_output_directory(const std::string& path);

// The local file a GDAL dataset name reads: the name itself, the file of a connection string
// (HDF5:"f.h5"://grp/ds, HDF5:f.h5://ds, NETCDF:"f.nc":var, ...) or of a /vsi path
// (/vsigzip/f.gz, /vsizip/f.zip/inner.tif, /vsitar/{f.tar}/x, /vsisubfile/0_100,f ...).
// "" when no local file is behind it (remote /vsicurl/, /vsimem/, a missing file).
std::string local_file_behind(const std::string& gdal_name);

// Checks before any work (section 7), throwing InputError naming the output when:
//  - its directory is missing, not a directory or not writable;
//  - it exists but is not a regular file (/dev/null, a FIFO, a directory, a socket);
//  - it is the same file (device and inode, through links) as an input, or as another output;
//  - it exists and `overwrite` is false ("use --overwrite to replace it").
// `inputs` are GDAL dataset names (empty strings are skipped); so are empty outputs.
void check_outputs(const std::vector<std::string>& outputs, const std::vector<std::string>& inputs,
                   bool overwrite);

// "N bytes (x.y MiB)" or "(x.y GiB)".
std::string bytes_text(int64_t bytes);

struct OutputNeed {
    std::string path;
    int64_t bytes;  // estimated size of the finished file
};
// Throws InputError naming the output whose file system (statvfs of its directory, the space
// an unprivileged user may use) cannot hold it, with the outputs before it on the same file
// system: "needs about N bytes of disk space, M bytes available in DIR". Outputs whose
// directory cannot be examined are skipped. TESSERA_TEST_AVAILABLE_DISK overrides M (tests).
void check_disk_space(const std::vector<OutputNeed>& needs);

}  // namespace tessera
