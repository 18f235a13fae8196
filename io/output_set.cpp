// Outputs created safely and committed together; see output_set.h.
#include "io/output_set.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>

#include "io/input_error.h"

namespace tessera {

namespace {

// --- signal cleanup registry -------------------------------------------------------------
constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
volatile sig_atomic_t g_used[kSlots];
std::mutex g_registry_mutex;

thread_local OutputSet* t_active = nullptr;

mode_t file_mode() {
    static const mode_t mode = [] {
        const mode_t m = umask(022);
        umask(m);
        return static_cast<mode_t>(0666 & ~m);
    }();
    return mode;
}

// Signals that end a run are held back while the outputs are renamed into place.
class BlockEndSignals {
public:
    BlockEndSignals() {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGINT);
        sigaddset(&s, SIGTERM);
        sigaddset(&s, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &s, &old_);
    }
    ~BlockEndSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

private:
    sigset_t old_;
};

// A fresh name "<base>.<tag>.XXXXXX" for a hard link; "" when none could be made.
std::string link_aside(const std::string& path) {
    static thread_local std::mt19937_64 rng(std::random_device{}());
    for (int attempt = 0; attempt < 16; ++attempt) {
        char suffix[32];
        std::snprintf(suffix, sizeof suffix, ".old.%06llx", static_cast<unsigned long long>(rng() & 0xffffff));
        const std::string name = path + suffix;
        if (link(path.c_str(), name.c_str()) == 0) return name;
        if (errno != EEXIST) return {};
    }
    return {};
}

// rename(2) that, unless `replace`, fails with EEXIST when `to` exists.
int move_into_place(const std::string& from, const std::string& to, bool replace) {
    if (replace) return std::rename(from.c_str(), to.c_str());
    if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    // File systems without RENAME_NOREPLACE: link(2) refuses an existing name too.
    if (link(from.c_str(), to.c_str()) != 0) return -1;
    unlink(from.c_str());
    return 0;
}

extern "C" void on_end_signal(int sig) {
    remove_registered_temporaries();
    // SA_RESETHAND restored the default action; the signal is delivered again on return.
    raise(sig);
}

}  // namespace

// --- registry ----------------------------------------------------------------------------

void register_temporary(const std::string& path) {
    if (path.empty() || path.size() >= kPathMax) return;
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    for (int i = 0; i < kSlots; ++i)
        if (g_used[i] && path == g_paths[i]) return;  // once
    for (int i = 0; i < kSlots; ++i)
        if (!g_used[i]) {
            std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
            std::atomic_signal_fence(std::memory_order_seq_cst);
            g_used[i] = 1;
            return;
        }
}

void unregister_temporary(const std::string& path) {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    for (int i = 0; i < kSlots; ++i)
        if (g_used[i] && path == g_paths[i]) {
            g_used[i] = 0;
            return;
        }
}

void remove_registered_temporaries() noexcept {
    for (int i = 0; i < kSlots; ++i)
        if (g_used[i]) unlink(g_paths[i]);
}

void install_signal_cleanup() {
    struct sigaction sa {};
    sa.sa_handler = on_end_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// --- temporaries -------------------------------------------------------------------------

std::string create_temporary(const std::string& final_path) {
    if (final_path.empty()) throw InputError(final_path, "empty output path");
    static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static thread_local std::mt19937_64 rng(std::random_device{}());
    int e = EEXIST;
    for (int attempt = 0; attempt < 64 && e == EEXIST; ++attempt) {
        std::string name = final_path + ".tmp.XXXXXX";
        for (size_t i = name.size() - 6; i < name.size(); ++i) name[i] = kChars[rng() % (sizeof kChars - 1)];
        // Registered before it exists, so a signal that ends the run removes it whenever it comes,
        // from any thread (registered, not yet made: the handler's unlink finds nothing). O_EXCL:
        // neither an existing file nor a planted link is ever opened.
        register_temporary(name);
        const int fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, file_mode());
        if (fd >= 0) {
            close(fd);
            return name;
        }
        e = errno;
        unregister_temporary(name);
    }
    std::string dir = final_path.substr(0, final_path.find_last_of('/') == std::string::npos ? 0 : final_path.find_last_of('/'));
    if (dir.empty()) dir = final_path.find('/') == 0 ? "/" : ".";
    struct stat st {};
    if (e == ENOENT && stat(dir.c_str(), &st) != 0)
        throw InputError(final_path, "output directory '" + dir + "' does not exist");
    if (e == ENOTDIR) throw InputError(final_path, "output directory '" + dir + "' is not a directory");
    throw InputError(final_path, "output directory '" + dir + "' is not writable (" + std::strerror(e) + ")");
}

