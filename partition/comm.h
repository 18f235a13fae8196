// MPI collectives over plain records, counting the bytes this rank sends to others
// (ARCHITECTURE.md section 8: traffic must grow with perimeters, not areas).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

class Comm {
public:
    explicit Comm(MPI_Comm c) : comm_(c) {
        MPI_Comm_rank(c, &rank_);
        MPI_Comm_size(c, &size_);
    }
    // One process alone, without calling MPI at all: threads that each unwrap their own
    // frame (pipeline/frame_lanes.h) need no MPI thread support. Every collective of a size-1
    // communicator returns the rank's own data.
    static Comm alone() { return Comm(); }
    MPI_Comm get() const { return comm_; }
    int rank() const { return rank_; }
    int size() const { return size_; }
    int64_t bytes_sent() const { return bytes_sent_; }

    // A non-blocking exchange in flight; wait() returns what every rank sent here.
    template <class T>
    class Pending {
    public:
        const std::vector<T>& wait() {
            if (!done_) check(MPI_Wait(&req_, MPI_STATUS_IGNORE)), done_ = true;
            return recv_;
        }
        ~Pending() { wait(); }

    private:
        friend class Comm;
        std::vector<T> flat_, recv_;
        std::vector<int> sc_, sd_, rc_, rd_;
        MPI_Request req_ = MPI_REQUEST_NULL;
        bool done_ = false;
    };

    // Starts an all-to-all whose receive sizes are known (recv_elems[s] from rank s), so
    // that work can go on while it travels.
    template <class T>
    std::unique_ptr<Pending<T>> ialltoallv(const std::vector<std::vector<T>>& send,
                                           const std::vector<int>& recv_elems) {
        static_assert(std::is_trivially_copyable_v<T>);
        auto p = std::make_unique<Pending<T>>();
        if (size_ == 1) {
            p->recv_ = send[0];
            p->done_ = true;
            return p;
        }
        p->sc_.resize(size_), p->sd_.resize(size_), p->rc_.resize(size_), p->rd_.resize(size_);
        for (int d = 0; d < size_; ++d) {
            p->sc_[d] = nelems(send[d].size());
            p->sd_[d] = nelems(p->flat_.size());
            p->flat_.insert(p->flat_.end(), send[d].begin(), send[d].end());
            if (d != rank_) bytes_sent_ += static_cast<int64_t>(p->sc_[d]) * static_cast<int64_t>(sizeof(T));
        }
        p->rc_ = recv_elems;
        p->recv_.resize(static_cast<size_t>(displacements(p->rc_, p->rd_)));
        const MPI_Datatype rt = record_type<T>();
        check(MPI_Ialltoallv(p->flat_.data(), p->sc_.data(), p->sd_.data(), rt, p->recv_.data(), p->rc_.data(),
                             p->rd_.data(), rt, comm_, &p->req_));
        return p;
    }

