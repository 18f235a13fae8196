// Hdf5Writer and describe_result (io/hdf5_writer.h), single rank: round trips of
// every dataset type through strided windows, fill values, attributes, the
// temporary-file protocol, bad output paths, and reading the result with GDAL.
#include "io/hdf5_writer.h"

#include <gdal.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/input_error.h"
#include "support/cli.h"
#include "kernels/label_width.h"

namespace fs = std::filesystem;
using tessera::Attribute;
using tessera::Hdf5Writer;
using tessera::Window;

namespace {

// A fresh directory per test (ctest runs tests as separate processes in parallel).
class Hdf5WriterTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() /
               ("tessera_h5_" + std::string(info->name()) + "_" + std::to_string(getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    fs::path dir_;
};

// Serial read-back of a whole 2-D dataset.
struct H5File {
    explicit H5File(const std::string& path) : id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT)) {}
    ~H5File() {
        if (id >= 0) H5Fclose(id);
    }
    hid_t id;
};

template <typename T>
hid_t mem_type() {
    if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
    else if constexpr (std::is_same_v<T, uint32_t>) return H5T_NATIVE_UINT32;
    else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
    else if constexpr (std::is_same_v<T, int8_t>) return H5T_NATIVE_INT8;
    else return H5T_NATIVE_UINT8;
}

struct DatasetInfo {
    hsize_t rows = 0, cols = 0;
    H5T_class_t cls = H5T_NO_CLASS;
    size_t size = 0;
    H5T_sign_t sign = H5T_SGN_ERROR;
    hsize_t chunk[2] = {0, 0};
    std::vector<H5Z_filter_t> filters;
    bool deflate_level_1 = false;
};

DatasetInfo dataset_info(const std::string& path, const std::string& name) {
    DatasetInfo out;
    H5File f(path);
    EXPECT_GE(f.id, 0);
    hid_t d = H5Dopen2(f.id, name.c_str(), H5P_DEFAULT);
    EXPECT_GE(d, 0) << name;
    if (d < 0) return out;
    hid_t s = H5Dget_space(d), t = H5Dget_type(d), p = H5Dget_create_plist(d);
    EXPECT_EQ(H5Sget_simple_extent_ndims(s), 2);
    hsize_t dims[2];
    H5Sget_simple_extent_dims(s, dims, nullptr);
    out.rows = dims[0];
    out.cols = dims[1];
    out.cls = H5Tget_class(t);
    out.size = H5Tget_size(t);
    out.sign = H5Tget_sign(t);
    EXPECT_EQ(H5Pget_layout(p), H5D_CHUNKED);
    H5Pget_chunk(p, 2, out.chunk);
    for (int i = 0; i < H5Pget_nfilters(p); ++i) {
        unsigned flags = 0, cd[8];
        size_t ncd = 8;
        H5Z_filter_t id = H5Pget_filter2(p, static_cast<unsigned>(i), &flags, &ncd, cd, 0, nullptr, nullptr);
        out.filters.push_back(id);
        if (id == H5Z_FILTER_DEFLATE && ncd >= 1 && cd[0] == 1) out.deflate_level_1 = true;
    }
    H5Pclose(p);
    H5Tclose(t);
    H5Sclose(s);
    H5Dclose(d);
    return out;
}

template <typename T>
std::vector<T> read_all(const std::string& path, const std::string& name) {
    H5File f(path);
    EXPECT_GE(f.id, 0) << path;
    hid_t d = H5Dopen2(f.id, name.c_str(), H5P_DEFAULT);
    EXPECT_GE(d, 0) << name;
    if (d < 0) return {};
    hid_t s = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(s, dims, nullptr);
    std::vector<T> out(dims[0] * dims[1]);
    EXPECT_GE(H5Dread(d, mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0);
    H5Sclose(s);
    H5Dclose(d);
    return out;
}

template <typename T>
T fill_value(const std::string& path, const std::string& name) {
    H5File f(path);
    hid_t d = H5Dopen2(f.id, name.c_str(), H5P_DEFAULT);
    hid_t p = H5Dget_create_plist(d);
    T v{};
    EXPECT_GE(H5Pget_fill_value(p, mem_type<T>(), &v), 0);
    H5Pclose(p);
    H5Dclose(d);
    return v;
}

// Attribute readers (return false when absent).
bool read_attr_i64(hid_t obj, const char* name, int64_t& v) {
    if (H5Aexists(obj, name) <= 0) return false;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    herr_t st = H5Aread(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
    return st >= 0;
}
bool read_attr_f64s(hid_t obj, const char* name, std::vector<double>& v) {
    if (H5Aexists(obj, name) <= 0) return false;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t s = H5Aget_space(a);
    hssize_t n = H5Sget_simple_extent_type(s) == H5S_NULL ? 0 : H5Sget_simple_extent_npoints(s);
    v.assign(static_cast<size_t>(n), 0.0);
    herr_t st = n > 0 ? H5Aread(a, H5T_NATIVE_DOUBLE, v.data()) : 0;
    H5Sclose(s);
    H5Aclose(a);
    return st >= 0;
}
bool read_attr_str(hid_t obj, const char* name, std::string& v, bool* fixed_nullterm = nullptr) {
    if (H5Aexists(obj, name) <= 0) return false;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    bool ok = H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0;
    if (fixed_nullterm) *fixed_nullterm = ok && H5Tget_strpad(t) == H5T_STR_NULLTERM;
    if (ok) {
        std::vector<char> buf(H5Tget_size(t) + 1, '\0');
        ok = H5Aread(a, t, buf.data()) >= 0;
        v.assign(buf.data(), strnlen(buf.data(), buf.size()));
    }
    H5Tclose(t);
    H5Aclose(a);
    return ok;
}

// A rows x cols image stored with row stride `stride` (> cols: padding must never reach the file).
template <typename T>
std::vector<T> strided_image(int64_t rows, int64_t cols, int64_t stride, T (*value)(int64_t, int64_t)) {
    std::vector<T> buf(static_cast<size_t>(rows * stride));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < stride; ++c)
            buf[static_cast<size_t>(r * stride + c)] = c < cols ? value(r, c) : T(99);
    return buf;
}

bool exists(const std::string& p) { return fs::exists(p); }

}  // namespace

