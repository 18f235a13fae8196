#include "io/gdal_session.h"

#include <gdal.h>

#include <cpl_conv.h>
#include <gdal_priv.h>
#include <hdf5.h>
#include <dlfcn.h>
#include <omp.h>

#include <mutex>
#include <string>

namespace tessera {

namespace {

// GDAL's default handler prints "ERROR 1: ..." and "Warning 1: ..." on stderr; tessera reports
// failures in its own one line instead (section 7). The message stays in CPLGetLastErrorMsg().
void CPL_STDCALL keep_quiet(CPLErr, CPLErrorNum, const char*) {}

// GDAL's HDF5 driver uses its own (serial) HDF5 library beside tessera's parallel one: its
// automatic error printing ("HDF5-DIAG: Error detected ...") is turned off through that
// library's own H5Eset_auto2.
void quiet_other_hdf5() {
    for (const char* lib : {"libhdf5_serial.so.103", "libhdf5.so.103", "libhdf5_serial.so", "libhdf5.so"}) {
        void* h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) continue;
        using SetAuto = herr_t (*)(hid_t, H5E_auto2_t, void*);
        if (auto* set = reinterpret_cast<SetAuto>(dlsym(h, "H5Eset_auto2"))) set(H5E_DEFAULT, nullptr, nullptr);
        dlclose(h);
    }
}

}  // namespace

void quiet_library_messages() {
    CPLSetErrorHandler(keep_quiet);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    quiet_other_hdf5();
}

void register_gdal_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        quiet_library_messages();
        GDALAllRegister();
        quiet_library_messages();  // the drivers' libraries are loaded now
        // One rank per GPU or socket leaves its cores to GDAL's block decoding.
        if (!CPLGetConfigOption("GDAL_NUM_THREADS", nullptr))
            CPLSetConfigOption("GDAL_NUM_THREADS", std::to_string(omp_get_max_threads()).c_str());
    });
}

}  // namespace tessera

namespace tessera {

int64_t cap_raster_cache(int64_t bytes) {
    register_gdal_once();
    if (bytes > 0 && GDALGetCacheMax64() > bytes) GDALSetCacheMax64(bytes);
    return GDALGetCacheMax64();
}

}  // namespace tessera
