// Comm's variable-size collectives past 2 GiB in all (partition/comm.h counts records, not
// bytes): allgatherv and gatherv of 256-byte records, every record checked by its content.
// Needs about 4 GB a rank: built and run only with -DTESSERA_LARGE_TESTS=ON (not in CI).
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "partition/comm.h"

namespace {

struct Record {
    std::array<int64_t, 32> w;  // 256 bytes
};

Record make(int rank, int64_t i) {
    Record r;
    for (int k = 0; k < 32; ++k) r.w[static_cast<size_t>(k)] = (int64_t{rank} << 48) ^ (i * 32 + k);
    return r;
}

bool same(const Record& a, const Record& b) { return a.w == b.w; }

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int failures = 0;
    {
        tessera::Comm comm(MPI_COMM_WORLD);
        const int P = comm.size(), me = comm.rank();
        // Over 2 GiB in all whatever the rank count (>= 2), under 2^31 records.
        const int64_t per_rank = ((int64_t{5} << 30) / 2 / P) / static_cast<int64_t>(sizeof(Record)) + 1;
        std::vector<Record> mine(static_cast<size_t>(per_rank));
        for (int64_t i = 0; i < per_rank; ++i) mine[static_cast<size_t>(i)] = make(me, i);
        {
            const std::vector<Record> all = comm.allgatherv(mine);
            int64_t bad = static_cast<int64_t>(all.size()) != per_rank * P;
            for (int s = 0; s < P && !bad; ++s)
                for (int64_t i = 0; i < per_rank; ++i)
                    if (!same(all[static_cast<size_t>(s * per_rank + i)], make(s, i))) {
                        ++bad;
                        break;
                    }
            if (bad) ++failures, std::fprintf(stderr, "rank %d: allgatherv of %lld bytes wrong\n", me,
                                              static_cast<long long>(per_rank * P * sizeof(Record)));
        }
        {
            const std::vector<std::vector<Record>> at_root = comm.gatherv(mine, 0);
            int64_t bad = me == 0 ? static_cast<int64_t>(at_root.size()) != P : !at_root.empty();
            for (int s = 0; me == 0 && s < P && !bad; ++s) {
                bad = static_cast<int64_t>(at_root[static_cast<size_t>(s)].size()) != per_rank;
                for (int64_t i = 0; i < per_rank && !bad; ++i)
                    bad = !same(at_root[static_cast<size_t>(s)][static_cast<size_t>(i)], make(s, i));
            }
            if (bad) ++failures, std::fprintf(stderr, "rank %d: gatherv wrong\n", me);
        }
        failures = static_cast<int>(comm.sum(int64_t{failures}));
        if (me == 0)
            std::printf("%s: %d ranks, %lld records of %zu bytes each (%.2f GiB in all)\n", failures ? "FAILED" : "passed", P,
                        static_cast<long long>(per_rank), sizeof(Record),
                        static_cast<double>(per_rank * P * static_cast<int64_t>(sizeof(Record))) / (1 << 30));
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