// Five types, windows not aligned to the 512 x 512 chunks, strided memory.
TEST_F(Hdf5WriterTest, RoundTripsEveryTypeThroughStridedWindows) {
    const int64_t rows = 700, cols = 530, stride = 541;
    const std::string out = file("all.h5");
    Window all{0, 0, rows, cols};
    auto f32 = strided_image<float>(rows, cols, stride, [](int64_t r, int64_t c) {
        return 0.25f * static_cast<float>(r) - 0.125f * static_cast<float>(c) + 1e-3f * static_cast<float>(r * c % 97);
    });
    auto u32 = strided_image<uint32_t>(rows, cols, stride, [](int64_t r, int64_t c) {
        return static_cast<uint32_t>(r * 100000 + c) ^ 0x80000000u;
    });
    auto i32 = strided_image<int32_t>(rows, cols, stride, [](int64_t r, int64_t c) {
        return static_cast<int32_t>((r - 350) * 7 - c * 3);
    });
    auto i8 = strided_image<int8_t>(rows, cols, stride, [](int64_t r, int64_t c) {
        return static_cast<int8_t>((r + 3 * c) % 256 - 128);
    });
    auto u8 = strided_image<uint8_t>(rows, cols, stride, [](int64_t r, int64_t c) {
        return static_cast<uint8_t>((r * 5 + c) & 0xFF);
    });
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, rows, cols);
        EXPECT_EQ(w.path(), out);
        w.write_f32("unwrapped_phase", all, f32.data(), stride, {});
        w.write_u32("connected_components", all, u32.data(), stride, {});
        w.write_i32("cycles", all, i32.data(), stride, {});
        w.write_i8("residues", all, i8.data(), stride, {});
        w.write_u8("branch_cuts", all, u8.data(), stride, {});
        w.commit();
    }
    auto check = [&](const std::string& name, H5T_class_t cls, size_t size, H5T_sign_t sign,
                     const auto& expect) {
        using T = typename std::decay_t<decltype(expect)>::value_type;
        SCOPED_TRACE(name);
        DatasetInfo info = dataset_info(out, name);
        EXPECT_EQ(info.rows, static_cast<hsize_t>(rows));
        EXPECT_EQ(info.cols, static_cast<hsize_t>(cols));
        EXPECT_EQ(info.cls, cls);
        EXPECT_EQ(info.size, size);
        if (cls == H5T_INTEGER) {
            EXPECT_EQ(info.sign, sign);
        }
        EXPECT_EQ(info.chunk[0], 512u);
        EXPECT_EQ(info.chunk[1], 512u);
        ASSERT_EQ(info.filters.size(), 2u);
        EXPECT_EQ(info.filters[0], H5Z_FILTER_SHUFFLE);
        EXPECT_EQ(info.filters[1], H5Z_FILTER_DEFLATE);
        EXPECT_TRUE(info.deflate_level_1);
        auto got = read_all<T>(out, name);
        ASSERT_EQ(got.size(), static_cast<size_t>(rows * cols));
        int64_t bad = 0;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c)
                if (std::memcmp(&got[static_cast<size_t>(r * cols + c)], &expect[static_cast<size_t>(r * stride + c)],
                                sizeof(T)) != 0 && bad++ < 5)
                    ADD_FAILURE() << name << " differs at (" << r << ", " << c << ")";
        EXPECT_EQ(bad, 0);
    };
    check("unwrapped_phase", H5T_FLOAT, 4, H5T_SGN_ERROR, f32);
    check("connected_components", H5T_INTEGER, 4, H5T_SGN_NONE, u32);
    check("cycles", H5T_INTEGER, 4, H5T_SGN_2, i32);
    check("residues", H5T_INTEGER, 1, H5T_SGN_2, i8);
    check("branch_cuts", H5T_INTEGER, 1, H5T_SGN_NONE, u8);

    EXPECT_TRUE(std::isnan(fill_value<float>(out, "unwrapped_phase")));
    EXPECT_EQ(fill_value<uint32_t>(out, "connected_components"), 0u);
    EXPECT_EQ(fill_value<int8_t>(out, "residues"), 0);
}

