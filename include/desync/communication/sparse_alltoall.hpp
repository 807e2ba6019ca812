#pragma once
// MPI_Alltoall and MPI_Alltoallv for the set-up exchanges of a sparse matrix, where a rank sends to
// and receives from a few neighbours only: messages for the nonzero counts alone. The collectives
// themselves post a message between every pair of ranks, P^2 in all: negligible on a cluster at
// set-up, but on a simulated one every message is a flow SimGrid's network model tracks, and at 128
// ranks one MPI_Alltoallv of the coarse set-up took a minute of host time (P^4 growth: the set-up
// of 256 ranks did not finish in 15 minutes).
#include <mpi.h>

#include <cstdint>
#include <type_traits>

namespace desync::comm {

/// MPI_Alltoall of `count` values per rank (recv[q*count..] = what rank q passed in its send at
/// this rank's place), for values that are mostly zero. Only the nonzero blocks travel: one
/// MPI_Reduce_scatter_block tells every rank how many blocks it receives, then it receives them
/// from any source (blocking, no polling: on a simulated cluster every poll costs host time). On a
/// duplicate of comm, so no other traffic can match. Collective.
void sparse_alltoall(const int* send, int* recv, MPI_Comm comm, int count = 1);
void sparse_alltoall(const std::int64_t* send, std::int64_t* recv, MPI_Comm comm, int count = 1);

/// MPI_Alltoallv with the same arguments and result, by point-to-point messages for the nonzero
/// counts only (the counts must agree pairwise, as MPI_Alltoallv requires). Collective.
void sparse_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype,
                      void* recvbuf, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm);

/// sparse_alltoallv of trivially copyable records (a matrix entry, a triple), each sent as its
/// bytes: counts and displacements in records. Collective.
template <class T>
void sparse_alltoallv_records(const T* send, const int* sendcounts, const int* sdispls, T* recv, const int* recvcounts,
                              const int* rdispls, MPI_Comm comm) {
  static_assert(std::is_trivially_copyable_v<T>, "records travel as their bytes");
  MPI_Datatype type;
  MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &type);
  MPI_Type_commit(&type);
  sparse_alltoallv(send, sendcounts, sdispls, type, recv, recvcounts, rdispls, type, comm);
  MPI_Type_free(&type);
}

}  // namespace desync::comm
