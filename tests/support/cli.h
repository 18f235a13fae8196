// Test support: run the tessera executable, temporary folders, read result datasets.
#pragma once
#include <gtest/gtest.h>
#include <hdf5.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace tessera::testing {

struct RunResult {
    int exit_code = -1;
    std::string out, err;
};

inline std::string slurp(const std::string& path) {
    std::string s;
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
        std::array<char, 4096> buf;
        size_t n;
        while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) s.append(buf.data(), n);
        std::fclose(f);
    }
    return s;
}

// Runs `tessera ARGS` through the shell, stdout and stderr captured separately.
inline RunResult run_tessera(const std::string& args, const std::string& prefix = "") {
    const std::string base = "/tmp/tessera_test_" + std::to_string(getpid());
    // TESSERA_EXE in the environment: the program where the build's path does not exist (a GPU host's bundle).
    const char* exe = std::getenv("TESSERA_EXE");
    const std::string cmd = prefix + std::string(exe && *exe ? exe : TESSERA_EXE) + " " + args + " >" + base + ".out 2>" + base + ".err";
    const int st = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(base + ".out");
    r.err = slurp(base + ".err");
    std::filesystem::remove(base + ".out");
    std::filesystem::remove(base + ".err");
    return r;
}

// Temporaries of an output left in its directory: names "<file name of path>.tmp*" (the old
// fixed "<path>.tmp" and the unique "<path>.tmp.XXXXXX" of io/output_set.h).
inline std::vector<std::string> temporaries_of(const std::string& path) {
    namespace fs = std::filesystem;
    std::vector<std::string> left;
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    const std::string prefix = fs::path(path).filename().string() + ".tmp";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().filename().string().rfind(prefix, 0) == 0) left.push_back(e.path().string());
    return left;
}

// A fresh folder under /tmp, removed with the object.
class TempDir {
public:
    explicit TempDir(const std::string& tag) {
        path_ = std::filesystem::temp_directory_path() / ("tessera_" + tag + "_" + std::to_string(getpid()));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

template <typename T>
hid_t h5_type();
template <> inline hid_t h5_type<float>() { return H5T_NATIVE_FLOAT; }
template <> inline hid_t h5_type<uint32_t>() { return H5T_NATIVE_UINT32; }
template <> inline hid_t h5_type<int32_t>() { return H5T_NATIVE_INT32; }
template <> inline hid_t h5_type<int8_t>() { return H5T_NATIVE_INT8; }
template <> inline hid_t h5_type<uint8_t>() { return H5T_NATIVE_UINT8; }

// Whole 2-D dataset; throws if missing.
template <typename T>
std::vector<T> read_dataset(const std::string& file, const std::string& name) {
    hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) throw std::runtime_error("cannot open " + file);
    hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
    if (d < 0) {
        H5Fclose(f);
        throw std::runtime_error("no dataset " + name + " in " + file);
    }
    hid_t sp = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(sp, dims, nullptr);
    std::vector<T> v(dims[0] * dims[1]);
    H5Dread(d, h5_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    return v;
}

// A root attribute of an HDF5 file, read as `type` (T{} and a test failure when missing).
template <class T>
T root_attribute(const std::string& file, const char* name, hid_t type) {
    T v{};
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    EXPECT_GE(f, 0) << file;
    if (f < 0) return v;
    const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    EXPECT_GE(a, 0) << name << " in " << file;
    if (a >= 0) H5Aread(a, type, &v), H5Aclose(a);
    H5Fclose(f);
    return v;
}

}  // namespace tessera::testing
