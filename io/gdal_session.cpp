#include "io/gdal_session.h"

#include <cpl_conv.h>
#include <gdal_priv.h>
#include <omp.h>

#include <mutex>
#include <string>

namespace tessera {

void register_gdal_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        GDALAllRegister();
        // One rank per GPU or socket leaves its cores to GDAL's block decoding.
        if (!CPLGetConfigOption("GDAL_NUM_THREADS", nullptr))
            CPLSetConfigOption("GDAL_NUM_THREADS", std::to_string(omp_get_max_threads()).c_str());
    });
}

}  // namespace tessera