// Labels 1, 2 or 4 bytes wide (kernels/label_width.h) become the same uint32 dataset, whether
// the writer compresses the chunks itself (whole image, deflate) or writes the window through
// HDF5 (a part of the image, or no deflate: a 4-byte copy first).
TEST_F(Hdf5WriterTest, NarrowLabelsBecomeTheSameUint32Dataset) {
    const int64_t rows = 700, cols = 530, stride = 541;
    for (int bytes : {1, 2, 4}) {
        const uint32_t top = bytes == 1 ? 255u : bytes == 2 ? 65535u : 0xfffffff0u;
        std::vector<uint32_t> want(static_cast<size_t>(rows * cols));
        std::vector<unsigned char> narrow(static_cast<size_t>(rows * stride * bytes), 0xab);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
                const uint32_t v = static_cast<uint32_t>((r * 7919 + c * 104729) % (int64_t{top} + 1));
                want[static_cast<size_t>(r * cols + c)] = v;
                tessera::set_label(narrow.data(), bytes, r * stride + c, v);
            }
        for (int deflate : {1, 0}) {
            for (bool whole : {true, false}) {
                SCOPED_TRACE(std::to_string(bytes) + " bytes, deflate " + std::to_string(deflate) +
                             (whole ? ", whole image" : ", two windows"));
                const std::string out = file("labels.h5");
                {
                    Hdf5Writer w(out, MPI_COMM_WORLD, rows, cols);
                    w.set_deflate(deflate);
                    if (whole) {
                        w.write_labels("connected_components", Window{0, 0, rows, cols}, narrow.data(), bytes, stride, {});
                    } else {  // the top rows here, the rest in a second dataset's window: read back below
                        w.write_labels("connected_components", Window{0, 0, 300, cols}, narrow.data(), bytes, stride, {});
                        w.write_labels("rest", Window{300, 0, rows - 300, cols}, narrow.data() + 300 * stride * bytes, bytes,
                                       stride, {});
                    }
                    w.commit();
                }
                const DatasetInfo info = dataset_info(out, "connected_components");
                EXPECT_EQ(info.size, 4u);
                EXPECT_EQ(info.sign, H5T_SGN_NONE);
                std::vector<uint32_t> got = read_all<uint32_t>(out, "connected_components");
                ASSERT_EQ(got.size(), want.size());
                if (!whole) {
                    const std::vector<uint32_t> rest = read_all<uint32_t>(out, "rest");
                    std::copy(rest.begin() + 300 * cols, rest.end(), got.begin() + 300 * cols);
                }
                int64_t bad = 0;
                for (size_t i = 0; i < want.size(); ++i) bad += got[i] != want[i];
                EXPECT_EQ(bad, 0);
                fs::remove(out);
            }
        }
    }
    Hdf5Writer w(file("bad.h5"), MPI_COMM_WORLD, 4, 4);
    std::vector<uint8_t> l(16, 1);
    EXPECT_THROW(w.write_labels("x", Window{0, 0, 4, 4}, l.data(), 3, 4, {}), std::invalid_argument);
}

// Small images get chunks no larger than the image.
TEST_F(Hdf5WriterTest, ChunksAreClippedToSmallImages) {
    const std::string out = file("small.h5");
    std::vector<float> v(3 * 5, 1.5f);
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, 3, 5);
        w.write_f32("unwrapped_phase", {0, 0, 3, 5}, v.data(), 5, {});
        w.commit();
    }
    DatasetInfo info = dataset_info(out, "unwrapped_phase");
    EXPECT_EQ(info.chunk[0], 3u);
    EXPECT_EQ(info.chunk[1], 5u);
    for (float x : read_all<float>(out, "unwrapped_phase")) EXPECT_EQ(x, 1.5f);
}

// Pixels outside the written windows read back as the fill value: NaN / 0.
TEST_F(Hdf5WriterTest, UnwrittenPixelsReadAsFill) {
    const int64_t rows = 600, cols = 520;
    const std::string out = file("partial.h5");
    Window part{100, 37, 450, 400};  // crosses chunk borders on both axes
    const int64_t stride = 411;
    std::vector<float> f(static_cast<size_t>(part.rows * stride), -1.f);
    std::vector<uint32_t> u(static_cast<size_t>(part.rows * stride), 0u);
    for (int64_t r = 0; r < part.rows; ++r)
        for (int64_t c = 0; c < part.cols; ++c) {
            f[static_cast<size_t>(r * stride + c)] = static_cast<float>(r + c);
            u[static_cast<size_t>(r * stride + c)] = static_cast<uint32_t>(1 + r * part.cols + c);
        }
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, rows, cols);
        w.write_f32("unwrapped_phase", part, f.data(), stride, {});
        w.write_u32("connected_components", part, u.data(), stride, {});
        w.write_f32("never_written", Window{}, nullptr, 0, {});  // empty window
        w.commit();
    }
    auto gf = read_all<float>(out, "unwrapped_phase");
    auto gu = read_all<uint32_t>(out, "connected_components");
    auto gn = read_all<float>(out, "never_written");
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            size_t i = static_cast<size_t>(r * cols + c);
            bool inside = part.contains(r, c);
            int64_t lr = r - part.row0, lc = c - part.col0;
            bool ok = inside ? gf[i] == static_cast<float>(lr + lc) &&
                                   gu[i] == static_cast<uint32_t>(1 + lr * part.cols + lc)
                             : std::isnan(gf[i]) && gu[i] == 0u;
            ok = ok && std::isnan(gn[i]);
            if (!ok && bad++ < 5) ADD_FAILURE() << "pixel (" << r << ", " << c << ")";
        }
    EXPECT_EQ(bad, 0);
}

