#include "partition/row_bands.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <vector>

#include "io/input_error.h"

namespace tessera {

namespace {

constexpr int kTag = 7331;

}  // namespace

void stream_bands_to_root(Comm& comm, int64_t H, int64_t W, const void* own_data, size_t px_bytes,
                          const std::function<void(int64_t, int64_t, const void*)>& sink, const std::string& out) {
    const int rank = comm.rank(), size = comm.size();
    const int64_t row_bytes = W * static_cast<int64_t>(px_bytes);
    const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{64} << 20) / std::max<int64_t>(row_bytes, 1));
    std::string err;
    if (rank == 0) {
        auto guarded = [&](int64_t r0, int64_t n, const void* d) {
            if (!err.empty() || n == 0) return;
            try {
                sink(r0, n, d);
            } catch (const std::exception& e) {
                err = e.what();
            }
        };
        guarded(0, H / size, own_data);
        std::vector<uint8_t> buf;
        for (int s = 1; s < size; ++s) {
            const int64_t b0 = H * s / size, b1 = H * (s + 1) / size;
            for (int64_t r = b0; r < b1; r += chunk_rows) {
                const int64_t n = std::min(chunk_rows, b1 - r);
                buf.resize(static_cast<size_t>(n * row_bytes));
                comm.recv(buf.data(), static_cast<size_t>(n * row_bytes), s, kTag);
                guarded(r, n, buf.data());
            }
        }
    } else {
        const int64_t b0 = H * rank / size, b1 = H * (rank + 1) / size;
        const auto* p = static_cast<const uint8_t*>(own_data);
        for (int64_t r = b0; r < b1; r += chunk_rows) {
            const int64_t n = std::min(chunk_rows, b1 - r);
            comm.send(p + (r - b0) * row_bytes, static_cast<size_t>(n * row_bytes), 0, kTag);
        }
    }
    int64_t failed = err.empty() ? 0 : 1;
    comm.bcast(failed, 0);
    if (failed) throw InputError::everywhere(rank == 0 ? err : out + ": output failed");
}

}  // namespace tessera
