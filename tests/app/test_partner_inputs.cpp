// Coherence and mask by band and per input (issue 17 item 4): --coherence-band / --mask-band
// read the named band (a 2-band ISCE2-like .cor whose bands differ), a raster of several bands
// without one is refused in one line with no output, and a batch pairs each interferogram with
// its own coherence through a template ({dir} {stem} {name}), equal to one-by-one runs.
#include <gtest/gtest.h>
#include <gdal_priv.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "app/batch.h"
#include "app/partner_files.h"
#include "app/synth.h"
#include "io/gdal_session.h"
#include "io/geotiff_writer.h"
#include "io/input_error.h"
#include "support/cli.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::read_dataset;
using testing::run_tessera;
using testing::TempDir;

void write_f32(const std::string& path, int64_t rows, int64_t cols, const std::vector<float>& v) {
    GeoRef geo;
    geo.compress = false;
    write_geotiff_f32(path, rows, cols, v.data(), geo, std::numeric_limits<double>::quiet_NaN());
}

// A Float32 GeoTIFF with one band per vector (as ISCE2's .cor: amplitude, coherence).
void write_bands(const std::string& path, int64_t rows, int64_t cols, const std::vector<std::vector<float>>& bands) {
    register_gdal_once();
    GDALDriver* gtiff = GetGDALDriverManager()->GetDriverByName("GTiff");
    GDALDatasetUniquePtr ds(gtiff->Create(path.c_str(), static_cast<int>(cols), static_cast<int>(rows),
                                          static_cast<int>(bands.size()), GDT_Float32, nullptr));
    ASSERT_TRUE(ds);
    for (size_t b = 0; b < bands.size(); ++b)
        ASSERT_EQ(ds->GetRasterBand(static_cast<int>(b + 1))
                      ->RasterIO(GF_Write, 0, 0, static_cast<int>(cols), static_cast<int>(rows),
                                 const_cast<float*>(bands[b].data()), static_cast<int>(cols), static_cast<int>(rows),
                                 GDT_Float32, 0, 0, nullptr),
                  CE_None);
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Pixels whose coherence is below `thr` (or 0/NaN) must be label 0 and NaN: the band read is the
// one whose low values match the result's holes.
void expect_masked_where_low(const std::vector<float>& coh, float thr, const std::string& h5) {
    const auto u = read_dataset<float>(h5, "unwrapped_phase");
    const auto l = read_dataset<uint32_t>(h5, "connected_components");
    ASSERT_EQ(u.size(), coh.size());
    int64_t low = 0;
    for (size_t i = 0; i < coh.size(); ++i)
        if (!(coh[i] >= thr)) {
            ++low;
            EXPECT_EQ(l[i], 0u) << h5 << " pixel " << i;
            EXPECT_TRUE(std::isnan(u[i])) << h5 << " pixel " << i;
        }
    EXPECT_GT(low, 0) << "the test needs low-coherence pixels";
}

// Band 2 of a 2-band coherence is the coherence; band 1 an "amplitude" that is a valid coherence
// too, but everywhere high: the named band decides the result.
TEST(PartnerInputs, CoherenceBandReadsTheNamedBand) {
    TempDir dir("coh_band");
    const SynthScene s = make_scene("holes", 96, 128, 3);
    write_f32(dir / "ifg.tif", s.rows, s.cols, s.wrapped);
    const std::vector<float> high(s.coherence.size(), 0.95f);
    write_bands(dir / "two.tif", s.rows, s.cols, {high, s.coherence});
    write_f32(dir / "coh.tif", s.rows, s.cols, s.coherence);
    const std::string common = " --min-coherence 0.3 --tile-size 32 -q";
    ASSERT_EQ(run_tessera("unwrap " + dir / "ifg.tif " + dir / "b2.h5 --coherence " + dir / "two.tif --coherence-band 2" + common)
                  .exit_code, 0);
    ASSERT_EQ(run_tessera("unwrap " + dir / "ifg.tif " + dir / "b1.h5 --coherence " + dir / "two.tif --coherence-band 1" + common)
                  .exit_code, 0);
    ASSERT_EQ(run_tessera("unwrap " + dir / "ifg.tif " + dir / "one.h5 --coherence " + dir / "coh.tif" + common).exit_code, 0);
    expect_masked_where_low(s.coherence, 0.3f, dir / "b2.h5");
    EXPECT_TRUE(same_bits(read_dataset<float>(dir / "b2.h5", "unwrapped_phase"),
                          read_dataset<float>(dir / "one.h5", "unwrapped_phase")));
    EXPECT_EQ(read_dataset<uint32_t>(dir / "b2.h5", "connected_components"),
              read_dataset<uint32_t>(dir / "one.h5", "connected_components"));
    EXPECT_NE(read_dataset<uint32_t>(dir / "b1.h5", "connected_components"),
              read_dataset<uint32_t>(dir / "b2.h5", "connected_components"));
}

TEST(PartnerInputs, MaskBandReadsTheNamedBand) {
    TempDir dir("mask_band");
    const SynthScene s = make_scene("topo", 80, 100, 5);
    write_f32(dir / "ifg.tif", s.rows, s.cols, s.wrapped);
    std::vector<float> all(s.wrapped.size(), 1.0f), hole(s.wrapped.size(), 1.0f);
    for (int64_t r = 20; r < 50; ++r)
        for (int64_t c = 30; c < 70; ++c) hole[static_cast<size_t>(r * s.cols + c)] = 0.0f;
    write_bands(dir / "mask.tif", s.rows, s.cols, {all, hole});
    ASSERT_EQ(run_tessera("unwrap " + dir / "ifg.tif " + dir / "m.h5 -q --mask " + dir / "mask.tif --mask-band 2").exit_code, 0);
    const auto l = read_dataset<uint32_t>(dir / "m.h5", "connected_components");
    int64_t labelled_in_hole = 0, labelled_outside = 0;
    for (size_t i = 0; i < l.size(); ++i) (hole[i] == 0.0f ? labelled_in_hole : labelled_outside) += l[i] != 0;
    EXPECT_EQ(labelled_in_hole, 0);
    EXPECT_GT(labelled_outside, 0);
}

// Several bands and none named: one line naming the file and the option, exit non-zero, no output.
TEST(PartnerInputs, SeveralBandsWithoutOneAreRefused) {
    TempDir dir("bands_refused");
    const SynthScene s = make_scene("topo", 40, 50, 2);
    write_f32(dir / "ifg.tif", s.rows, s.cols, s.wrapped);
    write_bands(dir / "two.tif", s.rows, s.cols, {s.coherence, s.coherence});
    for (const std::string opt : {"--coherence", "--mask"}) {
        const auto r = run_tessera("unwrap " + dir / "ifg.tif " + dir / "out.h5 " + opt + " " + dir / "two.tif");
        EXPECT_NE(r.exit_code, 0);
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find(dir / "two.tif"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("2 bands"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(opt + "-band"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(dir / "out.h5"));
        EXPECT_TRUE(testing::temporaries_of(dir / "out.h5").empty());
    }
}

TEST(PartnerInputs, TemplateFields) {
    EXPECT_EQ(partner_file("{dir}/{name}.cor.tif", "stack/20200101_20200113.int.tif", "--coherence"),
              "stack/20200101_20200113.cor.tif");
    EXPECT_EQ(partner_file("{stem}.cor", "/d/a.b.int", "--coherence"), "a.b.cor");
    EXPECT_EQ(partner_file("{dir}/filt_fine.cor", "p1/filt_fine.int", "--coherence"), "p1/filt_fine.cor");
    EXPECT_EQ(partner_file("{dir}/m.tif", "x.int", "--mask"), "./m.tif");
    EXPECT_EQ(partner_file("/one/coh.tif", "a/x.int", "--coherence"), "/one/coh.tif");  // one file for all
    EXPECT_EQ(partner_file("", "a/x.int", "--coherence"), "");
    for (const std::string bad : {"{dir}/{stm}.cor", "{dir/x.cor"}) {
        try {
            partner_file(bad, "a/x.int", "--coherence");
            FAIL() << bad;
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find("--coherence '" + bad + "'"), std::string::npos) << e.what();
        }
    }
}

// A stack of three interferograms, each with its own coherence (different holes): the batch pairs
// each with its own (template), bit for bit the one-by-one run with that partner, and the holes of
// each result are its own partner's.
TEST(PartnerInputs, BatchPairsEachInputWithItsOwnCoherence) {
    TempDir dir("batch_partners");
    fs::create_directories(dir / "stack");
    std::vector<SynthScene> scenes;
    for (int i = 0; i < 3; ++i) {
        scenes.push_back(make_scene("holes", 64, 80, 21 + static_cast<uint64_t>(i)));
        const std::string pair = dir / ("stack/2020010" + std::to_string(i) + "_2020020" + std::to_string(i));
        write_f32(pair + ".int.tif", 64, 80, scenes.back().wrapped);
        write_f32(pair + ".cor.tif", 64, 80, scenes.back().coherence);
    }
    UnwrapOptions base;
    base.quiet = true;
    base.tile_size = 32;
    base.min_coherence = 0.3;
    base.coherence = dir / "stack/{name}.cor.tif";  // with a fixed directory
    const std::vector<std::string> inputs = expand_inputs({dir / "stack/*.int.tif"});
    ASSERT_EQ(inputs.size(), 3u);
    const std::string out = dir / "out";
    ASSERT_EQ(run_unwrap_batch(inputs, base, out, FrameBatchOptions{}), 0);
    // The CLI's form, with {dir}: the same files.
    ASSERT_EQ(run_tessera("unwrap '" + dir / "stack/*.int.tif' " + dir / "cli --coherence '{dir}/{name}.cor.tif' "
                          "--min-coherence 0.3 -q").exit_code, 0);
    for (int i = 0; i < 3; ++i) {
        const std::string name = "2020010" + std::to_string(i) + "_2020020" + std::to_string(i);
        UnwrapOptions one = base;
        one.input = dir / ("stack/" + name + ".int.tif");
        one.coherence = dir / ("stack/" + name + ".cor.tif");
        one.output = dir / ("one" + std::to_string(i) + ".h5");
        run_unwrap(one, MPI_COMM_WORLD);
        // One run with the template: its own partner too.
        const std::string alone = dir / ("alone" + std::to_string(i) + ".h5");
        ASSERT_EQ(run_tessera("unwrap -q " + one.input + " " + alone + " --coherence '{dir}/{name}.cor.tif' "
                              "--min-coherence 0.3").exit_code, 0);
        EXPECT_TRUE(same_bits(read_dataset<float>(alone, "unwrapped_phase"),
                              read_dataset<float>(one.output, "unwrapped_phase"))) << alone;
        for (const std::string& b : {out + "/" + name + ".int.h5", dir / ("cli/" + name + ".int.h5")}) {
            EXPECT_TRUE(same_bits(read_dataset<float>(b, "unwrapped_phase"),
                                  read_dataset<float>(one.output, "unwrapped_phase"))) << b;
            EXPECT_EQ(read_dataset<uint32_t>(b, "connected_components"),
                      read_dataset<uint32_t>(one.output, "connected_components")) << b;
            expect_masked_where_low(scenes[static_cast<size_t>(i)].coherence, 0.3f, b);
        }
    }
}

// A stack with one partner missing: one line naming that interferogram (and the template), no output.
TEST(PartnerInputs, MissingPartnerNamesTheInterferogram) {
    TempDir dir("batch_missing");
    for (int i = 0; i < 3; ++i) {
        const SynthScene s = make_scene("topo", 40, 48, 7 + static_cast<uint64_t>(i));
        write_f32(dir / ("p" + std::to_string(i) + ".int.tif"), 40, 48, s.wrapped);
        if (i != 1) write_f32(dir / ("p" + std::to_string(i) + ".cor.tif"), 40, 48, s.coherence);
    }
    const auto r = run_tessera("unwrap '" + dir / "p*.int.tif' " + dir / "out --coherence '{dir}/{name}.cor.tif'");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(dir / "p1.int.tif"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(dir / "p1.cor.tif"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("{dir}/{name}.cor.tif"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out"));
}

// A batch's quicklooks: one name for several frames is refused before any work (the first frame
// would write it and the next be refused); a template gives each frame its own picture, the same
// bytes as the one-by-one run's.
TEST(PartnerInputs, BatchQuicklookPerFrame) {
    TempDir dir("batch_quicklook");
    for (int i = 0; i < 2; ++i) {
        const SynthScene s = make_scene(i ? "bowl" : "topo", 48, 56, 3);
        write_f32(dir / ("f" + std::to_string(i) + ".tif"), 48, 56, s.wrapped);
    }
    const auto one_name = run_tessera("unwrap -q '" + dir / "f*.tif' " + dir / "out --quicklook " + dir / "q.png");
    EXPECT_EQ(one_name.exit_code, 2);
    EXPECT_EQ(std::count(one_name.err.begin(), one_name.err.end(), '\n'), 1) << one_name.err;
    EXPECT_NE(one_name.err.find("--quicklook names one file"), std::string::npos) << one_name.err;
    EXPECT_FALSE(fs::exists(dir / "out"));
    EXPECT_FALSE(fs::exists(dir / "q.png"));
    ASSERT_EQ(run_tessera("unwrap -q '" + dir / "f*.tif' " + dir / "out --quicklook '" + dir / "out/{stem}.png'")
                  .exit_code, 0);
    for (int i = 0; i < 2; ++i) {
        const std::string f = "f" + std::to_string(i);
        ASSERT_EQ(run_tessera("unwrap -q " + dir / (f + ".tif") + " " + dir / (f + ".h5") + " --quicklook " +
                              dir / (f + ".png")).exit_code, 0);
        const std::string batch = testing::slurp(dir / ("out/" + f + ".png"));
        EXPECT_FALSE(batch.empty()) << f;
        EXPECT_EQ(batch, testing::slurp(dir / (f + ".png"))) << f;
    }
    EXPECT_NE(testing::slurp(dir / "out/f0.png"), testing::slurp(dir / "out/f1.png"));
}

}  // namespace
}  // namespace tessera
