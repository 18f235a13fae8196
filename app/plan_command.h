// `tessera plan IN [options] [--ranks N]`: how `tessera unwrap` would lay the run out (docs/
// ARCHITECTURE.md section 5.1, pipeline/chunk_plan.h) -- the rank grid, one piece or chunks,
// memory per rank, passes and I/O -- printed without running it.
#pragma once
#include <functional>

namespace CLI {
class App;
}

namespace tessera {

// Registers `plan` on app; once it is parsed, `run` prints the plan (it throws on bad input:
// app/error_report.h reports). Returns the subcommand.
CLI::App* add_plan_command(CLI::App& app, std::function<void()>& run);

}  // namespace tessera
