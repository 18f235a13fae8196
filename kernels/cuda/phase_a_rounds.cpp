// Host side of the device phase A (kernels/cuda/phase_a_rounds.h); the kernels are in
// kernels/cuda/phase_a.cu.
#include "kernels/cuda/phase_a_rounds.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace tessera::cuda {

namespace {

static_assert(sizeof(Residue) == sizeof(DeviceResidue) && offsetof(Residue, id) == offsetof(DeviceResidue, id) &&
                  offsetof(Residue, r) == offsetof(DeviceResidue, r) &&
                  offsetof(Residue, c) == offsetof(DeviceResidue, c) &&
                  offsetof(Residue, sign) == offsetof(DeviceResidue, sign),
              "DeviceResidue must be the byte image of Residue");
static_assert(kDeviceGroundId == kGroundId && kDeviceNoWeight == kNoWeight &&
                  kDevicePartnerGround == kPartnerGround && kDevicePartnerNone == kPartnerNone &&
                  kDevicePartnerUnsearched == kPartnerUnsearched,
              "device matching constants differ from the host's");

}  // namespace

DevicePhaseARounds::DevicePhaseARounds(cudaStream_t s) : s_(s) {}
DevicePhaseARounds::~DevicePhaseARounds() { release(); }

void DevicePhaseARounds::bind(std::span<const Residue> res, std::span<const uint8_t> owned, const Window& area,
                              int64_t cell, int64_t limit, int64_t H, int64_t W) {
    if (owned.size() != res.size()) throw std::invalid_argument("cuda phase A: owned flags differ in length");
    bind_common(static_cast<int64_t>(res.size()), res.data(), nullptr, owned.data(), area, cell, limit, H, W);
}

void DevicePhaseARounds::bind_device(DeviceResidue* res, int64_t n, const Window& area, int64_t cell, int64_t limit,
                                     int64_t H, int64_t W) {
    bind_common(n, nullptr, res, nullptr, area, cell, limit, H, W);
}

void DevicePhaseARounds::bind_common(int64_t n, const Residue* host_res, DeviceResidue* adopted, const uint8_t* owned,
                                     const Window& area, int64_t cell, int64_t limit, int64_t H, int64_t W) {
    release();
    if (adopted) owned_allocs_.push_back(adopted);  // freed with the rest, whatever happens next
    if (n >= int64_t{0x7fffffff}) throw std::invalid_argument("cuda phase A: 2^31 residues or more");
    limit_ = limit;
    H_ = H;
    W_ = W;
    g_ = DeviceResidueGrid{};
    g_.row0 = area.row0;
    g_.col0 = area.col0;
    g_.rows = area.rows;
    g_.cols = area.cols;
    g_.cell = std::max<int64_t>(cell, 1);
    g_.crows = (area.rows + g_.cell - 1) / g_.cell;
    g_.ccols = (area.cols + g_.cell - 1) / g_.cell;
    const int64_t cells = g_.crows * g_.ccols;
    try {
        st_.n = n;
        DeviceResidue* d_res = adopted ? adopted : alloc<DeviceResidue>(n);
        auto* d_owned = alloc<uint8_t>(n);
        st_.res = d_res;
        st_.owned = d_owned;
        st_.matched = alloc<uint8_t>(n);
        st_.accepted = alloc<uint8_t>(n);
        st_.partner = alloc<int32_t>(n);
        st_.mate = alloc<int32_t>(n);
        g_.items = alloc<int32_t>(n);
        g_.start = alloc<int32_t>(cells + 1);
        cursor_ = alloc<int32_t>(cells + 1);
        scratch_bytes_ = residue_grid_scratch_bytes(cells);
        scratch_ = alloc<char>(static_cast<int64_t>(scratch_bytes_));
        d_active_ = alloc<unsigned long long>(1);
        if (n > 0) {
            if (host_res)
                check(cudaMemcpyAsync(d_res, host_res, static_cast<size_t>(n) * sizeof(DeviceResidue),
                                      cudaMemcpyHostToDevice, s_),
                      "phase A (upload residues)");
            if (owned)
                check(cudaMemcpyAsync(d_owned, owned, static_cast<size_t>(n), cudaMemcpyHostToDevice, s_),
                      "phase A (upload owned flags)");
            else  // one rank: every residue its own
                check(cudaMemsetAsync(d_owned, 1, static_cast<size_t>(n), s_), "phase A (owned flags)");
        }
        phase_a_reset(st_, s_);
        build_residue_grid(d_res, n, g_, cursor_, scratch_, scratch_bytes_, s_);
        // Host spans may go after bind; device input needs no wait (stream order).
        if (host_res) check(cudaStreamSynchronize(s_), "phase A (bind)");
    } catch (...) {
        release();
        throw;
    }
}

