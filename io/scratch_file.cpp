#include "io/scratch_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/input_error.h"

namespace tessera {

namespace {

std::string mib(int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// A new file in dir, open for reading and writing, without a name (or of a unique one, already unlinked).
int create_unlinked(const std::string& dir) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0)
        throw InputError(dir, std::string("--scratch: ") + (errno == ENOENT ? "no such directory" : std::strerror(errno)));
    if (!S_ISDIR(st.st_mode)) throw InputError(dir, "--scratch: not a directory");
    // A file without a name (Linux, most local file systems): nothing for a signal to leave behind.
    const int anon = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (anon >= 0) return anon;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        throw InputError(dir, std::string("--scratch: cannot create a file there: ") + std::strerror(errno));
    std::string name = dir + "/.tessera-scratch-" + std::to_string(getpid()) + "-XXXXXX";
    std::vector<char> tmpl(name.begin(), name.end());
    tmpl.push_back('\0');
    const int fd = mkostemp(tmpl.data(), O_CLOEXEC);  // O_EXCL: never an existing file
    if (fd < 0) throw InputError(dir, std::string("--scratch: cannot create a file there: ") + std::strerror(errno));
    // Unlinked at once: the space lives as long as the descriptor, the name not at all (section 5.1).
    if (unlink(tmpl.data()) != 0) {
        const int e = errno;
        close(fd);
        throw InputError(dir, std::string("--scratch: cannot remove its own file: ") + std::strerror(e));
    }
    return fd;
}

}  // namespace

void check_scratch_dir(const std::string& dir) { close(create_unlinked(dir)); }

ScratchFile::ScratchFile(const std::string& dir, int64_t reserve) : dir_(dir), fd_(create_unlinked(dir)) {
    // Free space checked, not reserved: writing into fallocate's unwritten extents cost 7x a plain
    // write on this ext4 (bench/results/cpu_streamed_scratch.md); a later shortage fails the pass.
    struct statvfs vfs {};
    if (reserve <= 0 || fstatvfs(fd_, &vfs) != 0) return;
    const int64_t free_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (free_bytes < reserve) {
        close(fd_);
        throw InputError(dir, "--scratch: not enough space: the run writes " + mib(reserve) + " a rank here, " +
                                  mib(free_bytes) + " free");
    }
}

ScratchFile::~ScratchFile() {
    if (fd_ >= 0) close(fd_);
}

void ScratchFile::write(int64_t offset, const void* data, size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = pwrite(fd_, p, bytes, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw InputError(dir_, std::string("--scratch: write failed: ") + (n < 0 ? std::strerror(errno) : "no space"));
        p += n, offset += n, bytes -= static_cast<size_t>(n);
    }
}

void ScratchFile::read(int64_t offset, void* data, size_t bytes) const {
    char* p = static_cast<char*>(data);
    while (bytes > 0) {
        const ssize_t n = pread(fd_, p, bytes, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw InputError(dir_, std::string("--scratch: read failed: ") + (n < 0 ? std::strerror(errno) : "file too short"));
        p += n, offset += n, bytes -= static_cast<size_t>(n);
    }
}

}  // namespace tessera