TEST_F(Hdf5WriterTest, AttributesRoundTrip) {
    const std::string out = file("attrs.h5");
    std::vector<double> big(20000);  // 160 kB: beyond the 64 kB compact-attribute limit
    for (size_t i = 0; i < big.size(); ++i) big[i] = 0.5 * static_cast<double>(i);
    const std::string wkt = "GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\"]]";
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, 4, 4);
        std::vector<float> v(16, 0.f);
        w.write_f32("unwrapped_phase", {0, 0, 4, 4}, v.data(), 4,
                    {{"units", std::string("radians")}, {"scale", 2.5}, {"level", int64_t{-7}},
                     {"range", std::vector<double>{-3.5, 4.25}}});
        w.write_attributes({{"geotransform", std::vector<double>{10, 0.5, 0, 20, 0, -0.5}},
                            {"projection_wkt", wkt},
                            {"nodata", std::numeric_limits<double>::quiet_NaN()},
                            {"rows", int64_t{4}},
                            {"empty_string", std::string()},
                            {"empty_vector", std::vector<double>{}},
                            {"utf8", std::string("\xc2\xb0 degrees")},
                            {"timings", big}});
        w.write_attributes({{"rows", int64_t{5}}});  // the same name again replaces it
        w.commit();
    }
    H5File f(out);
    ASSERT_GE(f.id, 0);
    hid_t d = H5Dopen2(f.id, "unwrapped_phase", H5P_DEFAULT);
    std::string s;
    bool nullterm = false;
    int64_t i = 0;
    std::vector<double> v;
    ASSERT_TRUE(read_attr_str(d, "units", s, &nullterm));
    EXPECT_EQ(s, "radians");
    EXPECT_TRUE(nullterm);
    ASSERT_TRUE(read_attr_f64s(d, "scale", v));
    EXPECT_EQ(v, std::vector<double>{2.5});
    ASSERT_TRUE(read_attr_i64(d, "level", i));
    EXPECT_EQ(i, -7);
    ASSERT_TRUE(read_attr_f64s(d, "range", v));
    EXPECT_EQ(v, (std::vector<double>{-3.5, 4.25}));
    ASSERT_TRUE(read_attr_f64s(d, "_FillValue", v));  // float datasets get NaN as _FillValue
    ASSERT_EQ(v.size(), 1u);
    EXPECT_TRUE(std::isnan(v[0]));
    H5Dclose(d);

    hid_t root = H5Gopen2(f.id, "/", H5P_DEFAULT);
    ASSERT_TRUE(read_attr_f64s(root, "geotransform", v));
    EXPECT_EQ(v, (std::vector<double>{10, 0.5, 0, 20, 0, -0.5}));
    ASSERT_TRUE(read_attr_str(root, "projection_wkt", s));
    EXPECT_EQ(s, wkt);
    ASSERT_TRUE(read_attr_f64s(root, "nodata", v));
    ASSERT_EQ(v.size(), 1u);
    EXPECT_TRUE(std::isnan(v[0]));
    ASSERT_TRUE(read_attr_i64(root, "rows", i));
    EXPECT_EQ(i, 5);
    ASSERT_TRUE(read_attr_str(root, "empty_string", s));
    EXPECT_EQ(s, "");
    ASSERT_TRUE(read_attr_f64s(root, "empty_vector", v));
    EXPECT_TRUE(v.empty());
    ASSERT_TRUE(read_attr_str(root, "utf8", s));
    EXPECT_EQ(s, "\xc2\xb0 degrees");
    ASSERT_TRUE(read_attr_f64s(root, "timings", v));
    EXPECT_EQ(v, big);
    H5Gclose(root);
}

TEST_F(Hdf5WriterTest, WritesToTemporaryNameUntilCommit) {
    const std::string out = file("result.h5");
    { std::ofstream(out) << "an older result"; }  // commit replaces an existing file
    std::vector<uint32_t> v(6 * 7, 3u);
    Hdf5Writer w(out, MPI_COMM_WORLD, 6, 7);
    const std::string tmp = w.temporary_path();  // unique, next to the output
    EXPECT_EQ(tmp.rfind(out + ".tmp.", 0), 0u) << tmp;
    EXPECT_TRUE(exists(tmp));
    w.write_u32("connected_components", {0, 0, 6, 7}, v.data(), 7, {});
    EXPECT_TRUE(exists(tmp));
    {
        std::ifstream in(out);  // the old result is untouched until commit
        std::string old;
        std::getline(in, old);
        EXPECT_EQ(old, "an older result");
    }
    w.commit();
    EXPECT_FALSE(exists(tmp));
    EXPECT_TRUE(tessera::testing::temporaries_of(out).empty());
    ASSERT_TRUE(exists(out));
    EXPECT_EQ(read_all<uint32_t>(out, "connected_components"), v);
    // Use after commit is a programming error, thrown (alike on every rank).
    EXPECT_THROW(w.write_u32("again", {0, 0, 6, 7}, v.data(), 7, {}), std::logic_error);
    EXPECT_THROW(w.write_attributes({{"x", 1.0}}), std::logic_error);
    EXPECT_THROW(w.commit(), std::logic_error);
}

TEST_F(Hdf5WriterTest, UncommittedWriterLeavesNoFile) {
    const std::string out = file("abandoned.h5");
    std::vector<float> v(8 * 8, 1.f);
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, 8, 8);
        w.write_f32("unwrapped_phase", {0, 0, 8, 8}, v.data(), 8, {});
        EXPECT_TRUE(exists(w.temporary_path()));
    }
    EXPECT_FALSE(exists(out));
    EXPECT_TRUE(tessera::testing::temporaries_of(out).empty());

    // Also when the writer is destroyed by an exception unwinding the stack.
    EXPECT_THROW(
        {
            Hdf5Writer w(out, MPI_COMM_WORLD, 8, 8);
            w.write_f32("unwrapped_phase", {0, 0, 8, 8}, v.data(), 8, {});
            throw std::runtime_error("stage failed");
        },
        std::runtime_error);
    EXPECT_FALSE(exists(out));
    EXPECT_TRUE(tessera::testing::temporaries_of(out).empty());
    // The path is free again for a new writer.
    Hdf5Writer w(out, MPI_COMM_WORLD, 8, 8);
    w.commit();
    EXPECT_TRUE(exists(out));
}

TEST_F(Hdf5WriterTest, MissingOutputDirectoryIsAnInputError) {
    const std::string out = file("no_such_dir/sub/result.h5");
    try {
        Hdf5Writer w(out, MPI_COMM_WORLD, 4, 4);
        FAIL() << "no exception";
    } catch (const tessera::InputError& e) {
        std::string what = e.what();
        EXPECT_EQ(what.rfind(out + ": ", 0), 0u) << what;  // starts with the path
        EXPECT_NE(what.find("does not exist"), std::string::npos) << what;
        EXPECT_NE(what.find("no_such_dir/sub"), std::string::npos) << what;
    }
    EXPECT_FALSE(exists(file("no_such_dir")));
}

