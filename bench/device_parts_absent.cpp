// A build without CUDA: the benchmarks' device parts are absent (bench/device_parts.h).
#include "bench/device_parts.h"

namespace tessera::bench {

void* pinned_alloc(size_t) { return nullptr; }
void pinned_free(void*) {}
bool device_ready(std::string&) { return false; }
std::vector<ResidentRun> resident_stage_runs(const SynthScene&, int64_t, float*, uint8_t*, uint32_t*, int) { return {}; }
int device_kernel_rows(const KernelCase&) { return -1; }

}  // namespace tessera::bench
