// Issue 14: outputs that never destroy anything, inputs checked before any work. One test
// (or more) per row of the table, through the tessera executable: the exit code,
// exactly one error line naming the file, and every file that existed before the run
// unchanged (content and inode) afterwards, with no temporary left.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/output_set.h"
#include "io/raster_reader.h"
#include "support/hologram_scene.h"
#include "support/cli.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::run_tessera;
using testing::slurp;
using testing::TempDir;
using testing::temporaries_of;

// What a file is before a run: its kind, inode and content.
struct Snapshot {
    bool exists = false;
    mode_t mode = 0;
    ino_t ino = 0;
    std::string content;
};
Snapshot snap(const std::string& path) {
    Snapshot s;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) return s;
    s.exists = true;
    s.mode = st.st_mode;
    s.ino = st.st_ino;
    if (S_ISREG(st.st_mode)) s.content = slurp(path);
    return s;
}
bool same(const Snapshot& a, const Snapshot& b) {
    return a.exists == b.exists && a.mode == b.mode && a.ino == b.ino && a.content == b.content;
}

int64_t lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// Files in `dir` whose name holds ".tmp" (any temporary of any output).
std::vector<std::string> temporaries_in(const std::string& dir) {
    std::vector<std::string> t;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().find(".tmp") != std::string::npos) t.push_back(e.path().string());
    return t;
}

class SafeOutputs : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(run_tessera("synth --case bowl --size 60x70 --seed 1 " + dir.path().string()).exit_code, 0);
        in = dir / "bowl_wrapped.tif";
        coh = dir / "bowl_coherence.tif";
    }
    // A refused or failed run: non-zero, one line naming `names`, `keep` unchanged, no temporary.
    void expect_refused(const std::string& args, const std::string& names, const std::vector<std::string>& keep,
                        const std::string& prefix = "timeout 60 ") {
        std::vector<Snapshot> before;
        for (const auto& k : keep) before.push_back(snap(k));
        const auto r = run_tessera(args, prefix);
        EXPECT_NE(r.exit_code, 0) << args;
        EXPECT_NE(r.exit_code, 124) << "hung: " << args;
        EXPECT_LT(r.exit_code, 124) << "ended by a signal: " << args;
        EXPECT_EQ(lines(r.err), 1) << "want exactly one line, got:\n" << r.err;
        EXPECT_EQ(r.err.rfind("tessera: error", 0), 0u) << r.err;
        EXPECT_NE(r.err.find(names), std::string::npos) << "should name " << names << ":\n" << r.err;
        for (size_t i = 0; i < keep.size(); ++i) EXPECT_TRUE(same(before[i], snap(keep[i]))) << keep[i] << " changed";
        EXPECT_TRUE(temporaries_in(dir.path().string()).empty()) << "temporary left";
    }
    std::string unwrap(const std::string& rest) { return "unwrap -q " + rest; }
    TempDir dir{"safe_out"};
    std::string in, coh;
};

// --- synth: the same rules as every command's outputs ------------------------------------------

TEST_F(SafeOutputs, SynthNeverReplacesWithoutOverwrite) {
    const std::string d = dir / "scene", w = d + "/topo_wrapped.tif", c = d + "/topo_coherence.tif",
                      t = d + "/topo_truth.tif";
    ASSERT_EQ(run_tessera("synth --case topo --size 40x50 --seed 1 " + d).exit_code, 0);
    // Again without --overwrite: refused, one line naming the file, the three files unchanged.
    expect_refused("synth --case topo --size 40x50 --seed 2 " + d, w, {w, c, t});
    // One file of a case there and another case asked for too: nothing of either is written.
    expect_refused("synth --case all --size 40x50 --seed 1 " + d, "--overwrite", {w, c, t});
    EXPECT_FALSE(fs::exists(d + "/bowl_wrapped.tif"));
    // A FIFO where a file goes: refused even with --overwrite, the FIFO left as it was.
    const std::string fresh = dir / "fresh", fifo = fresh + "/bowl_truth.tif";
    fs::create_directories(fresh);
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    expect_refused("synth --overwrite --case bowl --size 40x50 --seed 1 " + fresh, "not a regular file", {fifo});
    EXPECT_FALSE(fs::exists(fresh + "/bowl_wrapped.tif"));
    // With --overwrite: replaced, a new seed gives new bytes.
    const Snapshot before = snap(w);
    ASSERT_EQ(run_tessera("synth --overwrite --case topo --size 40x50 --seed 2 " + d).exit_code, 0);
    EXPECT_FALSE(same(before, snap(w)));
    EXPECT_TRUE(temporaries_in(d).empty());
}