// Tests run as root, for whom access(W_OK) succeeds on a chmod 000 directory:
// use places nobody can create files in.
TEST_F(Hdf5WriterTest, UnwritableOutputDirectoryIsAnInputError) {
    const std::string regular = file("plain_file");
    { std::ofstream(regular) << "x"; }
    for (const std::string& out : {regular + "/result.h5", std::string("/proc/tessera_result.h5")}) {
        SCOPED_TRACE(out);
        try {
            Hdf5Writer w(out, MPI_COMM_WORLD, 4, 4);
            FAIL() << "no exception";
        } catch (const tessera::InputError& e) {
            std::string what = e.what();
            EXPECT_EQ(what.rfind(out + ": ", 0), 0u) << what;
            EXPECT_NE(what.find("output directory"), std::string::npos) << what;
            EXPECT_TRUE(what.find("not writable") != std::string::npos ||
                        what.find("not a directory") != std::string::npos)
                << what;
        }
        EXPECT_TRUE(tessera::testing::temporaries_of(out).empty());
    }
    // The output path itself an existing directory: refused up front, not at the rename.
    try {
        Hdf5Writer w(dir_.string(), MPI_COMM_WORLD, 4, 4);
        FAIL() << "no exception";
    } catch (const tessera::InputError& e) {
        EXPECT_EQ(std::string(e.what()), dir_.string() + ": is a directory");
    }
}

TEST_F(Hdf5WriterTest, BadArgumentsThrowAndKeepTheWriterUsable) {
    const std::string out = file("args.h5");
    EXPECT_THROW(Hdf5Writer(out, MPI_COMM_WORLD, 0, 5), std::invalid_argument);
    std::vector<float> v(10 * 10, 2.f);
    Hdf5Writer w(out, MPI_COMM_WORLD, 10, 10);
    EXPECT_THROW(w.write_f32("a", {5, 0, 6, 10}, v.data(), 10, {}), std::invalid_argument);  // outside
    EXPECT_THROW(w.write_f32("a", {0, 0, 10, 10}, v.data(), 9, {}), std::invalid_argument);  // stride
    EXPECT_THROW(w.write_f32("a", {0, 0, 10, 10}, nullptr, 10, {}), std::invalid_argument);  // no data
    EXPECT_THROW(w.write_f32("a/b", {0, 0, 10, 10}, v.data(), 10, {}), std::invalid_argument);
    EXPECT_THROW(w.write_f32("a", {0, 0, 10, 10}, v.data(), 10, {{"", 1.0}}), std::invalid_argument);
    EXPECT_THROW(w.write_attributes({{"", int64_t{1}}}), std::invalid_argument);
    w.write_f32("a", {0, 0, 10, 10}, v.data(), 10, {});
    try {
        w.write_f32("a", {0, 0, 10, 10}, v.data(), 10, {});  // exists already
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
    }
    w.commit();
    EXPECT_EQ(read_all<float>(out, "a"), v);
}

// One rank writing windows of whole chunk rows (512) compresses them on its threads, narrow
// labels widened chunk by chunk: the file reads back as the same image written in one piece
// through HDF5's own filters would (an unaligned window takes that path, alike).
TEST_F(Hdf5WriterTest, WindowsOfWholeChunkRowsDeflateOnThreads) {
    const int64_t R = 1100, C = 700;
    std::vector<uint8_t> lab(static_cast<size_t>(R * C));
    std::vector<uint32_t> want(lab.size());
    for (size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<uint8_t>((i * 2654435761u) >> 27), want[i] = lab[i];
    for (const auto& windows : {std::vector<int64_t>{0, 512, 1024, 1100}, std::vector<int64_t>{0, 512, 900, 1100}}) {
        const std::string out = file("windows_deflate.h5");
        {
            Hdf5Writer w(out, MPI_COMM_WORLD, R, C);
            w.set_windowed(true);
            w.set_deflate(1);
            for (size_t k = 0; k + 1 < windows.size(); ++k) {
                const Window win{windows[k], 0, windows[k + 1] - windows[k], C};
                w.write_labels("labels", win, lab.data() + windows[k] * C, 1, C, {});
            }
            w.commit();
        }
        EXPECT_EQ(read_all<uint32_t>(out, "labels"), want);
        std::filesystem::remove(out);
    }
}

// Noise barely deflates (ISA-L's level 1 then keeps stored blocks) and every level from 1 to 9 (1:
// ISA-L, others: zlib) reads back through HDF5's own filter, in windows of whole chunk rows.
TEST_F(Hdf5WriterTest, NoisyChunksDeflateAtEveryLevelAndReadBack) {
    const int64_t R = 1024, C = 600;
    std::vector<float> noise(static_cast<size_t>(R * C));
    uint64_t x = 88172645463325252ull;
    for (float& v : noise) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        std::memcpy(&v, &x, sizeof v);  // any bits, NaNs included: compared as bits below
    }
    for (int level : {1, 2, 6, 9}) {
        const std::string out = file("noise_deflate.h5");
        {
            Hdf5Writer w(out, MPI_COMM_WORLD, R, C);
            w.set_windowed(true);
            w.set_deflate(level);
            w.write_f32("a", {0, 0, 512, C}, noise.data(), C, {});
            w.write_f32("a", {512, 0, 512, C}, noise.data() + 512 * C, C, {});
            w.commit();
        }
        const std::vector<float> got = read_all<float>(out, "a");
        ASSERT_EQ(got.size(), noise.size());
        EXPECT_EQ(std::memcmp(got.data(), noise.data(), noise.size() * sizeof(float)), 0) << "level " << level;
        std::filesystem::remove(out);
    }
}

