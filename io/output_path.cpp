#include "io/output_path.h"

#include <unistd.h>

#include <filesystem>

#include "io/input_error.h"

namespace tessera {

void check_output_directory(const std::string& path) {
    namespace fs = std::filesystem;
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::exists(dir, ec)) throw InputError(path, "output directory '" + dir.string() + "' does not exist");
    if (!fs::is_directory(dir, ec)) throw InputError(path, "'" + dir.string() + "' is not a directory");
    if (access(dir.c_str(), W_OK) != 0) throw InputError(path, "output directory '" + dir.string() + "' is not writable");
}

}  // namespace tessera
