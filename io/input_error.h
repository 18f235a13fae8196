// Bad input: one line naming the file and the problem (ARCHITECTURE.md section 7).
#pragma once
#include <stdexcept>
#include <string>

namespace tessera {

class InputError : public std::runtime_error {
public:
    InputError(const std::string& file, const std::string& problem)
        : std::runtime_error(file + ": " + problem) {}
    // Thrown alike on every rank after they agreed: rank 0 reports it, no MPI_Abort needed.
    static InputError everywhere(const std::string& line) {
        InputError e(line);
        e.everywhere_ = true;
        return e;
    }
    bool is_everywhere() const { return everywhere_; }

private:
    explicit InputError(const std::string& line) : std::runtime_error(line) {}
    bool everywhere_ = false;
};

}  // namespace tessera