// One rank's uncompressed dataset (io/mapped_chunks.h): made with every chunk allocated and no
// fill, its windows' chunks stored through a mapping of the file at places computed from the
// implicit index; every value reads back through the library, the last row of chunks padded past
// the image, in one window and in several, and a compressed dataset written after it too.
TEST_F(Hdf5WriterTest, UncompressedChunksWrittenThroughAMappingReadBack) {
    const int64_t R = 1100, C = 700, stride = 703;
    std::vector<float> src(static_cast<size_t>(R * stride), -7.f);
    std::vector<float> want(static_cast<size_t>(R * C));
    for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c)
            want[static_cast<size_t>(r * C + c)] = src[static_cast<size_t>(r * stride + c)] =
                static_cast<float>(r * 1000 + c) * 0.25f;
    for (const auto& windows : {std::vector<int64_t>{0, 1100}, std::vector<int64_t>{0, 512, 1024, 1100}}) {
        const std::string out = file("mapped.h5");
        {
            Hdf5Writer w(out, MPI_COMM_WORLD, R, C);
            w.set_windowed(true);
            w.set_deflate(0);
            for (size_t k = 0; k + 1 < windows.size(); ++k)
                w.write_f32("unwrapped_phase", {windows[k], 0, windows[k + 1] - windows[k], C},
                            src.data() + windows[k] * stride, stride, {});
            w.set_deflate(1);
            const std::vector<uint32_t> seven(static_cast<size_t>(R * C), 7u);
            w.write_u32("labels", {0, 0, R, C}, seven.data(), C, {});
            w.commit();
        }
        EXPECT_EQ(read_all<float>(out, "unwrapped_phase"), want) << windows.size() - 1 << " windows";
        // The layout the mapped path needs, so that it was the one taken (TESSERA_MAPPED_WRITE unset).
        H5File f(out);
        const hid_t d = H5Dopen2(f.id, "unwrapped_phase", H5P_DEFAULT), p = H5Dget_create_plist(d);
        H5D_alloc_time_t at{};
        H5D_fill_time_t ft{};
        H5Pget_alloc_time(p, &at);
        H5Pget_fill_time(p, &ft);
        EXPECT_EQ(H5Pget_nfilters(p), 0);
        if (!std::getenv("TESSERA_MAPPED_WRITE")) {
            EXPECT_EQ(at, H5D_ALLOC_TIME_EARLY);
            EXPECT_EQ(ft, H5D_FILL_TIME_NEVER);
            // HDF5's implicit index (the chunks' places computed from the first), and the file's
            // later objects in the 1.8 format again: a compressed dataset indexed by a v1 B-tree.
            H5D_chunk_index_t idx{};
            EXPECT_GE(H5Dget_chunk_index_type(d, &idx), 0);
            EXPECT_EQ(idx, H5D_CHUNK_IDX_NONE);
            const hid_t l = H5Dopen2(f.id, "labels", H5P_DEFAULT);
            EXPECT_GE(H5Dget_chunk_index_type(l, &idx), 0);
            EXPECT_EQ(idx, H5D_CHUNK_IDX_BTREE);
            H5Dclose(l);
        }
        EXPECT_EQ(read_all<uint32_t>(out, "labels"), std::vector<uint32_t>(want.size(), 7u));
        H5Pclose(p), H5Dclose(d);
        std::filesystem::remove(out);
    }
}

// Writes beside one another (Hdf5Writer::write_beside): the mapped phase copied on a thread of
// its own while labels go through the library, window after window; the sources overwritten as
// soon as each call returns (every copy done by then) and every value reads back. A write that
// throws inside it leaves the copies joined, and the writer abandoned leaves no file.
TEST_F(Hdf5WriterTest, PhaseCopiedBesideTheLibrarysWritesReadsBack) {
    const int64_t R = 1100, C = 700;
    std::vector<float> want(static_cast<size_t>(R * C));
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i % 8191) * 0.75f - 11.0f;
    const std::string out = file("beside.h5");
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, R, C);
        w.set_windowed(true);
        for (const auto& [r0, r1] : {std::pair<int64_t, int64_t>{0, 512}, {512, 1100}}) {
            const Window win{r0, 0, r1 - r0, C};
            std::vector<float> phase(want.begin() + r0 * C, want.begin() + r1 * C);
            std::vector<uint32_t> labels(phase.size(), static_cast<uint32_t>(r0 + 3));
            w.write_beside([&] {
                w.set_deflate(0);
                w.write_f32("unwrapped_phase", win, phase.data(), C, {});
                w.set_deflate(1);
                w.write_u32("labels", win, labels.data(), C, {});
            });
            std::fill(phase.begin(), phase.end(), -1.0f);
            std::fill(labels.begin(), labels.end(), 0u);
        }
        w.commit();
    }
    EXPECT_EQ(read_all<float>(out, "unwrapped_phase"), want);
    const std::vector<uint32_t> labels = read_all<uint32_t>(out, "labels");
    ASSERT_EQ(labels.size(), want.size());
    EXPECT_EQ(labels[0], 3u);
    EXPECT_EQ(labels[static_cast<size_t>(511 * C)], 3u);
    EXPECT_EQ(labels[static_cast<size_t>(512 * C)], 515u);
    EXPECT_EQ(labels.back(), 515u);

    const std::string gone = file("beside_abandoned.h5");
    std::string what;
    {
        Hdf5Writer w(gone, MPI_COMM_WORLD, R, C);
        auto phase = std::make_unique<std::vector<float>>(want);
        try {
            w.write_beside([&] {
                w.set_deflate(0);
                w.write_f32("unwrapped_phase", {0, 0, R, C}, phase->data(), C, {});
                throw std::runtime_error("a later write failed");
            });
        } catch (const std::exception& e) {
            what = e.what();
        }
        phase.reset();  // the copy was joined before the exception left write_beside
    }
    EXPECT_EQ(what, "a later write failed");
    EXPECT_FALSE(exists(gone));
    EXPECT_TRUE(tessera::testing::temporaries_of(gone).empty());
}

