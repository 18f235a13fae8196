// Setup errors agreed on by every rank (ARCHITECTURE.md section 7): bad input gives one line
// on every rank and a non-zero exit everywhere, never a rank left waiting in a collective.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "io/input_error.h"
#include "partition/comm.h"

namespace tessera {

// Collective over `comm`. Every rank passes the index of the first item it found bad (-1 if
// none) and that item's message; if any rank found one, every rank throws
// InputError::everywhere with the message of the lowest index (lowest rank on a tie).
void agree_on_first_error(Comm& comm, int64_t bad_index, const std::string& message);

// Runs step on every rank; if it threw InputError anywhere, the lowest failing rank's line is
// thrown as InputError::everywhere on every rank (collective). Other exceptions pass through.
void agree_on_errors(Comm& comm, const std::function<void()>& step);

}  // namespace tessera
