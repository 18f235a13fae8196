#include "io/png_writer.h"

#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal_priv.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "io/gdal_session.h"
#include "io/input_error.h"
#include "io/output_path.h"
#include "io/output_set.h"

namespace tessera {

void check_png_name(const std::string& path, const std::string& option) {
    std::string ext = std::filesystem::path(path).extension().string();
    for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (ext != ".png") throw InputError(path, option + " writes a PNG: name it *.png");
}

void write_png(const std::string& path, int64_t rows, int64_t cols, int bands, int bits, const void* data) {
    if (bits != 8 && bits != 16) throw std::invalid_argument("write_png: bits must be 8 or 16");
    if (rows < 1 || cols < 1 || rows > 1000000 || cols > 1000000)
        throw InputError(path, "cannot write a PNG of " + std::to_string(cols) + "x" + std::to_string(rows) +
                                   " pixels (cols x rows)");
    check_output_directory(path);
    register_gdal_once();
    StagedFile staged(path);  // unique, exclusive; renamed by finish() or the run's OutputSet
    const std::string tmp = staged.tmp();
    QuietGdal quiet;
    auto fail = [&](const std::string& problem) {
        std::string msg = problem;
        if (!quiet.message().empty()) msg += " (" + quiet.message() + ")";
        throw InputError(path, msg);
    };
    GDALDriver* mem = GetGDALDriverManager()->GetDriverByName("MEM");
    GDALDriver* png = GetGDALDriverManager()->GetDriverByName("PNG");
    if (mem == nullptr || png == nullptr) fail("GDAL has no MEM or PNG driver");
    const GDALDataType type = bits == 8 ? GDT_Byte : GDT_UInt16;
    const int bytes = bits / 8;
    GDALDatasetUniquePtr ds(
        mem->Create("", static_cast<int>(cols), static_cast<int>(rows), bands, type, nullptr));
    if (!ds) fail("cannot create an in-memory raster");
    const GSpacing px = static_cast<GSpacing>(bands) * bytes;
    if (ds->RasterIO(GF_Write, 0, 0, static_cast<int>(cols), static_cast<int>(rows), const_cast<void*>(data),
                     static_cast<int>(cols), static_cast<int>(rows), type, bands, nullptr, px, px * cols, bytes,
                     nullptr) != CE_None)
        fail("cannot fill the in-memory raster");
    {
        CPLStringList opts;
        opts.SetNameValue("ZLEVEL", "3");  // quicklooks: speed over the last few percent of size
        GDALDatasetUniquePtr out(png->CreateCopy(tmp.c_str(), ds.get(), FALSE, opts.List(), nullptr, nullptr));
        if (!out) fail("cannot write " + tmp);
    }
    std::remove((tmp + ".aux.xml").c_str());
    staged.finish();
}

}  // namespace tessera
