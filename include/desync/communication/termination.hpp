#pragma once
// Asynchronous termination detection on a binary tree (Yamazaki, Chow, Bouteiller and Dongarra,
// 2019, section 4.3 and Figure 3): the ranks are arranged in a binary tree (rank r's parent is
// (r - 1) / 2, its children 2r + 1 and 2r + 2). A rank that is done (locally converged, or at a
// limit) votes once; as soon as it has voted and both its children have reported, it sends its
// subtree's report to its parent. When the root has voted and both its children have reported, it
// sends the global decision to its children, who forward it down the tree. Ranks keep iterating
// until the decision reaches them: nobody waits for anybody.
//
// A report is the sum over the subtree of the voters' vote vectors (the caller's payload, e.g. the
// local residual^2 and limit flags) and the number of voters, so the decision carries every rank's
// votes, each taken when that rank voted: the root decides only when every rank has voted, and the
// decision shows it (voters() == the size of the communicator).
//
// The reports and the decision travel over comm::Channel (one per tree edge, on a duplicate of the
// communicator), so every transport of the channel layer serves: two-sided messages (p2p), MPI
// one-sided puts (rma, the paper's MPI_Put) or OpenSHMEM puts (shmem, the paper's shmem_int_put),
// with their completion schemes. Nothing here blocks except construction and close().
#include <mpi.h>

#include <memory>
#include <span>
#include <vector>

#include "desync/communication/channel.hpp"

namespace desync::comm {

class TreeTermination {
 public:
  /// Collective over `comm`: opens the channels to the parent and the children. `count`: doubles
  /// per vote vector. `transport`: the transport settings of the channels (peer, sizes, tags and
  /// mode are set here).
  TreeTermination(MPI_Comm comm, int count, const TransportConfig& transport);
  /// Closes the channels if close() was not called.
  ~TreeTermination();
  TreeTermination(const TreeTermination&) = delete;
  TreeTermination& operator=(const TreeTermination&) = delete;

  /// This rank is done: its votes (count doubles). Once; a second call throws std::logic_error.
  void vote(std::span<const double> votes);
  bool voted() const { return voted_; }
  /// Progress (non-blocking): takes in the children's reports, forwards this subtree's report once
  /// it is complete, takes in and forwards the decision. True once the decision has arrived here.
  bool test();
  bool decided() const { return decided_; }
  /// After test() returned true: the sum over every rank of the vote vectors.
  std::span<const double> result() const { return {result_.data(), result_.size() - 1}; }
  /// After test() returned true: how many ranks' votes result() holds (the communicator's size).
  long voters() const { return static_cast<long>(result_.back()); }
  /// Collective with the parent and the children: completes the traffic and closes the channels.
  /// Call after test() returned true (or on every rank, on an error path).
  void close();
  /// Messages this rank sent (reports and decisions).
  long messages_sent() const { return sent_; }

 private:
  void forward_down();

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::size_t count_ = 0;
  int rank_ = 0;
  std::unique_ptr<Channel> parent_;
  std::vector<std::unique_ptr<Channel>> children_;
  std::vector<double> subtree_;  ///< own votes + arrived reports, then a voter count
  std::vector<bool> reported_;   ///< per child
  std::vector<double> result_;
  bool voted_ = false, sent_up_ = false, decided_ = false, closed_ = false;
  long sent_ = 0;
};

}  // namespace desync::comm
