#include "io/output_path.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "io/input_error.h"

namespace tessera {

void check_output_directory(const std::string& path) {
    namespace fs = std::filesystem;
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (!fs::exists(dir, ec)) throw InputError(path, "output directory '" + dir.string() + "' does not exist");
    if (!fs::is_directory(dir, ec)) throw InputError(path, "'" + dir.string() + "' is not a directory");
    if (access(dir.c_str(), W_OK) != 0) throw InputError(path, "output directory '" + dir.string() + "' is not writable");
}

namespace {

bool exists_nofollow(const std::string& p) {
    struct stat st {};
    return !p.empty() && stat(p.c_str(), &st) == 0;
}

// The longest leading part of `p` (cut at '/') that names an existing file that is not a
// directory: the archive of "/vsizip/a.zip/inner/x.tif".
std::string existing_prefix_file(const std::string& p) {
    std::string cur = p;
    while (!cur.empty()) {
        struct stat st {};
        if (stat(cur.c_str(), &st) == 0) return S_ISDIR(st.st_mode) ? std::string() : cur;
        const auto slash = cur.find_last_of('/');
        if (slash == std::string::npos || slash == 0) break;
        cur.resize(slash);
    }
    return {};
}

}  // namespace

std::string local_file_behind(const std::string& name) {
    if (name.empty()) return {};
    if (exists_nofollow(name)) return name;
    if (name.rfind("/vsi", 0) == 0) {
        const auto slash = name.find('/', 1);
        if (slash == std::string::npos) return {};
        const std::string kind = name.substr(1, slash - 1);  // "vsizip"
        std::string rest = name.substr(slash + 1);
        if (kind == "vsimem" || kind == "vsistdin" || kind == "vsistdout" || kind.rfind("vsicurl", 0) == 0 ||
            kind == "vsis3" || kind == "vsigs" || kind == "vsiaz" || kind == "vsiadls" || kind == "vsioss" ||
            kind == "vsiswift" || kind == "vsiwebhdfs" || kind == "vsihdfs")
            return {};
        if (kind == "vsisubfile") {  // /vsisubfile/OFFSET_SIZE,FILE
            const auto comma = rest.find(',');
            if (comma == std::string::npos) return {};
            rest = rest.substr(comma + 1);
        }
        if (!rest.empty() && rest[0] == '{') {  // /vsizip/{archive}/inner
            const auto close = rest.find('}');
            if (close == std::string::npos) return {};
            return local_file_behind(rest.substr(1, close - 1));
        }
        if (rest.rfind("/vsi", 0) == 0) return local_file_behind(rest);  // chained
        if (exists_nofollow(rest)) return rest;
        return existing_prefix_file(rest);  // the archive of an inner path
    }
    // DRIVER:"file":rest or DRIVER:file:rest (HDF5, NETCDF, GPKG, ...).
    const auto colon = name.find(':');
    if (colon != std::string::npos && colon > 1) {  // "C:" is not a driver
        bool driver = true;
        for (size_t i = 0; i < colon; ++i) {
            const char ch = name[i];
            driver = driver && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
        }
        if (driver) {
            std::string rest = name.substr(colon + 1);
            if (!rest.empty() && rest[0] == '"') {
                const auto q = rest.find('"', 1);
                if (q != std::string::npos) return local_file_behind(rest.substr(1, q - 1));
                return {};
            }
            // Unquoted: the longest part up to a ':' that exists.
            for (auto c = rest.find(':'); ; c = rest.find(':', c + 1)) {
                const std::string f = rest.substr(0, c);
                if (exists_nofollow(f)) return f;
                if (f.rfind("/vsi", 0) == 0) {
                    const std::string g = local_file_behind(f);
                    if (!g.empty()) return g;
                }
                if (c == std::string::npos) break;
            }
        }
    }
    return {};
}

void check_outputs(const std::vector<std::string>& outputs, const std::vector<std::string>& inputs,
                   bool overwrite) {
    struct Id {
        dev_t dev;
        ino_t ino;
        std::string name;
    };
    std::vector<Id> in_ids;
    for (const std::string& in : inputs) {
        const std::string f = local_file_behind(in);
        struct stat st {};
        if (!f.empty() && stat(f.c_str(), &st) == 0) in_ids.push_back({st.st_dev, st.st_ino, in});
    }
    std::vector<Id> out_ids;
    std::vector<std::string> seen;
    for (const std::string& out : outputs) {
        if (out.empty()) continue;
        std::error_code ec;
        std::string norm = std::filesystem::weakly_canonical(out, ec).string();
        if (ec) norm = std::filesystem::path(out).lexically_normal().string();
        for (const std::string& s : seen)
            if (s == norm) throw InputError(out, "is named as two outputs of this run");
        seen.push_back(norm);
        struct stat st {};
        if (stat(out.c_str(), &st) != 0) {
            // A dangling link would be replaced by the rename: refuse it like any existing name.
            struct stat lst {};
            if (lstat(out.c_str(), &lst) == 0)
                throw InputError(out, "is a dangling symbolic link; remove it or choose another output");
            check_output_directory(out);
            continue;
        }
        if (!S_ISREG(st.st_mode))
            throw InputError(out, std::string("exists and is not a regular file (") +
                                      (S_ISDIR(st.st_mode)    ? "a directory"
                                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                                       : S_ISCHR(st.st_mode)  ? "a character device"
                                       : S_ISBLK(st.st_mode)  ? "a block device"
                                       : S_ISSOCK(st.st_mode) ? "a socket"
                                                              : "not a file") +
                                      "); tessera writes only regular files");
        for (const Id& i : in_ids)
            if (i.dev == st.st_dev && i.ino == st.st_ino)
                throw InputError(out, "is the same file as the input " + i.name +
                                          "; writing it would destroy the input");
        for (const Id& o : out_ids)
            if (o.dev == st.st_dev && o.ino == st.st_ino)
                throw InputError(out, "is the same file as the output " + o.name);
        out_ids.push_back({st.st_dev, st.st_ino, out});
        check_output_directory(out);
        if (!overwrite) throw InputError(out, "exists; use --overwrite to replace it");
    }
}

std::string bytes_text(int64_t b) {
    char s[64];
    const double d = static_cast<double>(b);
    if (b >= (int64_t{1} << 30))
        std::snprintf(s, sizeof s, "%lld bytes (%.1f GiB)", static_cast<long long>(b), d / (1 << 30));
    else
        std::snprintf(s, sizeof s, "%lld bytes (%.1f MiB)", static_cast<long long>(b), d / (1 << 20));
    return s;
}

void check_disk_space(const std::vector<OutputNeed>& needs) {
    std::vector<std::pair<dev_t, int64_t>> per_fs;  // outputs on one file system add up
    for (const OutputNeed& n : needs) {
        if (n.path.empty()) continue;
        std::string dir = std::filesystem::path(n.path).parent_path().string();
        if (dir.empty()) dir = ".";
        struct statvfs vs {};
        struct stat st {};
        if (statvfs(dir.c_str(), &vs) != 0 || stat(dir.c_str(), &st) != 0) continue;
        int64_t avail = static_cast<int64_t>(vs.f_bavail) * static_cast<int64_t>(vs.f_frsize);
        if (const char* t = std::getenv("TESSERA_TEST_AVAILABLE_DISK")) avail = std::atoll(t);
        int64_t total = n.bytes;
        bool found = false;
        for (auto& [dev, sum] : per_fs)
            if (dev == st.st_dev) total = (sum += n.bytes), found = true;
        if (!found) per_fs.push_back({st.st_dev, n.bytes});
        if (total > avail)
            throw InputError(n.path, "needs about " + bytes_text(total) + " of disk space" +
                                         (total > n.bytes ? " (with the run's other outputs there)" : "") + ", " +
                                         bytes_text(avail) + " available in " + dir);
    }
}

}  // namespace tessera
