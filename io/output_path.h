// Output paths: fail before any work when an output cannot be written (section 7).
#pragma once
#include <string>

namespace tessera {

// Throws InputError(path, ...) when the parent directory is missing, not a directory,
// or not writable.
void check_output_directory(const std::string& path);

}  // namespace tessera
