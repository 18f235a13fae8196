// MPI collectives over plain records, counting the bytes this rank sends to others
// (ARCHITECTURE.md section 8: traffic must grow with perimeters, not areas).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera {

class Comm {
public:
    explicit Comm(MPI_Comm c) : comm_(c) {
        MPI_Comm_rank(c, &rank_);
        MPI_Comm_size(c, &size_);
    }
    // One process alone, without calling MPI at all: threads that each unwrap their own
    // frame (src/frame_lanes.h) need no MPI thread support. Every collective of a size-1
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
            p->sc_[d] = nbytes<T>(send[d].size());
            p->sd_[d] = nbytes<T>(p->flat_.size());
            p->flat_.insert(p->flat_.end(), send[d].begin(), send[d].end());
            if (d != rank_) bytes_sent_ += p->sc_[d];
        }
        int total = 0;
        for (int s = 0; s < size_; ++s) p->rd_[s] = total, p->rc_[s] = nbytes<T>(recv_elems[s]), total += p->rc_[s];
        p->recv_.resize(static_cast<size_t>(total) / sizeof(T));
        check(MPI_Ialltoallv(p->flat_.data(), p->sc_.data(), p->sd_.data(), MPI_BYTE, p->recv_.data(),
                             p->rc_.data(), p->rd_.data(), MPI_BYTE, comm_, &p->req_));
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
            sc[d] = nbytes<T>(send[d].size());
            sd[d] = nbytes<T>(flat.size());
            flat.insert(flat.end(), send[d].begin(), send[d].end());
            if (d != rank_) bytes_sent_ += sc[d] + static_cast<int64_t>(sizeof(int));
        }
        check(MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm_));
        int total = 0;
        for (int s = 0; s < size_; ++s) rd[s] = total, total += rc[s];
        std::vector<T> out(static_cast<size_t>(total) / sizeof(T));
        check(MPI_Alltoallv(flat.data(), sc.data(), sd.data(), MPI_BYTE, out.data(), rc.data(), rd.data(), MPI_BYTE,
                            comm_));
        if (recv_elems) {
            recv_elems->resize(size_);
            for (int s = 0; s < size_; ++s) (*recv_elems)[s] = rc[s] / static_cast<int>(sizeof(T));
        }
        return out;
    }

    // Everyone's records, in rank order.
    template <class T>
    std::vector<T> allgatherv(const std::vector<T>& mine) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) return mine;
        int n = nbytes<T>(mine.size());
        std::vector<int> rc(size_), rd(size_);
        check(MPI_Allgather(&n, 1, MPI_INT, rc.data(), 1, MPI_INT, comm_));
        int total = 0;
        for (int s = 0; s < size_; ++s) rd[s] = total, total += rc[s];
        std::vector<T> out(static_cast<size_t>(total) / sizeof(T));
        check(MPI_Allgatherv(mine.data(), n, MPI_BYTE, out.data(), rc.data(), rd.data(), MPI_BYTE, comm_));
        bytes_sent_ += static_cast<int64_t>(n) * (size_ - 1);
        return out;
    }

    // At `root`: every rank's records (per rank); elsewhere empty.
    template <class T>
    std::vector<std::vector<T>> gatherv(const std::vector<T>& mine, int root) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) return {mine};
        int n = nbytes<T>(mine.size());
        std::vector<int> rc(size_), rd(size_);
        check(MPI_Gather(&n, 1, MPI_INT, rc.data(), 1, MPI_INT, root, comm_));
        int total = 0;
        for (int s = 0; s < size_; ++s) rd[s] = total, total += rc[s];
        std::vector<T> flat(rank_ == root ? static_cast<size_t>(total) / sizeof(T) : 0);
        check(MPI_Gatherv(mine.data(), n, MPI_BYTE, flat.data(), rc.data(), rd.data(), MPI_BYTE, root, comm_));
        if (rank_ != root) bytes_sent_ += n;
        std::vector<std::vector<T>> out;
        if (rank_ == root)
            for (int s = 0; s < size_; ++s)
                out.emplace_back(flat.begin() + rd[s] / sizeof(T), flat.begin() + (rd[s] + rc[s]) / sizeof(T));
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
                sc[d] = nbytes<T>(per_rank[d].size());
                sd[d] = nbytes<T>(flat.size());
                flat.insert(flat.end(), per_rank[d].begin(), per_rank[d].end());
                if (d != rank_) bytes_sent_ += sc[d];
            }
        int n = 0;
        check(MPI_Scatter(sc.data(), 1, MPI_INT, &n, 1, MPI_INT, root, comm_));
        std::vector<T> out(static_cast<size_t>(n) / sizeof(T));
        check(MPI_Scatterv(flat.data(), sc.data(), sd.data(), MPI_BYTE, out.data(), n, MPI_BYTE, root, comm_));
        return out;
    }

    template <class T>
    void bcast(T& v, int root) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ == 1) return;
        check(MPI_Bcast(&v, sizeof(T), MPI_BYTE, root, comm_));
        if (rank_ == root) bytes_sent_ += static_cast<int64_t>(sizeof(T)) * (size_ - 1);
    }

    int64_t sum(int64_t v) { return reduce(v, MPI_SUM); }
    int64_t max(int64_t v) { return reduce(v, MPI_MAX); }
    double max(double v) {
        if (size_ == 1) return v;
        double out = 0;
        check(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, comm_));
        bytes_sent_ += sizeof(double);
        return out;
    }

private:
    template <class T>
    static int nbytes(size_t n) {
        const size_t b = n * sizeof(T);
        if (b > static_cast<size_t>(INT32_MAX)) throw std::runtime_error("MPI message over 2 GiB");
        return static_cast<int>(b);
    }
    Comm() : comm_(MPI_COMM_SELF) {}
    int64_t reduce(int64_t v, MPI_Op op) {
        if (size_ == 1) return v;
        int64_t out = 0;
        check(MPI_Allreduce(&v, &out, 1, MPI_INT64_T, op, comm_));
        bytes_sent_ += sizeof(int64_t);
        return out;
    }
    static void check(int rc) {
        if (rc != MPI_SUCCESS) throw std::runtime_error("MPI call failed (code " + std::to_string(rc) + ")");
    }
    MPI_Comm comm_;
    int rank_ = 0, size_ = 1;
    int64_t bytes_sent_ = 0;
};

}  // namespace tessera
