// GDAL set-up shared by the readers and writers: drivers registered once, and GDAL's
// own messages captured so that tessera reports one line per error (section 7).
#pragma once
#include <cpl_error.h>

#include <cstdint>
#include <string>

namespace tessera {

// No raw messages from GDAL (its default error handler) or HDF5 (its automatic error stack
// printing) on stderr: errors reach the user in tessera's one line. Called by main() and by
// register_gdal_once().
void quiet_library_messages();

// GDALAllRegister once per process; compressed inputs decode on this rank's OpenMP
// threads unless the user set GDAL_NUM_THREADS.
void register_gdal_once();

// Caps GDAL's block cache at `bytes` when it is larger (its default is 5 % of the machine's
// memory): a run held to a memory limit counts it (section 5.1). Returns the cap in force.
int64_t cap_raster_cache(int64_t bytes);

// Keeps GDAL quiet on stderr while alive and remembers the first failure message.
class QuietGdal {
public:
    QuietGdal() { CPLPushErrorHandlerEx(&QuietGdal::handler, this); }
    ~QuietGdal() { CPLPopErrorHandler(); }
    QuietGdal(const QuietGdal&) = delete;
    QuietGdal& operator=(const QuietGdal&) = delete;

    bool failed() const { return failures_ > 0; }
    const std::string& message() const { return first_; }
    void reset() {
        failures_ = 0;
        first_.clear();
    }

private:
    static void CPL_STDCALL handler(CPLErr cls, CPLErrorNum, const char* msg) {
        auto* self = static_cast<QuietGdal*>(CPLGetErrorHandlerUserData());
        if (self == nullptr || cls < CE_Failure) return;
        if (self->failures_++ == 0 && msg != nullptr) self->first_ = msg;
    }
    int failures_ = 0;
    std::string first_;
};

}  // namespace tessera