// --- OutputSet ---------------------------------------------------------------------------

OutputSet::~OutputSet() {
    if (committed_) return;
    for (const Item& it : items_) {
        unlink(it.tmp.c_str());
        std::remove((it.tmp + ".aux.xml").c_str());  // a GDAL side file, if any
        unregister_temporary(it.tmp);
    }
}

std::string OutputSet::stage(const std::string& final_path) {
    std::string tmp = create_temporary(final_path);
    items_.push_back({final_path, tmp});
    return tmp;
}

void OutputSet::adopt(const std::string& final_path, const std::string& tmp) {
    register_temporary(tmp);
    items_.push_back({final_path, tmp});
}

std::string OutputSet::temporary_of(const std::string& final_path) const {
    for (const Item& it : items_)
        if (it.final_path == final_path) return it.tmp;
    return {};
}

void OutputSet::commit() {
    if (committed_) return;
    BlockEndSignals hold;
    std::vector<std::string> aside(items_.size());  // hard links to the files replaced
    std::vector<bool> done(items_.size(), false);
    for (size_t i = 0; i < items_.size(); ++i) {
        const Item& it = items_[i];
        std::remove((it.tmp + ".aux.xml").c_str());
        struct stat st {};
        if (overwrite_ && lstat(it.final_path.c_str(), &st) == 0) aside[i] = link_aside(it.final_path);
        if (move_into_place(it.tmp, it.final_path, overwrite_) == 0) {
            done[i] = true;
            continue;
        }
        const int e = errno;
        // Undo: every final replaced gets its old file back, every new one goes.
        for (size_t j = 0; j <= i; ++j) {
            if (done[j]) {
                if (!aside[j].empty())
                    std::rename(aside[j].c_str(), items_[j].final_path.c_str());
                else
                    unlink(items_[j].final_path.c_str());
            } else if (!aside[j].empty()) {
                unlink(aside[j].c_str());
            }
        }
        for (size_t j = 0; j < i; ++j) unregister_temporary(items_[j].tmp);
        items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(i));  // renamed and undone
        if (e == EEXIST)
            throw InputError(it.final_path, "was created by someone else while this run worked; nothing was "
                                            "written (use --overwrite to replace it)");
        throw InputError(it.final_path, std::string("cannot move the finished output into place (") +
                                            std::strerror(e) + "); nothing was written");
    }
    for (size_t i = 0; i < items_.size(); ++i) {
        if (!aside[i].empty()) unlink(aside[i].c_str());
        unregister_temporary(items_[i].tmp);
    }
    committed_ = true;
}

OutputSet* OutputSet::active() { return t_active; }

CollectOutputs::CollectOutputs(OutputSet& set) : previous_(t_active) { t_active = &set; }
CollectOutputs::~CollectOutputs() { t_active = previous_; }

// --- StagedFile --------------------------------------------------------------------------

StagedFile::StagedFile(const std::string& final_path)
    : set_(OutputSet::active() ? OutputSet::active() : &own_), tmp_(set_->stage(final_path)) {}

void StagedFile::finish() {
    if (set_ == &own_) own_.commit();
}

}  // namespace tessera
