// A streamed run's scratch file (--scratch DIR; docs/ARCHITECTURE.md section 5.1): one raw file
// per rank in DIR, written by the second pass and read back by the third instead of the inputs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera {

// Throws InputError(dir, ...) unless dir is an existing directory this process may create
// files in (checked before any work, also where the run turns out not to stream).
void check_scratch_dir(const std::string& dir);

// A file created exclusively under a unique name in `dir` and unlinked at once, so that no run
// leaves it behind however it ends (an exception, MPI_Abort, a signal) and no existing file is
// touched. Reads and writes at offsets (pread/pwrite: any thread, one call each at a time).
class ScratchFile {
public:
    // `reserve`: bytes the run will write, checked against the file system's free space now, so
    // that a lack of space is one line before any work (not reserved: see the constructor).
    // Throws InputError(dir, ...) when dir is missing, not a directory, not writable or too small.
    ScratchFile(const std::string& dir, int64_t reserve);
    ~ScratchFile();
    ScratchFile(const ScratchFile&) = delete;
    ScratchFile& operator=(const ScratchFile&) = delete;

    // Throw InputError(dir, ...) on a short or failed transfer (no space, an I/O error).
    void write(int64_t offset, const void* data, size_t bytes);
    void read(int64_t offset, void* data, size_t bytes) const;
    const std::string& dir() const { return dir_; }

private:
    std::string dir_;
    int fd_ = -1;
};

}  // namespace tessera
