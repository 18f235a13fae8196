// Bad input: one line naming the file and the problem (ARCHITECTURE.md section 7).
#pragma once
#include <stdexcept>
#include <string>

namespace tessera {

class InputError : public std::runtime_error {
public:
    InputError(const std::string& file, const std::string& problem)
        : std::runtime_error(file + ": " + problem) {}
};

}  // namespace tessera
