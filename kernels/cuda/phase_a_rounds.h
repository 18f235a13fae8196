// Matching phase A's rounds with their state in device memory (kernels/phase_a.h): the CUDA
// backend's PhaseARounds, on the Region's stream. Plain C++ (g++).
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "kernels/cuda/kernels.h"
#include "kernels/phase_a.h"

namespace tessera::cuda {

// The residues, their cell grid and every round's state live on the current device from
// bind() until destruction; a round moves the active count (8 bytes) and the border states
// of export/import across the bus, nothing else.
class DevicePhaseARounds final : public PhaseARounds {
public:
    explicit DevicePhaseARounds(cudaStream_t s);
    ~DevicePhaseARounds() override;
    DevicePhaseARounds(const DevicePhaseARounds&) = delete;
    DevicePhaseARounds& operator=(const DevicePhaseARounds&) = delete;

    void bind(std::span<const Residue> res, std::span<const uint8_t> owned, const Window& area, int64_t cell,
              int64_t limit, int64_t H, int64_t W) override;
    // bind() from residues already in device memory, all owned (one rank): `res` is a
    // stream-ordered allocation (cudaMallocAsync on this stream) that the rounds take over.
    void bind_device(DeviceResidue* res, int64_t n, const Window& area, int64_t cell, int64_t limit, int64_t H,
                     int64_t W);
    int64_t search() override;
    void export_states(std::span<const int32_t> locals, int32_t* partner, uint8_t* matched) override;
    void import_states(std::span<const int32_t> locals, const int32_t* partner, const uint8_t* matched) override;
    void decide(bool halo) override;
    void commit() override;
    void mates(int32_t* mate) override;
    // The bound state, for kernels that read the mates where they are (rasterise_mates).
    const DevicePhaseA& state() const { return st_; }

private:
    void bind_common(int64_t n, const Residue* host_res, DeviceResidue* adopted, const uint8_t* owned,
                     const Window& area, int64_t cell, int64_t limit, int64_t H, int64_t W);
    template <class T>
    T* alloc(int64_t count);
    void exchange_room(int64_t m);
    void release() noexcept;

    cudaStream_t s_ = nullptr;
    DevicePhaseA st_;
    DeviceResidueGrid g_;
    int32_t* cursor_ = nullptr;
    void* scratch_ = nullptr;
    size_t scratch_bytes_ = 0;
    unsigned long long* d_active_ = nullptr;
    unsigned long long h_active_ = 0;
    int32_t *x_locals_ = nullptr, *x_partner_ = nullptr;
    uint8_t* x_matched_ = nullptr;
    int64_t x_cap_ = 0;
    std::vector<void*> owned_allocs_;
    int64_t limit_ = 0, H_ = 0, W_ = 0;
};

std::unique_ptr<PhaseARounds> make_device_phase_a(cudaStream_t s);

}  // namespace tessera::cuda
