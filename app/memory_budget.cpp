#include "app/memory_budget.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "io/gdal_session.h"
#include "io/input_error.h"
#include "io/output_path.h"

namespace tessera {

namespace {

// The number a /proc or /sys file starts with; -1 when it has none ("max": no limit) or is absent.
int64_t read_num(const char* path) {
    int64_t v = -1;
    if (FILE* f = std::fopen(path, "r")) {
        if (std::fscanf(f, "%" SCNd64, &v) != 1) v = -1;
        std::fclose(f);
    }
    return v;
}

}  // namespace

int64_t available_memory() {
    int64_t avail = -1;
    if (FILE* f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %" SCNd64 " kB", &avail) == 1) {
                avail *= 1024;
                break;
            }
        std::fclose(f);
    }
    const int64_t limit = read_num("/sys/fs/cgroup/memory.max");        // cgroup v2
    const int64_t used = read_num("/sys/fs/cgroup/memory.current");
    if (limit > 0 && used >= 0 && (avail < 0 || limit - used < avail)) avail = std::max<int64_t>(limit - used, 0);
    const int64_t limit1 = read_num("/sys/fs/cgroup/memory/memory.limit_in_bytes");  // cgroup v1
    const int64_t used1 = read_num("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    if (limit1 > 0 && limit1 < (int64_t{1} << 60) && used1 >= 0 && (avail < 0 || limit1 - used1 < avail))
        avail = std::max<int64_t>(limit1 - used1, 0);
    if (const char* t = std::getenv("TESSERA_TEST_AVAILABLE_MEMORY")) avail = std::atoll(t);  // tests
    return avail;
}

int64_t writeback_threshold() {
    if (const int64_t bytes = read_num("/proc/sys/vm/dirty_background_bytes"); bytes > 0) return bytes;
    const int64_t ratio = read_num("/proc/sys/vm/dirty_background_ratio"), avail = available_memory();
    return ratio >= 0 && avail >= 0 ? avail / 100 * ratio : -1;
}

int64_t resident_memory() {
    int64_t kb = 0;
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "VmRSS: %" SCNd64 " kB", &kb) == 1) break;
        std::fclose(f);
    }
    return kb * 1024;
}

int64_t memory_reserved(int64_t limit, bool given) {
    if (limit < 0) return 0;
    return cap_raster_cache(std::max<int64_t>(int64_t{8} << 20, limit / 16)) + (given ? resident_memory() : 0);
}

void check_memory(const std::string& path, int64_t bytes, int64_t rows, int64_t cols, int64_t node_ranks) {
    const int64_t avail = available_memory();
    if (avail < 0 || bytes <= avail / node_ranks) return;
    throw InputError(path, "needs about " + bytes_text(bytes) + " of memory per rank for its " + std::to_string(rows) +
                               "x" + std::to_string(cols) + " window (rows x cols), " + bytes_text(avail / node_ranks) +
                               " available" +
                               (node_ranks > 1 ? " to each of the node's " + std::to_string(node_ranks) + " ranks"
                                               : std::string()) +
                               "; use more ranks or nodes");
}

}  // namespace tessera
