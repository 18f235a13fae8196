// h5_same A.h5 B.h5 DATASET...: exit 0 when every named dataset has the same shape, type
// and bytes in both files (NaN payloads included); prints the first difference otherwise.
#include <hdf5.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool read(const char* file, const char* name, std::vector<unsigned char>& out, hsize_t dims[2]) {
    hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return false;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return H5Fclose(f), false;
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    H5Sget_simple_extent_dims(s, dims, nullptr);
    out.resize(dims[0] * dims[1] * H5Tget_size(t));
    const bool ok = H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) >= 0;
    H5Tclose(t), H5Sclose(s), H5Dclose(d), H5Fclose(f);
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: h5_same A.h5 B.h5 DATASET...\n");
        return 2;
    }
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    int rc = 0;
    for (int i = 3; i < argc; ++i) {
        std::vector<unsigned char> a, b;
        hsize_t da[2] = {0, 0}, db[2] = {0, 0};
        if (!read(argv[1], argv[i], a, da) || !read(argv[2], argv[i], b, db)) {
            std::printf("%s: cannot read\n", argv[i]);
            rc = 1;
            continue;
        }
        const bool same = da[0] == db[0] && da[1] == db[1] && a == b;
        std::printf("%s: %s (%llu x %llu)\n", argv[i], same ? "identical" : "DIFFERENT",
                    static_cast<unsigned long long>(da[0]), static_cast<unsigned long long>(da[1]));
        if (!same) rc = 1;
    }
    return rc;
}