int64_t DevicePhaseARounds::search() {
    check(cudaMemsetAsync(d_active_, 0, sizeof(unsigned long long), s_), "phase A (clear count)");
    phase_a_search(st_, g_, limit_, H_, W_, d_active_, s_);
    check(cudaMemcpyAsync(&h_active_, d_active_, sizeof(unsigned long long), cudaMemcpyDeviceToHost, s_),
          "phase A (download count)");
    check(cudaStreamSynchronize(s_), "phase A (search)");
    return static_cast<int64_t>(h_active_);
}

void DevicePhaseARounds::export_states(std::span<const int32_t> locals, int32_t* partner, uint8_t* matched) {
    const int64_t m = static_cast<int64_t>(locals.size());
    if (m == 0) return;
    exchange_room(m);
    check(cudaMemcpyAsync(x_locals_, locals.data(), locals.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s_),
          "phase A export (upload locals)");
    phase_a_export(st_, x_locals_, m, x_partner_, x_matched_, s_);
    check(cudaMemcpyAsync(partner, x_partner_, locals.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, s_),
          "phase A export (download partners)");
    check(cudaMemcpyAsync(matched, x_matched_, locals.size(), cudaMemcpyDeviceToHost, s_),
          "phase A export (download flags)");
    check(cudaStreamSynchronize(s_), "phase A export");
}

void DevicePhaseARounds::import_states(std::span<const int32_t> locals, const int32_t* partner,
                                       const uint8_t* matched) {
    const int64_t m = static_cast<int64_t>(locals.size());
    if (m == 0) return;
    exchange_room(m);
    check(cudaMemcpyAsync(x_locals_, locals.data(), locals.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s_),
          "phase A import (upload locals)");
    check(cudaMemcpyAsync(x_partner_, partner, locals.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s_),
          "phase A import (upload partners)");
    check(cudaMemcpyAsync(x_matched_, matched, locals.size(), cudaMemcpyHostToDevice, s_),
          "phase A import (upload flags)");
    phase_a_import(st_, x_locals_, m, x_partner_, x_matched_, s_);
    check(cudaStreamSynchronize(s_), "phase A import");  // the caller reuses its buffers
}

void DevicePhaseARounds::decide(bool halo) { phase_a_decide(st_, halo, s_); }
void DevicePhaseARounds::commit() { phase_a_commit(st_, s_); }

void DevicePhaseARounds::mates(int32_t* mate) {
    if (st_.n > 0)
        check(cudaMemcpyAsync(mate, st_.mate, static_cast<size_t>(st_.n) * sizeof(int32_t), cudaMemcpyDeviceToHost, s_),
              "phase A (download mates)");
    check(cudaStreamSynchronize(s_), "phase A (mates)");
}

template <class T>
T* DevicePhaseARounds::alloc(int64_t count) {
    void* p = nullptr;
    check(cudaMallocAsync(&p, static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T), s_),
          "phase A (cudaMallocAsync)");
    owned_allocs_.push_back(p);
    return static_cast<T*>(p);
}

void DevicePhaseARounds::exchange_room(int64_t m) {
    if (m <= x_cap_) return;
    x_locals_ = alloc<int32_t>(m);
    x_partner_ = alloc<int32_t>(m);
    x_matched_ = alloc<uint8_t>(m);
    x_cap_ = m;
}

void DevicePhaseARounds::release() noexcept {
    for (void* p : owned_allocs_) (void)cudaFreeAsync(p, s_);
    owned_allocs_.clear();
    if (s_) (void)cudaStreamSynchronize(s_);
    st_ = DevicePhaseA{};
    g_ = DeviceResidueGrid{};
    cursor_ = nullptr;
    scratch_ = nullptr;
    d_active_ = nullptr;
    x_locals_ = x_partner_ = nullptr;
    x_matched_ = nullptr;
    x_cap_ = 0;
}

std::unique_ptr<PhaseARounds> make_device_phase_a(cudaStream_t s) { return std::make_unique<DevicePhaseARounds>(s); }

}  // namespace tessera::cuda