    // send[d] goes to rank d; returns what every rank sent here, in rank order
    // (recv_elems, if given, receives how many came from each rank).
    template <class T>
    std::vector<T> alltoallv(const std::vector<std::vector<T>>& send, std::vector<int>* recv_elems = nullptr) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) {
            if (recv_elems) *recv_elems = {static_cast<int>(send[0].size())};
            return send[0];
        }
        std::vector<int> sc(size_), rc(size_), sd(size_), rd(size_);
        std::vector<T> flat;
        for (int d = 0; d < size_; ++d) {
            sc[d] = nelems(send[d].size());
            sd[d] = nelems(flat.size());
            flat.insert(flat.end(), send[d].begin(), send[d].end());
            if (d != rank_) bytes_sent_ += static_cast<int64_t>(sc[d]) * static_cast<int64_t>(sizeof(T)) + static_cast<int64_t>(sizeof(int));
        }
        check(MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm_));
        std::vector<T> out(static_cast<size_t>(displacements(rc, rd)));
        const MPI_Datatype rt = record_type<T>();
        check(MPI_Alltoallv(flat.data(), sc.data(), sd.data(), rt, out.data(), rc.data(), rd.data(), rt, comm_));
        if (recv_elems) *recv_elems = rc;
        return out;
    }

    // Everyone's records, in rank order.
    template <class T, class A>
    std::vector<T> allgatherv(const std::vector<T, A>& mine) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) return {mine.begin(), mine.end()};
        const int n = nelems(mine.size());
        std::vector<int> rc(size_), rd(size_);
        check(MPI_Allgather(&n, 1, MPI_INT, rc.data(), 1, MPI_INT, comm_));
        std::vector<T> out(static_cast<size_t>(displacements(rc, rd)));
        const MPI_Datatype rt = record_type<T>();
        check(MPI_Allgatherv(mine.data(), n, rt, out.data(), rc.data(), rd.data(), rt, comm_));
        bytes_sent_ += static_cast<int64_t>(n) * static_cast<int64_t>(sizeof(T)) * (size_ - 1);
        return out;
    }

    // At `root`: every rank's records (per rank); elsewhere empty.
    template <class T>
    std::vector<std::vector<T>> gatherv(const std::vector<T>& mine, int root) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) return {mine};
        const int n = nelems(mine.size());
        std::vector<int> rc(size_), rd(size_);
        check(MPI_Gather(&n, 1, MPI_INT, rc.data(), 1, MPI_INT, root, comm_));
        const int total = rank_ == root ? displacements(rc, rd) : 0;
        std::vector<T> flat(static_cast<size_t>(total));
        const MPI_Datatype rt = record_type<T>();
        check(MPI_Gatherv(mine.data(), n, rt, flat.data(), rc.data(), rd.data(), rt, root, comm_));
        if (rank_ != root) bytes_sent_ += static_cast<int64_t>(n) * static_cast<int64_t>(sizeof(T));
        std::vector<std::vector<T>> out;
        if (rank_ == root)
            for (int s = 0; s < size_; ++s) out.emplace_back(flat.begin() + rd[s], flat.begin() + rd[s] + rc[s]);
        return out;
    }

    // From `root`: per_rank[d] goes to rank d.
    template <class T>
    std::vector<T> scatterv(const std::vector<std::vector<T>>& per_rank, int root) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) return per_rank[0];
        std::vector<int> sc(size_), sd(size_);
        std::vector<T> flat;
        if (rank_ == root)
            for (int d = 0; d < size_; ++d) {
                sc[d] = nelems(per_rank[d].size());
                sd[d] = nelems(flat.size());
                flat.insert(flat.end(), per_rank[d].begin(), per_rank[d].end());
                if (d != rank_) bytes_sent_ += static_cast<int64_t>(sc[d]) * static_cast<int64_t>(sizeof(T));
            }
        int n = 0;
        check(MPI_Scatter(sc.data(), 1, MPI_INT, &n, 1, MPI_INT, root, comm_));
        std::vector<T> out(static_cast<size_t>(n));
        const MPI_Datatype rt = record_type<T>();
        check(MPI_Scatterv(flat.data(), sc.data(), sd.data(), rt, out.data(), n, rt, root, comm_));
        return out;
    }

    template <class T>
    void bcast(T& v, int root) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) return;
        check(MPI_Bcast(&v, sizeof(T), MPI_BYTE, root, comm_));
        if (rank_ == root) bytes_sent_ += static_cast<int64_t>(sizeof(T)) * (size_ - 1);
    }

    // A string from `root` (its length, then its bytes).
    void bcast(std::string& s, int root) {
        if (size_ == 1) return;
        int64_t n = static_cast<int64_t>(s.size());
        bcast(n, root);
        s.resize(static_cast<size_t>(n));
        if (n > 0) check(MPI_Bcast(s.data(), nbytes<char>(static_cast<size_t>(n)), MPI_BYTE, root, comm_));
        if (rank_ == root) bytes_sent_ += n * (size_ - 1);
    }

    // Point to point, `bytes` bytes (the receiver knows how many).
    void send(const void* data, size_t bytes, int dest, int tag) {
        check(MPI_Send(data, nbytes<char>(bytes), MPI_BYTE, dest, tag, comm_));
        bytes_sent_ += static_cast<int64_t>(bytes);
    }
    void recv(void* data, size_t bytes, int source, int tag) {
        check(MPI_Recv(data, nbytes<char>(bytes), MPI_BYTE, source, tag, comm_, MPI_STATUS_IGNORE));
    }
    // `rows` rows of `row_bytes` bytes, `pitch` bytes apart, sent or received in place (no packing).
    // Rows that follow each other go as plain bytes (the MPI's single-copy path).
    void send_rows(const void* data, int64_t rows, size_t row_bytes, size_t pitch, int dest, int tag) {
        const size_t n = static_cast<size_t>(rows) * row_bytes;
        if (pitch == row_bytes && n <= static_cast<size_t>(std::numeric_limits<int>::max())) {
            send(data, n, dest, tag);
            return;
        }
        RowsType t(rows, row_bytes, pitch);
        check(MPI_Send(data, 1, t.type, dest, tag, comm_));
        bytes_sent_ += static_cast<int64_t>(n);
    }
    void recv_rows(void* data, int64_t rows, size_t row_bytes, size_t pitch, int source, int tag) {
        const size_t n = static_cast<size_t>(rows) * row_bytes;
        if (pitch == row_bytes && n <= static_cast<size_t>(std::numeric_limits<int>::max())) {
            recv(data, n, source, tag);
            return;
        }
        RowsType t(rows, row_bytes, pitch);
        check(MPI_Recv(data, 1, t.type, source, tag, comm_, MPI_STATUS_IGNORE));
    }

    // Whether every rank runs on one node (shares memory with the others). Collective.
    bool one_node() {
        if (size_ == 1) return true;
        MPI_Comm node;
        check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        int n = 0;
        check(MPI_Comm_size(node, &n));
        check(MPI_Comm_free(&node));
        return min(int64_t{n}) == size_;
    }

    int64_t sum(int64_t v) { return reduce(v, MPI_SUM); }
    int64_t max(int64_t v) { return reduce(v, MPI_MAX); }
    int64_t min(int64_t v) { return reduce(v, MPI_MIN); }
    double sum(double v) { return reduce(v, MPI_SUM); }
    double max(double v) { return reduce(v, MPI_MAX); }

    // Element-wise sums over the ranks, in place on every rank (integer counts are exact).
    template <class T>
    void sum_in_place(std::vector<T>& v) {
        if (size_ == 1 || v.empty()) return;
        check(MPI_Allreduce(MPI_IN_PLACE, v.data(), nelems(v.size()), mpi_type<T>(), MPI_SUM, comm_));
        bytes_sent_ += static_cast<int64_t>(v.size() * sizeof(T));
    }

    // Element-wise sums at `root` (elsewhere: zeros), e.g. per-frame records of a batch.
    template <class T>
    std::vector<T> sum_at(const std::vector<T>& mine, int root) {
        if (size_ == 1) return mine;
        std::vector<T> out(mine.size(), T{});
        check(MPI_Reduce(mine.data(), out.data(), nelems(mine.size()), mpi_type<T>(), MPI_SUM, root, comm_));
        if (rank_ != root) bytes_sent_ += static_cast<int64_t>(mine.size() * sizeof(T));
        return out;
    }

    // Element-wise reduction in place on every rank with `Add(into, from)`, which must be
    // commutative and associative (for example exact sums of wide integers): every rank
    // gets the same values, whatever the reduction's order.
    template <auto Add, class T>
    void combine_in_place(std::vector<T>& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1 || v.empty()) return;
        const MPI_Datatype t = record_type<T>();
        MPI_Op op;
        check(MPI_Op_create(&combine_op<T, Add>, /*commute=*/1, &op));
        const int rc = MPI_Allreduce(MPI_IN_PLACE, v.data(), nelems(v.size()), t, op, comm_);
        MPI_Op_free(&op);
        check(rc);
        bytes_sent_ += static_cast<int64_t>(v.size() * sizeof(T));
    }

    // This rank's index among the ranks of its node, and their number (collective).
    std::pair<int, int> node_local_rank() const {
        if (size_ == 1) return {0, 1};
        MPI_Comm node;
        check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
        int local_rank = 0, local_size = 1;
        MPI_Comm_rank(node, &local_rank);
        MPI_Comm_size(node, &local_size);
        MPI_Comm_free(&node);
        return {local_rank, local_size};
    }