// --- row 1: /dev/null, a FIFO, a device node, a directory as output -----------------------

TEST_F(SafeOutputs, DevNullIsNotReplaced) {
    expect_refused(unwrap(in + " /dev/null"), "/dev/null", {"/dev/null"});
    expect_refused(unwrap("--overwrite " + in + " /dev/null"), "not a regular file", {"/dev/null"});
    struct stat st {};
    ASSERT_EQ(stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(SafeOutputs, FifoDeviceAndDirectoryOutputsAreRefused) {
    const std::string fifo = dir / "out.fifo", dev = dir / "null.dev", sub = dir / "sub";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    ASSERT_EQ(mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << "mknod needs root";
    fs::create_directory(sub);
    for (const std::string& o : {fifo, dev}) {
        expect_refused(unwrap("--overwrite " + in + " " + o), "not a regular file", {o});
        expect_refused(unwrap("--overwrite --geotiff " + o + " " + in + " " + (dir / "r.h5")), o, {o});
        expect_refused(unwrap("--overwrite --quicklook " + o + " " + in + " " + (dir / "r.h5")), o, {o});
    }
    expect_refused(unwrap("--overwrite --geotiff " + sub + " " + in + " " + (dir / "r.h5")), "directory", {sub});
    EXPECT_FALSE(fs::exists(dir / "r.h5"));
}

// --- row 2: an output that is an input ------------------------------------------------------

TEST_F(SafeOutputs, OutputThatIsAnInputIsRefused) {
    const std::string out = dir / "r.h5";
    expect_refused(unwrap("--overwrite " + in + " " + in), "same file as the input", {in});
    expect_refused(unwrap("--overwrite --coherence " + coh + " " + in + " " + coh), "same file", {in, coh});
    expect_refused(unwrap("--overwrite --geotiff " + in + " " + in + " " + out), "same file", {in});
    expect_refused(unwrap("--overwrite --quicklook " + coh + " --coherence " + coh + " " + in + " " + out),
                   "same file", {in, coh});
    // Through a symbolic link and a hard link.
    fs::create_symlink(in, dir / "link.tif");
    fs::create_hard_link(coh, dir / "hard.tif");
    expect_refused(unwrap("--overwrite " + in + " " + (dir / "link.tif")), "same file", {in, dir / "link.tif"});
    expect_refused(unwrap("--overwrite --coherence " + coh + " " + in + " " + (dir / "hard.tif")), "same file",
                   {coh});
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(SafeOutputs, TwoOutputsThatAreOneFileAreRefused) {
    const std::string out = dir / "r.h5";
    expect_refused(unwrap("--geotiff " + out + " " + in + " " + out), "two outputs", {});
    fs::create_directory_symlink(dir.path(), dir / "again");
    expect_refused(unwrap("--quicklook " + (dir / "again/r.h5") + " " + in + " " + out), "two outputs", {});
    { std::ofstream(dir / "a.tif") << "old"; }
    fs::create_hard_link(dir / "a.tif", dir / "b.png");
    expect_refused(unwrap("--overwrite --geotiff " + (dir / "a.tif") + " --quicklook " + (dir / "b.png") + " " + in +
                          " " + out),
                   "same file as the output", {dir / "a.tif"});
    EXPECT_FALSE(fs::exists(out));
}

TEST_F(SafeOutputs, NoLabelledPixelIsReported) {
    const auto r = run_tessera(unwrap("--min-component-size 100000 " + in + " " + (dir / "r.h5")));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no pixel was labelled"), std::string::npos) << r.err;
}

// The other commands that write files: the same refusals, --overwrite for existing outputs.
TEST_F(SafeOutputs, OtherCommandsNeverDestroyTheirInputs) {
    const std::string truth = dir / "bowl_truth.tif";
    expect_refused("background -q " + truth + " " + truth, "same file", {truth});
    expect_refused("clahe -q --overwrite " + truth + " " + truth, "same file", {truth});
    expect_refused("hologram -q --overwrite " + truth + " " + truth, "same file", {truth});
    const std::string fifo = dir / "bg.fifo.tif";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    expect_refused("background -q --overwrite " + truth + " " + fifo, "not a regular file", {fifo});
    // An existing output: refused without --overwrite, replaced with it.
    const std::string bg = dir / "bg.tif", cl = dir / "cl.tif";
    ASSERT_EQ(run_tessera("background -q " + truth + " " + bg).exit_code, 0);
    ASSERT_EQ(run_tessera("clahe -q " + truth + " " + cl).exit_code, 0);
    expect_refused("background -q " + truth + " " + bg, "--overwrite", {bg});
    expect_refused("clahe -q " + truth + " " + cl, "--overwrite", {cl});
    EXPECT_EQ(run_tessera("background -q --overwrite " + truth + " " + bg).exit_code, 0);
    EXPECT_EQ(run_tessera("clahe -q --overwrite " + truth + " " + cl).exit_code, 0);
    EXPECT_TRUE(temporaries_in(dir.path().string()).empty());
}

// --- row 3: GDAL's HDF5:"file"://dataset and /vsi names --------------------------------------

TEST_F(SafeOutputs, Hdf5SubdatasetAndVsiInputsAreSeenThrough) {
    const std::string p = dir / "p.h5";
    ASSERT_EQ(run_tessera(unwrap(in + " " + p)).exit_code, 0);
    expect_refused(unwrap("--overwrite 'HDF5:\"" + p + "\"://unwrapped_phase' " + p), "same file", {p});
    expect_refused(unwrap("--overwrite HDF5:" + p + "://unwrapped_phase " + p), "same file", {p});
    // /vsigzip/ and /vsizip/ of a local archive.
    ASSERT_EQ(std::system(("gzip -k " + in).c_str()), 0);
    expect_refused(unwrap("--overwrite /vsigzip/" + in + ".gz " + in + ".gz"), "same file", {in + ".gz"});
    EXPECT_EQ(local_file_behind("/vsigzip/" + in + ".gz"), in + ".gz");
    EXPECT_EQ(local_file_behind("/vsizip/" + in + ".gz/inner/x.tif"), in + ".gz");
    EXPECT_EQ(local_file_behind("/vsizip/{" + in + ".gz}/x.tif"), in + ".gz");
    EXPECT_EQ(local_file_behind("/vsisubfile/0_100," + in), in);
    EXPECT_EQ(local_file_behind("NETCDF:\"" + in + "\":var"), in);
    EXPECT_EQ(local_file_behind("/vsicurl/http://example.com/x.tif"), "");
}

// --- row 4: a link planted at the temporary's name ------------------------------------------

TEST_F(SafeOutputs, PlantedLinkAtTheOldTemporaryNameIsNeverFollowed) {
    const std::string victim = dir / "victim.txt", out = dir / "r.h5";
    { std::ofstream(victim) << "precious"; }
    fs::create_symlink(victim, out + ".tmp");
    fs::create_symlink(victim, dir / "r.tif.tmp");
    const auto r = run_tessera(unwrap("--geotiff " + (dir / "r.tif") + " " + in + " " + out));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(slurp(victim), "precious");
    EXPECT_TRUE(fs::is_symlink(out + ".tmp"));
    // The temporaries themselves are created exclusively: never an existing name.
    const std::string t1 = create_temporary(dir / "x.h5"), t2 = create_temporary(dir / "x.h5");
    EXPECT_NE(t1, t2);
    fs::remove(t1), fs::remove(t2);
}

// --- row 5: two runs writing the same output -------------------------------------------------

TEST_F(SafeOutputs, TwoRunsOnOneOutputLeaveACompleteFile) {
    const std::string out = dir / "r.h5";
    const std::string cmd = std::string(TESSERA_EXE) + " unwrap -q --overwrite " + in + " " + out;
    const std::string both = "(" + cmd + " & " + cmd + " & wait) >/dev/null 2>&1";
    for (int i = 0; i < 3; ++i) ASSERT_EQ(std::system(both.c_str()), 0);
    const auto info = run_tessera("info " + out);
    EXPECT_EQ(info.exit_code, 0) << info.err;
    EXPECT_NE(info.out.find("unwrapped_phase"), std::string::npos);
    EXPECT_TRUE(temporaries_in(dir.path().string()).empty());
    // Without --overwrite, on a fresh output: exactly one of two runs writes it, the other is
    // refused up front or at its rename (never replacing the first's file).
    for (int i = 0; i < 3; ++i) {
        const std::string fresh = dir / ("fresh" + std::to_string(i) + ".h5");
        const std::string one = std::string(TESSERA_EXE) + " unwrap -q " + in + " " + fresh + " 2>/dev/null";
        const std::string two = "(" + one + "; echo $? >" + fresh + ".rc1) & (" + one + "; echo $? >" + fresh +
                                ".rc2) & wait";
        ASSERT_EQ(std::system(two.c_str()), 0);
        const int rc1 = std::stoi(slurp(fresh + ".rc1")), rc2 = std::stoi(slurp(fresh + ".rc2"));
        EXPECT_TRUE((rc1 == 0) != (rc2 == 0)) << rc1 << " " << rc2;
        EXPECT_EQ(run_tessera("info " + fresh).exit_code, 0);
    }
    EXPECT_TRUE(temporaries_in(dir.path().string()).empty());
}

// --- row 6: a failure after the HDF5 is written never loses a previous result -----------------

TEST_F(SafeOutputs, LateFailureKeepsThePreviousResults) {
    const std::string out = dir / "r.h5", tif = dir / "r.tif", png = dir / "r.png";
    const std::string args = "--geotiff " + tif + " --quicklook " + png + " " + in + " " + out;
    ASSERT_EQ(run_tessera(unwrap(args)).exit_code, 0);
    // Every output written, none in place yet: all three stay as they were.
    expect_refused(unwrap("--overwrite " + args), "injected", {out, tif, png},
                   "TESSERA_INJECT_ERROR=0:commit timeout 60 ");
    // A GeoTIFF that cannot be written (its directory vanished meanwhile is hard to stage; a
    // directory at the quicklook's name is refused up front): nothing changes either.
    fs::remove(png);
    fs::create_directory(png);
    expect_refused(unwrap("--overwrite " + args), png, {out, tif});
    fs::remove(png);
    // Without --overwrite an existing output is refused, one line, nothing changed.
    expect_refused(unwrap(args), "--overwrite", {out, tif});
    // With it, every output is replaced.
    const Snapshot old = snap(out);
    const auto r = run_tessera(unwrap("--overwrite --min-component-size 5 " + args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(snap(out).ino, old.ino);
    EXPECT_TRUE(fs::exists(png));
    EXPECT_TRUE(temporaries_in(dir.path().string()).empty());
}

// The real thing: the file system fills up while the GeoTIFF is written, after the HDF5 (a
// small tmpfs; skipped where mounting is not allowed).
TEST_F(SafeOutputs, DiskFullDuringTheGeotiffKeepsThePreviousResults) {
    const std::string mnt = dir / "small";
    fs::create_directory(mnt);
    if (std::system(("mount -t tmpfs -o size=4m tmpfs " + mnt + " 2>/dev/null").c_str()) != 0)
        GTEST_SKIP() << "cannot mount a tmpfs here";
    struct Unmount {
        std::string m;
        ~Unmount() { std::system(("umount " + m).c_str()); }
    } unmount{mnt};
    ASSERT_EQ(run_tessera("synth --case topo --size 300x300 --seed 1 " + dir.path().string()).exit_code, 0);
    const std::string topo = dir / "topo_wrapped.tif", out = mnt + "/r.h5", tif = mnt + "/r.tif";
    ASSERT_EQ(run_tessera(unwrap("--geotiff " + tif + " " + topo + " " + out)).exit_code, 0);
    // Leave room for the new HDF5 (as large as the old one) and a little, not for the GeoTIFF.
    struct statvfs vs {};
    ASSERT_EQ(statvfs(mnt.c_str(), &vs), 0);
    const int64_t room = static_cast<int64_t>(fs::file_size(out)) + 64 * 1024;
    const int64_t fill = static_cast<int64_t>(vs.f_bavail * vs.f_frsize) - room;
    ASSERT_GT(fill, 0);
    { std::ofstream(mnt + "/filler", std::ios::binary) << std::string(static_cast<size_t>(fill), 'x'); }
    // The up-front space check is told there is room (as when another writer fills the disk
    // meanwhile).
    std::vector<Snapshot> before{snap(out), snap(tif)};
    const auto r = run_tessera(unwrap("--overwrite --geotiff " + tif + " " + topo + " " + out),
                               "TESSERA_TEST_AVAILABLE_DISK=1000000000000 timeout 60 ");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.find("ERROR 1"), std::string::npos) << r.err;
    EXPECT_TRUE(same(before[0], snap(out))) << "the previous HDF5 changed";
    EXPECT_TRUE(same(before[1], snap(tif))) << "the previous GeoTIFF changed";
    EXPECT_TRUE(temporaries_in(mnt).empty());
    // And the check before any work, with the real numbers: one line naming the bytes.
    expect_refused(unwrap("--overwrite --geotiff " + tif + " " + topo + " " + out), "disk space", {out, tif});
}

// OutputSet: when one rename fails, the outputs already renamed get their old files back.
TEST(OutputSet, CommitIsAllOrNone) {
    TempDir dir("output_set");
    const std::string a = dir / "a.txt", b = dir / "b";
    { std::ofstream(a) << "old a"; }
    fs::create_directories(b + "/full");  // a non-empty directory: rename(file, b) fails
    {
        OutputSet set;
        { std::ofstream(set.stage(a)) << "new a"; }
        { std::ofstream(set.stage(b)) << "new b"; }
        EXPECT_THROW(set.commit(), InputError);
    }
    EXPECT_EQ(slurp(a), "old a");
    EXPECT_TRUE(fs::is_directory(b + "/full"));
    EXPECT_TRUE(temporaries_in(dir.path().string()).empty());
    for (const auto& e : fs::directory_iterator(dir.path()))
        EXPECT_TRUE(e.path() == fs::path(a) || e.path() == fs::path(b)) << e.path();
    // Without overwrite a file that appeared meanwhile is not replaced.
    {
        OutputSet set(/*overwrite=*/false);
        { std::ofstream(set.stage(dir / "c.txt")) << "new c"; }
        { std::ofstream(dir / "c.txt") << "someone else's"; }
        EXPECT_THROW(set.commit(), InputError);
    }
    EXPECT_EQ(slurp(dir / "c.txt"), "someone else's");
    EXPECT_TRUE(temporaries_in(dir.path().string()).empty());
}

// --- row 7: SIGINT / SIGTERM remove the temporaries --------------------------------------------

TEST_F(SafeOutputs, SignalsRemoveTheTemporaries) {
    for (int sig : {SIGTERM, SIGINT}) {
        SCOPED_TRACE(sig);
        const std::string out = dir / "r.h5";
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            setenv("TESSERA_INJECT_ERROR", "0:matching:sleep", 1);
            const int devnull = open("/dev/null", O_WRONLY);
            dup2(devnull, 1), dup2(devnull, 2);
            execl(TESSERA_EXE, TESSERA_EXE, "unwrap", "-q", "--geotiff", (dir / "r.tif").c_str(), in.c_str(),
                  out.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        // Wait until the HDF5 temporary exists (the run sleeps at its matching stage).
        bool seen = false;
        for (int i = 0; i < 300 && !seen; ++i) {
            seen = !temporaries_of(out).empty();
            if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        EXPECT_TRUE(seen) << "no temporary appeared";
        kill(pid, sig);
        int st = 0;
        ASSERT_EQ(waitpid(pid, &st, 0), pid);
        EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == sig) << "status " << st;
        EXPECT_TRUE(temporaries_in(dir.path().string()).empty());
        EXPECT_FALSE(fs::exists(out));
    }
}

// --- row 8: a VRT declaring a huge size --------------------------------------------------------

// A scene larger than memory streams (section 5.1), so what refuses it up front is the disk (made
// to look 1 GB here) or a memory limit that holds no row of tiles.
TEST_F(SafeOutputs, HugeVrtEndsInOneLineWithTheBytes) {
    const std::string small_disk = "TESSERA_TEST_AVAILABLE_DISK=1000000000 timeout 60 ";
    for (const char* n : {"70000", "200000"}) {
        const std::string vrt = dir / (std::string("huge") + n + ".vrt");
        std::ofstream(vrt) << "<VRTDataset rasterXSize=\"" << n << "\" rasterYSize=\"" << n
                           << "\"><VRTRasterBand dataType=\"Float32\" band=\"1\"/></VRTDataset>\n";
        const auto t0 = std::chrono::steady_clock::now();
        expect_refused(unwrap(vrt + " " + (dir / "r.h5")), dir / "r.h5", {}, small_disk);
        const auto lim = run_tessera(unwrap("--memory-limit 100M " + vrt + " " + (dir / "r.h5")));
        EXPECT_NE(lim.exit_code, 0);
        EXPECT_NE(lim.err.find("--memory-limit"), std::string::npos) << lim.err;
        const auto r = run_tessera(unwrap(vrt + " " + (dir / "r.h5")), small_disk);
        EXPECT_NE(r.err.find("bytes"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("available"), std::string::npos) << r.err;
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
        EXPECT_FALSE(fs::exists(dir / "r.h5"));
    }
}

// The other commands estimate their memory too, before reading or allocating (the disk is
// made to look large enough, the memory fixed at 8 GB).
TEST_F(SafeOutputs, HugeVrtOtherCommandsEndInOneLineWithTheMemory) {
    const std::string vrt = dir / "huge.vrt";
    std::ofstream(vrt) << "<VRTDataset rasterXSize=\"70000\" rasterYSize=\"70000\"><VRTRasterBand "
                          "dataType=\"Float32\" band=\"1\"/></VRTDataset>\n";
    const std::string env = "TESSERA_TEST_AVAILABLE_DISK=1000000000000000 TESSERA_TEST_AVAILABLE_MEMORY=8000000000 timeout 60 ";
    for (const std::string& cmd : {"background -q " + vrt + " " + (dir / "bg.h5"), "clahe -q " + vrt + " " + (dir / "c.tif"),
                                   "hologram -q " + vrt + " " + (dir / "h.tif")}) {
        const auto t0 = std::chrono::steady_clock::now();
        expect_refused(cmd, "of memory per rank", {}, env);
        const auto r = run_tessera(cmd, env);
        EXPECT_NE(r.err.find(vrt), std::string::npos) << r.err;
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0) << cmd;
    }
    for (const char* f : {"bg.h5", "c.tif", "h.tif"}) EXPECT_FALSE(fs::exists(dir / f)) << f;
}

// Batches learn each frame's size as they go: every frame's files are checked for disk space
// before they are written, on `hologram` and on `unwrap --from-hologram` (frame lanes).
TEST_F(SafeOutputs, BatchFramesCheckTheirDiskSpace) {
    std::vector<std::string> frames;
    for (int k = 0; k < 2; ++k) {
        testing::HologramSpec spec;
        spec.H = 64, spec.W = 80, spec.seed = 7 + static_cast<uint64_t>(k);
        const testing::SynthHologram h = testing::make_hologram(spec);
        frames.push_back(dir / ("h" + std::to_string(k) + ".tif"));
        write_geotiff_f32(frames.back(), h.H, h.W, h.intensity.data(), GeoRef{}, std::nullopt);
    }
    const std::string ins = frames[0] + " " + frames[1], out = dir / "out";
    fs::create_directories(out);
    for (const std::string& cmd : {"hologram -q " + ins + " " + out, "unwrap -q --from-hologram --lanes 2 " + ins + " " + out}) {
        const auto r = run_tessera(cmd, "TESSERA_TEST_AVAILABLE_DISK=1000 timeout 60 ");
        EXPECT_NE(r.exit_code, 0) << cmd;
        EXPECT_LT(r.exit_code, 124) << cmd;
        EXPECT_NE(r.err.find("disk space"), std::string::npos) << cmd << ":\n" << r.err;
        EXPECT_TRUE(fs::is_empty(out)) << cmd << ": a frame was written";
        // With room, the same batch writes both frames.
        ASSERT_EQ(run_tessera(cmd).exit_code, 0) << cmd;
        EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator{}), 2) << cmd;
        fs::remove_all(out);
        fs::create_directories(out);
    }
}

TEST_F(SafeOutputs, NoDiskSpaceEndsInOneLine) {
    const std::string low = "TESSERA_TEST_AVAILABLE_DISK=1000 ";
    expect_refused(unwrap(in + " " + (dir / "r.h5")), "disk space", {}, low);
    expect_refused("background -q " + in + " " + (dir / "bg.h5"), "disk space", {}, low);
    expect_refused("clahe -q " + in + " " + (dir / "c.png"), "disk space", {}, low);
    expect_refused("hologram -q " + in + " " + (dir / "h.tif"), "disk space", {}, low);
    for (const char* f : {"r.h5", "bg.h5", "c.png", "h.tif"}) EXPECT_FALSE(fs::exists(dir / f)) << f;
}

// --- rows 9 and 10: phase in degrees or cycles, coherence outside [0, 1] ---------------------

TEST_F(SafeOutputs, PhaseThatIsNotRadiansInMinusPiPi) {
    RasterReader r(in, 1);
    const int64_t H = r.info().rows, W = r.info().cols;
    std::vector<float> phase(static_cast<size_t>(H * W));
    std::vector<uint8_t> valid(phase.size());
    r.read_phase({0, 0, H, W}, phase.data(), valid.data(), W);
    auto scaled = [&](const char* name, double f, double add) {
        std::vector<float> v(phase.size());
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(phase[i] * f + add);
        const std::string p = dir / name;
        write_geotiff_f32(p, H, W, v.data(), GeoRef{}, std::nullopt);
        return p;
    };
    const double pi = std::numbers::pi;
    const std::string deg = scaled("deg.tif", 180 / pi, 0), cyc = scaled("cyc.tif", 0.5 / pi, 0),
                      pos = scaled("pos.tif", 1, pi);
    expect_refused(unwrap(deg + " " + (dir / "r.h5")), "degrees", {deg});
    expect_refused(unwrap(cyc + " " + (dir / "r.h5")), "cycles", {cyc});
    // Streamed: the check after the first pass, from every chunk's scan, says the same.
    expect_refused(unwrap("--tile-size 32 --chunk-rows 32 " + cyc + " " + (dir / "r.h5")), "cycles", {cyc});
    const std::string wide = scaled("wide.tif", 1.5, 0);  // [-1.5 pi, 1.5 pi]: no convention
    expect_refused(unwrap(wide + " " + (dir / "r.h5")), "not a wrapped phase", {wide});
    // [0, 2 pi) (Ghiglia and Pritt's data) is a wrapped phase too: the same result as [-pi, pi].
    EXPECT_EQ(run_tessera(unwrap(pos + " " + (dir / "pos.h5"))).exit_code, 0);
    EXPECT_FALSE(fs::exists(dir / "r.h5"));
}

// A genuine phase that stays within one radian is not taken for cycles: a smooth ramp from
// -0.475 to 0.475 rad (no wraps at all) and uniform noise in [-0.5, 0.5] rad (steps spread
// evenly, no wraps standing out) both unwrap.
TEST_F(SafeOutputs, PhaseWithinOneRadianIsNotTakenForCycles) {
    const int64_t H = 60, W = 70;
    std::vector<float> ramp(static_cast<size_t>(H * W)), noise(ramp.size());
    uint64_t x = 12345;
    for (int64_t r = 0; r < H; ++r)
        for (int64_t c = 0; c < W; ++c) {
            ramp[static_cast<size_t>(r * W + c)] = static_cast<float>(-0.475 + 0.95 * static_cast<double>(c) / (W - 1));
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            noise[static_cast<size_t>(r * W + c)] = static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 - 0.5);
        }
    for (const auto& [name, v] : {std::pair<const char*, const std::vector<float>*>{"ramp.tif", &ramp}, {"noise.tif", &noise}}) {
        const std::string p = dir / name;
        write_geotiff_f32(p, H, W, v->data(), GeoRef{}, std::nullopt);
        const auto r = run_tessera(unwrap(p + " " + (dir / (std::string(name) + ".h5"))));
        EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    }
}

TEST_F(SafeOutputs, CoherenceOutsideZeroOne) {
    expect_refused(unwrap("--min-coherence 2 --coherence " + coh + " " + in + " " + (dir / "r.h5")), "[0, 1]",
                   {});
    expect_refused(unwrap("--min-coherence -0.5 " + in + " " + (dir / "r.h5")), "[0, 1]", {});
    RasterReader r(coh, 1);
    const int64_t H = r.info().rows, W = r.info().cols;
    std::vector<float> c(static_cast<size_t>(H * W), 2.0f);
    write_geotiff_f32(dir / "c2.tif", H, W, c.data(), GeoRef{}, std::nullopt);
    expect_refused(unwrap("--coherence " + (dir / "c2.tif") + " " + in + " " + (dir / "r.h5")), "c2.tif", {});
    EXPECT_FALSE(fs::exists(dir / "r.h5"));
}

// --- row 11: tessera info on damaged files --------------------------------------------------

TEST_F(SafeOutputs, InfoOnDamagedCopiesNeverCrashes) {
    const std::string good = dir / "good.h5";
    ASSERT_EQ(run_tessera(unwrap("--save-residues " + in + " " + good)).exit_code, 0);
    const std::string bytes = slurp(good);
    ASSERT_GT(bytes.size(), 1000u);
    std::mt19937_64 rng(14);
    std::string files;
    const int n = 200;
    for (int i = 0; i < n; ++i) {
        std::string b = bytes;
        if (i % 4 == 3) {
            b.resize(rng() % b.size());  // truncated
        } else {
            const int flips = 1 + static_cast<int>(rng() % 20);
            for (int k = 0; k < flips; ++k) {
                // Mostly the metadata near the start (superblock, object headers, B-trees).
                const size_t at = (k % 2 ? rng() % b.size() : rng() % std::min<size_t>(b.size(), 8192));
                b[at] = static_cast<char>(rng());
            }
        }
        const std::string p = dir / ("fuzz" + std::to_string(i) + ".h5");
        std::ofstream(p, std::ios::binary) << b;
        files += " " + p;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_tessera("info" + files, "timeout 300 ");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 120.0);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << "exit " << r.exit_code << "\n" << r.err.substr(0, 2000);
    // Every error line is tessera's and names its file.
    size_t start = 0;
    int errors = 0;
    for (size_t nl; (nl = r.err.find('\n', start)) != std::string::npos; start = nl + 1, ++errors) {
        const std::string line = r.err.substr(start, nl - start);
        EXPECT_EQ(line.rfind("tessera: error: " + (dir / "fuzz"), 0), 0u) << line;
    }
    EXPECT_GT(errors, 0);
    // Not a tessera result: refused; the good one described.
    const auto ok = run_tessera("info " + good);
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_NE(ok.out.find("software = tessera"), std::string::npos);
}

// When HDF5 itself crashes on a file, the child reading it dies, not tessera: one line.
TEST_F(SafeOutputs, InfoSurvivesAReaderThatCrashes) {
    const std::string good = dir / "good.h5";
    ASSERT_EQ(run_tessera(unwrap(in + " " + good)).exit_code, 0);
    expect_refused("info " + good, "damaged file (HDF5 crashed reading it)", {good}, "TESSERA_TEST_INFO_CRASH=1 ");
}

TEST_F(SafeOutputs, InfoIsLinearInAttributes) {
    // 20000 attributes on the root of a file written through the library.
    const std::string p = dir / "many.h5";
    ASSERT_EQ(run_tessera(unwrap(in + " " + p)).exit_code, 0);
    hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t space = H5Screate(H5S_SCALAR);
    for (int i = 0; i < 20000; ++i) {
        const double v = i;
        hid_t a = H5Acreate2(f, ("extra_" + std::to_string(i)).c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
                             H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
        H5Aclose(a);
    }
    H5Sclose(space);
    H5Fclose(f);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_tessera("info " + p, "timeout 120 ");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
    EXPECT_NE(r.out.find("more attributes"), std::string::npos);
}

TEST_F(SafeOutputs, InfoRefusesFilesThatAreNotTesseraResults) {
    const std::string p = dir / "foreign.h5";
    hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    H5Fclose(f);
    expect_refused("info " + p, "not a tessera result", {p});
    expect_refused("info " + in, "not an HDF5 file", {in});
}

// --- row 12: GDAL's and HDF5's raw messages ----------------------------------------------------

TEST_F(SafeOutputs, TruncatedGeotiffGivesOneLine) {
    const std::string bytes = slurp(in), cut = dir / "cut.tif";
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    expect_refused(unwrap(cut + " " + (dir / "r.h5")), "cut.tif", {cut});
    const auto r = run_tessera(unwrap(cut + " " + (dir / "r.h5")));
    EXPECT_EQ(r.err.find("ERROR 1:"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("HDF5-DIAG"), std::string::npos) << r.err;
}

// The same file as a VRT's source (read through RasterIO): GDAL's GTIFF_DIRECT_IO would read it
// without an error (a tile cut short), so it stays off.
TEST_F(SafeOutputs, TruncatedGeotiffInAVrtGivesOneLine) {
    const std::string bytes = slurp(in), cut = dir / "cut.tif", vrt = dir / "cut.vrt";
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    std::ofstream(vrt) << "<VRTDataset rasterXSize=\"70\" rasterYSize=\"60\"><VRTRasterBand dataType=\"Float32\" "
                          "band=\"1\"><SimpleSource><SourceFilename relativeToVRT=\"1\">cut.tif</SourceFilename>"
                          "<SourceBand>1</SourceBand><SrcRect xOff=\"0\" yOff=\"0\" xSize=\"70\" ySize=\"60\"/>"
                          "<DstRect xOff=\"0\" yOff=\"0\" xSize=\"70\" ySize=\"60\"/></SimpleSource>"
                          "</VRTRasterBand></VRTDataset>\n";
    expect_refused(unwrap(vrt + " " + (dir / "r.h5")), "cut.vrt", {cut, vrt});
}

// --- row 13: the command line --------------------------------------------------------------------

TEST_F(SafeOutputs, ReferenceTakesExactlyTwoValues) {
    const std::string out = dir / "r.h5";
    const auto r = run_tessera("unwrap -q " + in + " --reference 30 30 " + out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out));
}

TEST_F(SafeOutputs, RangeMessagesNameTheRange) {
    const auto r = run_tessera("unwrap --band 0 " + in + " " + (dir / "r.h5"));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("65535"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("1.79"), std::string::npos) << r.err;
    for (const char* bad : {"abc", "12", "12xq", "0x10", "10x", "99999999x10"}) {
        const auto s = run_tessera("synth --size " + std::string(bad) + " " + (dir / "s"));
        EXPECT_NE(s.exit_code, 0) << bad;
        EXPECT_EQ(lines(s.err), 1) << s.err;
        EXPECT_NE(s.err.find("--size"), std::string::npos) << s.err;
        EXPECT_NE(s.err.find("ROWSxCOLS"), std::string::npos) << s.err;
    }
}

}  // namespace
}  // namespace tessera
