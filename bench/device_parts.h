// The benchmarks' device-only parts: compiled from bench/cuda/ into a CUDA build, from
// bench/device_parts_absent.cpp otherwise (the seam backend/ gives the program: no #ifdef).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/synth.h"

namespace tessera::bench {

// Page-locked host memory (a GPU pipeline's own buffers), or nullptr where there is none.
void* pinned_alloc(size_t bytes);
void pinned_free(void* p);

// A GPU is visible; it is made current. Its name in `name`.
bool device_ready(std::string& name);

struct ResidentRun {
    std::map<std::string, double> stage;  // seconds, each stage synchronised before its clock is read
    double total = 0;
};
// bench_stages: the scene's phase and flags already on the device, unwrapped there `runs`
// times after a warm-up (u, flags, label: host arrays of the scene's size, the results' room).
// Empty without CUDA.
std::vector<ResidentRun> resident_stage_runs(const SynthScene& s, int64_t tile, float* u, uint8_t* flags,
                                             uint32_t* label, int runs);

// bench_kernels: the background fit and CLAHE cases on the device (device-resident and
// host-to-host rows; with `check`, every result against the CPU's). Returns the mismatches;
// -1 without CUDA.
struct KernelCase {
    int64_t n = 0;
    int repeat = 0, bins = 0, degree = 3;
    bool check = false;
    const std::vector<float>* z0 = nullptr;
    const std::vector<uint8_t>* valid = nullptr;
    const std::vector<uint16_t>* amp = nullptr;
    // The CPU's results (when checking).
    const std::vector<double>* cpu_coeffs = nullptr;
    const std::vector<float>* cpu_z = nullptr;
    const std::vector<uint16_t>* cpu16 = nullptr;
    const std::vector<uint8_t>* cpu8 = nullptr;
};
int device_kernel_rows(const KernelCase& k);

}  // namespace tessera::bench
