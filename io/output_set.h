// Outputs created safely and committed together (ARCHITECTURE.md section 7, issue 14).
//
// Every output is first written to a unique temporary next to it ("<final>.tmp.XXXXXX",
// created with O_CREAT | O_EXCL | O_NOFOLLOW, so a link planted there is never followed and
// two runs never share one), and renamed into place only when the whole run succeeded. An
// OutputSet commits all of a run's outputs (HDF5, GeoTIFF, quicklook) together or none:
// when a rename fails, the files it already replaced are restored. A failed run never
// changes or removes a file that existed before it.
//
// Temporaries are registered for SIGINT / SIGTERM: install_signal_cleanup() makes those
// signals unlink every registered temporary (async-signal-safe) and end the process with the
// signal (mpirun forwards SIGTERM to every rank and ends the job when one rank dies).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace tessera {

class OutputSet {
public:
    // overwrite = false: commit() never replaces a file that appeared meanwhile (RENAME_NOREPLACE).
    explicit OutputSet(bool overwrite = true) : overwrite_(overwrite) {}
    ~OutputSet();  // removes every temporary not committed
    OutputSet(const OutputSet&) = delete;
    OutputSet& operator=(const OutputSet&) = delete;

    // Creates a unique empty temporary next to `final_path` and returns its path; the file is
    // this set's until commit(). Throws InputError(final_path, problem) when it cannot be created.
    std::string stage(const std::string& final_path);
    // Takes over a temporary created elsewhere (another rank, Hdf5Writer) for `final_path`.
    void adopt(const std::string& final_path, const std::string& tmp);
    // The temporary staged for `final_path`, or "" when none.
    std::string temporary_of(const std::string& final_path) const;
    bool empty() const { return items_.empty(); }

    // Renames every temporary over its final path, all or none. Throws InputError naming the
    // output that could not be committed (after restoring the ones already replaced).
    void commit();

    // The set that collects this thread's outputs while a CollectOutputs is alive: writers of
    // single files (GeoTIFF, PNG, HDF5) leave their finished temporary in it instead of
    // renaming it themselves. nullptr when none.
    static OutputSet* active();

private:
    struct Item {
        std::string final_path, tmp;
    };
    std::vector<Item> items_;
    bool overwrite_;
    bool committed_ = false;
};

// While alive, `set` collects this thread's outputs (OutputSet::active()); nests.
class CollectOutputs {
public:
    explicit CollectOutputs(OutputSet& set);
    ~CollectOutputs();
    CollectOutputs(const CollectOutputs&) = delete;
    CollectOutputs& operator=(const CollectOutputs&) = delete;

private:
    OutputSet* previous_;
};

// A writer's view of one output: the temporary to write, renamed by finish() (or left to the
// active OutputSet); removed when finish() is never reached.
class StagedFile {
public:
    explicit StagedFile(const std::string& final_path);
    const std::string& tmp() const { return tmp_; }
    void finish();  // commits now, or leaves the temporary to the active set
private:
    OutputSet own_;
    OutputSet* set_;
    std::string tmp_;
};

// A unique temporary "<final_path>.tmp.XXXXXX", created exclusively (mode 0666 & ~umask).
// Throws InputError(final_path, problem).
std::string create_temporary(const std::string& final_path);

// Signal cleanup registry (process-wide, fixed size, usable from a signal handler).
void register_temporary(const std::string& path);
void unregister_temporary(const std::string& path);
// Unlinks every registered temporary; async-signal-safe.
void remove_registered_temporaries() noexcept;
// SIGINT, SIGTERM, SIGHUP: remove the registered temporaries, then end with the signal.
void install_signal_cleanup();

}  // namespace tessera