// A dataset prepared before its write (created, its pages made ready on other threads while the
// caller goes on): the write fills it, another dataset written between them does not disturb
// it, its attributes are the prepared ones once; prepared on two threads and written in windows
// (a streamed run) alike; abandoned after prepare, no file is left.
TEST_F(Hdf5WriterTest, PreparedDatasetIsWrittenAndReadsBack) {
    const int64_t R = 1100, C = 700;
    std::vector<float> v(static_cast<size_t>(R * C));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 9973) * 0.5f - 3.0f;
    const std::vector<Attribute> attrs = {{"units", std::string("radians")}, {"_FillValue", std::nan("")}};
    const std::string out = file("prepared.h5");
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, R, C);
        w.set_deflate(0);
        w.prepare_f32("unwrapped_phase", attrs);
        w.set_deflate(1);
        const std::vector<uint32_t> seven(static_cast<size_t>(R * C), 7u);
        w.write_u32("labels", {0, 0, R, C}, seven.data(), C, {});
        w.set_deflate(0);
        w.write_f32("unwrapped_phase", {0, 0, R, C}, v.data(), C, attrs);
        w.commit();
    }
    EXPECT_EQ(read_all<float>(out, "unwrapped_phase"), v);
    EXPECT_EQ(read_all<uint32_t>(out, "labels"), std::vector<uint32_t>(v.size(), 7u));
    H5File f(out);
    const hid_t d = H5Dopen2(f.id, "unwrapped_phase", H5P_DEFAULT);
    std::string units;
    EXPECT_TRUE(read_attr_str(d, "units", units));
    EXPECT_EQ(units, "radians");
    EXPECT_EQ(H5Aget_num_attrs(d), 2);  // units and _FillValue, once each
    H5Dclose(d);

    // As a streamed run writes it: prepared on two threads, then written in windows of chunk rows.
    const std::string rows = file("prepared_windows.h5");
    {
        Hdf5Writer w(rows, MPI_COMM_WORLD, R, C);
        w.set_windowed(true);
        w.set_deflate(0);
        w.prepare_f32("unwrapped_phase", attrs, 2);
        for (const int64_t r0 : {int64_t{0}, int64_t{512}, int64_t{1024}})
            w.write_f32("unwrapped_phase", {r0, 0, std::min<int64_t>(512, R - r0), C}, v.data() + r0 * C, C, attrs);
        w.commit();
    }
    EXPECT_EQ(read_all<float>(rows, "unwrapped_phase"), v);

    const std::string gone = file("prepared_abandoned.h5");
    {
        Hdf5Writer w(gone, MPI_COMM_WORLD, R, C);
        w.set_deflate(0);
        w.prepare_f32("unwrapped_phase", attrs);
    }
    EXPECT_FALSE(exists(gone));
    EXPECT_TRUE(tessera::testing::temporaries_of(gone).empty());
}

// A file that cannot grow (here RLIMIT_FSIZE; a full disk alike) fails the mapped write with a
// line naming the file and the reason, and leaves no file: never a SIGBUS.
TEST_F(Hdf5WriterTest, MappedWriteThatCannotAllocateFailsWithALine) {
    const int64_t R = 1024, C = 1024;
    std::vector<float> v(static_cast<size_t>(R * C), 1.f);
    const std::string out = file("no_room.h5");
    rlimit old{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    auto* old_handler = signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
    rlimit small = old;
    small.rlim_cur = 1 << 20;  // the metadata fits, the 4 MB of chunks do not
    std::string what;
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, R, C);
        w.set_deflate(0);
        ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
        try {
            w.write_f32("unwrapped_phase", {0, 0, R, C}, v.data(), C, {});
        } catch (const std::exception& e) {
            what = e.what();
        }
        setrlimit(RLIMIT_FSIZE, &old);
    }
    signal(SIGXFSZ, old_handler);
    EXPECT_NE(what.find("cannot allocate"), std::string::npos) << what;
    EXPECT_NE(what.find("no_room.h5"), std::string::npos) << what;
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir_)) left.push_back(e.path().string());
    EXPECT_TRUE(left.empty()) << left.front();
}

// Labels whose chunks mostly hold one value (a component's inside: compressed once a value,
// io/chunk_deflate.cpp), beside chunks that differ in one pixel, in their first row or column,
// and edge chunks: every value reads back, narrow and 4 bytes wide, in one window and in two.
TEST_F(Hdf5WriterTest, ChunksOfOneValueDeflateAlikeAndReadBack) {
    const int64_t R = 1300, C = 1100;
    std::vector<uint8_t> lab(static_cast<size_t>(R * C));
    for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) lab[static_cast<size_t>(r * C + c)] = static_cast<uint8_t>(1 + (r / 600) + 3 * (c / 700));
    lab[static_cast<size_t>(300 * C + 200)] = 9;  // one pixel inside chunk (0, 0)
    lab[static_cast<size_t>(512 * C + 700)] = 7;  // the first pixel of chunk (1, 1)
    lab[static_cast<size_t>(1000 * C + 512)] = 8;  // first column of chunk (1, 1), last row
    std::vector<uint32_t> wide(lab.begin(), lab.end());
    for (const auto& windows : {std::vector<int64_t>{0, 1300}, std::vector<int64_t>{0, 1024, 1300}}) {
        const std::string out = file("uniform.h5");
        {
            Hdf5Writer w(out, MPI_COMM_WORLD, R, C);
            w.set_windowed(true);
            w.set_deflate(1);
            for (size_t k = 0; k + 1 < windows.size(); ++k) {
                const Window win{windows[k], 0, windows[k + 1] - windows[k], C};
                w.write_labels("narrow", win, lab.data() + windows[k] * C, 1, C, {});
                w.write_u32("wide", win, wide.data() + windows[k] * C, C, {});
            }
            w.commit();
        }
        EXPECT_EQ(read_all<uint32_t>(out, "narrow"), wide) << windows.size() - 1 << " windows";
        EXPECT_EQ(read_all<uint32_t>(out, "wide"), wide) << windows.size() - 1 << " windows";
        std::filesystem::remove(out);
    }
}

// Windowed (a chunked run's result, section 5.1): later writes of a dataset fill more of it,
// its attributes from the first; the file holds every window's values.
TEST_F(Hdf5WriterTest, WindowedWritesFillOneDataset) {
    const std::string out = file("windows.h5");
    std::vector<float> top(4 * 10, 1.f), bottom(6 * 10, 2.f);
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, 10, 10);
        w.set_windowed(true);
        w.write_f32("a", {0, 0, 4, 10}, top.data(), 10, {{"units", std::string("radians")}});
        w.write_f32("a", {4, 0, 0, 10}, nullptr, 10, {});  // an empty round
        w.write_f32("a", {4, 0, 6, 10}, bottom.data(), 10, {});
        w.commit();
    }
    std::vector<float> want(top);
    want.insert(want.end(), bottom.begin(), bottom.end());
    EXPECT_EQ(read_all<float>(out, "a"), want);
}

