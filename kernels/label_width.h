// Connected-component labels in host memory are 1, 2 or 4 bytes wide, as few as hold the
// largest (ARCHITECTURE.md section 8: the bus and the host's memory, not the device, bound a
// host-to-host unwrap; most scenes label fewer than 256 components). Element i of a label
// array of width `bytes` is the unsigned integer at byte i * bytes (RegionArrays::label).
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tessera {

// 1, 2 or 4: the narrowest unsigned width that holds every label up to max_label.
inline int label_bytes_for(uint64_t max_label) {
    if (max_label <= UINT8_MAX) return 1;
    if (max_label <= UINT16_MAX) return 2;
    return 4;
}

// f(L{}) with L the unsigned integer type `bytes` wide: one typed code path per width.
// Throws std::invalid_argument for a width other than 1, 2 or 4.
template <class F>
decltype(auto) with_label_type(int bytes, F&& f) {
    switch (bytes) {
        case 1: return f(uint8_t{});
        case 2: return f(uint16_t{});
        case 4: return f(uint32_t{});
    }
    throw std::invalid_argument("labels of " + std::to_string(bytes) + " bytes (1, 2 or 4)");
}

// Label i of an array `bytes` wide.
inline uint32_t label_at(const void* labels, int bytes, int64_t i) {
    const auto* p = static_cast<const unsigned char*>(labels) + i * bytes;
    if (bytes == 1) return *p;
    if (bytes == 2) {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
    }
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Stores label v as element i of an array `bytes` wide (v fits: label_bytes_for).
inline void set_label(void* labels, int bytes, int64_t i, uint32_t v) {
    auto* p = static_cast<unsigned char*>(labels) + i * bytes;
    if (bytes == 1) {
        *p = static_cast<unsigned char>(v);
    } else if (bytes == 2) {
        const uint16_t w = static_cast<uint16_t>(v);
        std::memcpy(p, &w, 2);
    } else {
        std::memcpy(p, &v, 4);
    }
}

}  // namespace tessera
