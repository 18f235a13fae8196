// An image held by the ranks in row bands (rank r: rows [H r / P, H (r + 1) / P)), handed to
// rank 0 band by band (a picture written by one process: app/clahe_command.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "partition/comm.h"

namespace tessera {

// Rank 0 gets every rank's row band in rank order, in messages of at most 64 MiB, and
// passes them to sink(row0, rows, data); the other ranks send theirs. An exception in
// sink is remembered and the rest is still received (so no rank waits forever); the
// outcome is agreed on: InputError::everywhere when rank 0 failed (`out` names the output).
void stream_bands_to_root(Comm& comm, int64_t H, int64_t W, const void* own_data, size_t px_bytes,
                          const std::function<void(int64_t, int64_t, const void*)>& sink, const std::string& out);

}  // namespace tessera
