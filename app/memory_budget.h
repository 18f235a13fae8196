// Memory checked before allocating (docs/ARCHITECTURE.md section 7, issue 14): each command
// estimates what a rank holds for its window and stops with one line when the node cannot.
#pragma once
#include <cstdint>
#include <string>

namespace tessera {

// Bytes available to this process: MemAvailable, or less under a cgroup memory limit
// (TESSERA_TEST_AVAILABLE_MEMORY overrides it for tests); -1 when unknown.
int64_t available_memory();

// Dirty page-cache bytes past which the kernel starts writing them back in the background
// (vm.dirty_background_bytes, else vm.dirty_background_ratio of the available memory); -1 when unknown.
int64_t writeback_threshold();

// Bytes this process holds now (VmRSS); 0 when unknown.
int64_t resident_memory();

// Of `limit` bytes a rank may hold (--memory-limit when `given`, else its share of what the
// node has, which excludes what is in use already), what is not the stages' to take: this
// process as it stands (libraries, open inputs) when given, and GDAL's block cache, which this
// caps at a sixteenth of the limit (8 MiB at least). 0 when limit < 0 (no limit).
int64_t memory_reserved(int64_t limit, bool given);

// Throws InputError(path, "needs about N of memory per rank for its ROWSxCOLS window (rows x
// cols), M available ...") when `bytes` exceed this rank's share of the node's available
// memory (node_ranks ranks share it). Nothing when the available memory is unknown.
void check_memory(const std::string& path, int64_t bytes, int64_t rows, int64_t cols, int64_t node_ranks);

}  // namespace tessera
