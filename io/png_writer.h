// PNG output (quicklooks, CLAHE pictures), written whole through GDAL to a unique temporary,
// renamed when complete (io/output_set.h).
#pragma once
#include <cstdint>
#include <string>

namespace tessera {

// A PNG through GDAL (MEM dataset + PNG CreateCopy), to a unique temporary then renamed
// (io/output_set.h: or left to the active OutputSet).
// data: rows x cols pixels of `bands` interleaved samples (uint8 for bits 8, uint16 for 16).
// Throws InputError(path, problem).
void write_png(const std::string& path, int64_t rows, int64_t cols, int bands, int bits, const void* data);

// The picture format of output `path`, from its extension: PNG (.png, any case) is the only one
// written; another name is refused (InputError(path, "<option> writes a PNG: name it *.png"))
// rather than given PNG bytes under it.
void check_png_name(const std::string& path, const std::string& option);

}  // namespace tessera
