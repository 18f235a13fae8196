#include "io/result_georef.h"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>

namespace tessera {

namespace {

class H5Silence {
public:
    H5Silence() {
        H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~H5Silence() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
    H5Silence(const H5Silence&) = delete;
    H5Silence& operator=(const H5Silence&) = delete;

private:
    H5E_auto2_t func_ = nullptr;
    void* data_ = nullptr;
};

}  // namespace

bool read_result_georef(const std::string& path, GeoRef& geo) {
    H5Silence quiet;
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return false;
    bool found = false;
    if (H5Aexists(f, "geotransform") > 0) {
        const hid_t a = H5Aopen(f, "geotransform", H5P_DEFAULT);
        const hid_t s = a >= 0 ? H5Aget_space(a) : -1;
        double gt[6];
        if (s >= 0 && H5Sget_simple_extent_npoints(s) == 6 && H5Aread(a, H5T_NATIVE_DOUBLE, gt) >= 0) {
            std::copy(gt, gt + 6, geo.geotransform.begin());
            geo.has_geotransform = true;
            found = true;
        }
        if (s >= 0) H5Sclose(s);
        if (a >= 0) H5Aclose(a);
    }
    if (H5Aexists(f, "has_geotransform") > 0) {
        const hid_t a = H5Aopen(f, "has_geotransform", H5P_DEFAULT);
        int64_t v = 1;
        if (a >= 0 && H5Aread(a, H5T_NATIVE_INT64, &v) >= 0 && v == 0) geo.has_geotransform = false;
        if (a >= 0) H5Aclose(a);
    }
    if (H5Aexists(f, "projection") > 0) {
        const hid_t a = H5Aopen(f, "projection", H5P_DEFAULT);
        const hid_t t = a >= 0 ? H5Aget_type(a) : -1;
        if (t >= 0 && H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t)) {
            std::string buf(H5Tget_size(t) + 1, '\0');
            if (H5Aread(a, t, buf.data()) >= 0) geo.projection_wkt = buf.c_str();
        }
        if (t >= 0) H5Tclose(t);
        if (a >= 0) H5Aclose(a);
    }
    H5Fclose(f);
    return found;
}


}  // namespace tessera