TEST_F(Hdf5WriterTest, DescribeResultListsDatasetsAndAttributes) {
    const std::string out = file("describe.h5");
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, 30, 20);
        std::vector<float> f(600, 0.f);
        std::vector<uint32_t> u(600, 1u);
        std::vector<int8_t> k(600, 0);
        w.write_f32("unwrapped_phase", {0, 0, 30, 20}, f.data(), 20, {{"units", std::string("radians")}});
        w.write_u32("connected_components", {0, 0, 30, 20}, u.data(), 20, {});
        w.write_i8("residues", {0, 0, 30, 20}, k.data(), 20, {});
        w.write_attributes({{"geotransform", std::vector<double>{100, 0.5, 0, 200, 0, -0.5}},
                            {"version", std::string("0.1.0")},
                            {"max_iterations", int64_t{12}},
                            {"tolerance", 0.25}});
        w.commit();
    }
    const std::string text = tessera::describe_result(out);
    for (const char* line : {"/unwrapped_phase  30 x 20  float32\n", "    units = radians\n",
                             "    _FillValue = nan\n", "/connected_components  30 x 20  uint32\n",
                             "/residues  30 x 20  int8\n", "geotransform = 100, 0.5, 0, 200, 0, -0.5\n",
                             "version = 0.1.0\n", "max_iterations = 12\n", "tolerance = 0.25\n"})
        EXPECT_NE(text.find(line), std::string::npos) << "missing '" << line << "' in:\n" << text;
    // Datasets first, then the root attributes.
    EXPECT_LT(text.find("/unwrapped_phase"), text.find("geotransform ="));
}

TEST_F(Hdf5WriterTest, DescribeResultRejectsBadFiles) {
    const std::string missing = file("missing.h5");
    const std::string text = file("text.h5");
    { std::ofstream(text) << "not hdf5 at all\n"; }
    try {
        tessera::describe_result(missing);
        FAIL() << "no exception";
    } catch (const tessera::InputError& e) {
        EXPECT_EQ(std::string(e.what()), missing + ": no such file");
    }
    try {
        tessera::describe_result(text);
        FAIL() << "no exception";
    } catch (const tessera::InputError& e) {
        EXPECT_EQ(std::string(e.what()), text + ": not an HDF5 file");
    }
    EXPECT_THROW(tessera::describe_result(dir_.string()), tessera::InputError);
}

// GDAL (serial HDF5) reads what parallel HDF5 wrote, in the same process.
TEST_F(Hdf5WriterTest, GdalReadsTheResult) {
    const std::string out = file("gdal.h5");
    const int64_t rows = 300, cols = 700;
    std::vector<float> f(static_cast<size_t>(rows * cols));
    std::vector<uint32_t> u(f.size());
    for (size_t i = 0; i < f.size(); ++i) {
        f[i] = static_cast<float>(i % 1000) * 0.5f;
        u[i] = static_cast<uint32_t>(i / 1000);
    }
    {
        Hdf5Writer w(out, MPI_COMM_WORLD, rows, cols);
        w.write_f32("unwrapped_phase", {0, 0, rows, cols}, f.data(), cols, {{"units", std::string("radians")}});
        w.write_u32("connected_components", {0, 0, rows, cols}, u.data(), cols, {});
        w.write_attributes({{"projection_wkt", std::string("LOCAL_CS[\"x\"]")}, {"version", std::string("0.1.0")}});
        w.commit();
    }
    GDALAllRegister();
    if (!GDALGetDriverByName("HDF5")) GTEST_SKIP() << "GDAL has no HDF5 driver";
    GDALDatasetH ds = GDALOpen(("HDF5:\"" + out + "\"://unwrapped_phase").c_str(), GA_ReadOnly);
    ASSERT_NE(ds, nullptr) << CPLGetLastErrorMsg();
    EXPECT_EQ(GDALGetRasterXSize(ds), cols);
    EXPECT_EQ(GDALGetRasterYSize(ds), rows);
    ASSERT_EQ(GDALGetRasterCount(ds), 1);
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    EXPECT_EQ(GDALGetRasterDataType(band), GDT_Float32);
    std::vector<float> row(static_cast<size_t>(cols));
    ASSERT_EQ(GDALRasterIO(band, GF_Read, 0, 123, static_cast<int>(cols), 1, row.data(), static_cast<int>(cols), 1,
                           GDT_Float32, 0, 0),
              CE_None);
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(row[static_cast<size_t>(c)], f[static_cast<size_t>(123 * cols + c)]);
    GDALClose(ds);

    ds = GDALOpen(("HDF5:\"" + out + "\"://connected_components").c_str(), GA_ReadOnly);
    ASSERT_NE(ds, nullptr) << CPLGetLastErrorMsg();
    EXPECT_EQ(GDALGetRasterDataType(GDALGetRasterBand(ds, 1)), GDT_UInt32);
    EXPECT_EQ(GDALGetRasterXSize(ds), cols);
    EXPECT_EQ(GDALGetRasterYSize(ds), rows);
    GDALClose(ds);

    // The container lists both datasets as subdatasets.
    ds = GDALOpen(out.c_str(), GA_ReadOnly);
    ASSERT_NE(ds, nullptr) << CPLGetLastErrorMsg();
    char** sub = GDALGetMetadata(ds, "SUBDATASETS");
    std::string all;
    for (char** p = sub; p && *p; ++p) all += std::string(*p) + "\n";
    EXPECT_NE(all.find("unwrapped_phase"), std::string::npos) << all;
    EXPECT_NE(all.find("connected_components"), std::string::npos) << all;
    GDALClose(ds);
}
