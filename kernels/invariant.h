// Internal invariants (docs/ARCHITECTURE.md section 7): a broken one is a bug in tessera, not
// bad input; it ends the run through the one error path with a line naming what broke and where.
#pragma once
#include <stdexcept>
#include <string>

namespace tessera {

class InvariantError : public std::logic_error {
public:
    InvariantError(const std::string& what, const char* file, int line, bool everywhere = false)
        : std::logic_error("internal error: " + what + " (" + file + ":" + std::to_string(line) +
                           "; please report this input)"),
          everywhere_(everywhere) {}
    // Found alike on every rank (a global count): rank 0 reports it, no MPI_Abort needed.
    bool is_everywhere() const { return everywhere_; }

private:
    bool everywhere_;
};

}  // namespace tessera

// Throws InvariantError naming `what` when `cond` is false; _EVERYWHERE where every rank
// evaluates the same `cond` (collective results).
#define TESSERA_INVARIANT(cond, what)                                                          \
    do {                                                                                       \
        if (!(cond)) throw ::tessera::InvariantError((what), __FILE__, __LINE__);              \
    } while (0)
#define TESSERA_INVARIANT_EVERYWHERE(cond, what)                                               \
    do {                                                                                       \
        if (!(cond)) throw ::tessera::InvariantError((what), __FILE__, __LINE__, true);        \
    } while (0)