private:
    template <class T>
    static int nbytes(size_t n) {
        const size_t b = n * sizeof(T);
        if (b > static_cast<size_t>(INT32_MAX)) throw std::runtime_error("MPI message over 2 GiB");
        return static_cast<int>(b);
    }
    static int nelems(size_t n) {
        if (n > static_cast<size_t>(INT32_MAX)) throw std::runtime_error("MPI message over 2^31 elements");
        return static_cast<int>(n);
    }
    // Where each rank's records begin in the received whole (rd from the counts rc); their total.
    static int displacements(const std::vector<int>& rc, std::vector<int>& rd) {
        int64_t total = 0;
        rd.resize(rc.size());
        for (size_t s = 0; s < rc.size(); ++s) rd[s] = static_cast<int>(total), total += rc[s];
        return nelems(static_cast<size_t>(total));
    }
    // One record of T as an MPI type, so that counts and displacements are records (2^31 of
    // them), not bytes (2 GiB: the shared residues of a large scene pass that). Made once.
    template <class T>
    static MPI_Datatype record_type() {
        static const MPI_Datatype t = [] {
            MPI_Datatype d = MPI_DATATYPE_NULL;
            check(MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &d));
            check(MPI_Type_commit(&d));
            return d;
        }();
        return t;
    }
    template <class T>
    static MPI_Datatype mpi_type() {
        if constexpr (std::is_same_v<T, uint32_t>) return MPI_UINT32_T;
        else if constexpr (std::is_same_v<T, int64_t>) return MPI_INT64_T;
        else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
        else static_assert(sizeof(T) == 0, "Comm: no MPI type for this element type");
    }
    template <class T, auto Add>
    static void combine_op(void* in, void* inout, int* len, MPI_Datatype*) {
        const T* a = static_cast<const T*>(in);
        T* b = static_cast<T*>(inout);
        for (int k = 0; k < *len; ++k) Add(b[k], a[k]);
    }
    Comm() : comm_(MPI_COMM_SELF) {}
    template <class T>
    T reduce(T v, MPI_Op op) {
        if (size_ == 1) return v;
        T out{};
        check(MPI_Allreduce(&v, &out, 1, mpi_type<T>(), op, comm_));
        bytes_sent_ += sizeof(T);
        return out;
    }
    struct RowsType {  // an MPI datatype of strided rows, freed at scope end
        MPI_Datatype type = MPI_DATATYPE_NULL;
        RowsType(int64_t rows, size_t row_bytes, size_t pitch) {
            check(MPI_Type_create_hvector(nelems(static_cast<size_t>(rows)), nbytes<char>(row_bytes),
                                          static_cast<MPI_Aint>(pitch), MPI_BYTE, &type));
            check(MPI_Type_commit(&type));
        }
        ~RowsType() { MPI_Type_free(&type); }
        RowsType(const RowsType&) = delete;
        RowsType& operator=(const RowsType&) = delete;
    };
    static void check(int rc) {
        if (rc != MPI_SUCCESS) throw std::runtime_error("MPI call failed (code " + std::to_string(rc) + ")");
    }
    MPI_Comm comm_;
    int rank_ = 0, size_ = 1;
    int64_t bytes_sent_ = 0;
};

}  // namespace tessera
