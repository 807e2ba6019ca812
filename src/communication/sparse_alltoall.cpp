// Sparse replacements of MPI_Alltoall(v) for set-up exchanges (communication/sparse_alltoall.hpp).
#include "desync/communication/sparse_alltoall.hpp"

#include <algorithm>
#include <vector>

namespace desync::comm {

namespace {

template <typename T>
void blocks(const T* send, T* recv, int count, MPI_Datatype type, MPI_Comm comm) {
  int me = 0, ranks = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &ranks);
  const auto k = static_cast<std::size_t>(count);
  const auto nonzero = [&](int q) {
    for (std::size_t j = 0; j < k; ++j)
      if (send[static_cast<std::size_t>(q) * k + j] != T{0}) return true;
    return false;
  };
  std::vector<int> to(static_cast<std::size_t>(ranks), 0);  // 1: a block goes to rank q
  for (int q = 0; q < ranks; ++q) to[static_cast<std::size_t>(q)] = q != me && nonzero(q) ? 1 : 0;
  int incoming = 0;
  MPI_Reduce_scatter_block(to.data(), &incoming, 1, MPI_INT, MPI_SUM, comm);
  for (std::size_t e = 0; e < static_cast<std::size_t>(ranks) * k; ++e) recv[e] = T{0};
  for (std::size_t j = 0; j < k; ++j) recv[static_cast<std::size_t>(me) * k + j] = send[static_cast<std::size_t>(me) * k + j];
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &dup);
  std::vector<MPI_Request> sends;
  for (int q = 0; q < ranks; ++q) {
    if (!to[static_cast<std::size_t>(q)]) continue;
    sends.emplace_back();
    MPI_Isend(send + static_cast<std::size_t>(q) * k, count, type, q, 0, dup, &sends.back());
  }
  std::vector<T> block(k);
  for (int m = 0; m < incoming; ++m) {
    MPI_Status status;
    MPI_Recv(block.data(), count, type, MPI_ANY_SOURCE, 0, dup, &status);
    std::copy(block.begin(), block.end(), recv + static_cast<std::size_t>(status.MPI_SOURCE) * k);
  }
  MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
  MPI_Comm_free(&dup);
}

}  // namespace

void sparse_alltoall(const int* send, int* recv, MPI_Comm comm, int count) { blocks(send, recv, count, MPI_INT, comm); }

void sparse_alltoall(const std::int64_t* send, std::int64_t* recv, MPI_Comm comm, int count) {
  blocks(send, recv, count, MPI_INT64_T, comm);
}

void sparse_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype,
                      void* recvbuf, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  MPI_Aint lb = 0, send_extent = 0, recv_extent = 0;
  MPI_Type_get_extent(sendtype, &lb, &send_extent);
  MPI_Type_get_extent(recvtype, &lb, &recv_extent);
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &dup);
  std::vector<MPI_Request> requests;
  for (int q = 0; q < ranks; ++q) {
    if (recvcounts[q] == 0) continue;
    requests.emplace_back();
    MPI_Irecv(static_cast<char*>(recvbuf) + static_cast<MPI_Aint>(rdispls[q]) * recv_extent, recvcounts[q], recvtype,
              q, 0, dup, &requests.back());
  }
  for (int q = 0; q < ranks; ++q) {
    if (sendcounts[q] == 0) continue;
    requests.emplace_back();
    MPI_Isend(static_cast<const char*>(sendbuf) + static_cast<MPI_Aint>(sdispls[q]) * send_extent, sendcounts[q],
              sendtype, q, 0, dup, &requests.back());
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  MPI_Comm_free(&dup);
}

}  // namespace desync::comm
