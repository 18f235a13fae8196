#include "app/error_report.h"

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string>

#include "io/input_error.h"
#include "io/output_set.h"
#include "kernels/invariant.h"

namespace tessera {

namespace {

int report(const std::string& msg, int code, bool everywhere) {
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (everywhere) {
        if (rank == 0) std::fprintf(stderr, "tessera: error: %s\n", msg.c_str());
    } else if (size > 1) {
        std::fprintf(stderr, "tessera: error (rank %d): %s\n", rank, msg.c_str());
    } else {
        std::fprintf(stderr, "tessera: error: %s\n", msg.c_str());
    }
    std::fflush(nullptr);
    if (!everywhere && size > 1) {
        // MPI_Abort ends every rank (SIGTERM: their handlers remove their temporaries); this one's first.
        remove_registered_temporaries();
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    MPI_Finalize();
    return code;
}

}  // namespace

int run_reporting_errors(const std::function<int()>& command) {
    int code = 0;
    try {
        code = command();
    } catch (const InputError& e) {
        return report(e.what(), 2, e.is_everywhere());
    } catch (const InvariantError& e) {
        return report(e.what(), 3, e.is_everywhere());
    } catch (const std::exception& e) {
        return report(e.what(), 3, false);
    }
    MPI_Finalize();
    return code;
}

}  // namespace tessera
