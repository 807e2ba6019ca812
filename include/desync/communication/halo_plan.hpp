#pragma once
// Halo plan: which entries of a rank's array go to which neighbour, and where the neighbours'
// entries land. One description serves every exchange in desync (comm::PlanExchange over channels,
// the neighbourhood-collective and blocking engines of comm::GhostExchange):
//
//   per neighbour  peer       rank in the plan's communicator; this rank itself means a local copy
//                             (a periodic dimension of one rank): no MPI traffic at all
//                  send       offsets into the caller's source array, packed in this order
//                  recv       offsets into the caller's destination array, unpacked in this order
//                  send_tag,  what this end sends on / receives on. A message sent on tag t is
//                  recv_tag   received by the peer's neighbour entry whose recv_tag is t, so two
//                             entries with the same peer (a periodic dimension of two ranks: the
//                             lower and the upper neighbour are one rank) stay distinct channels.
//
// Builders:
//   make_structured_plan  a CartGrid block stored as a decomposition::Field of halo width w (per
//                         axis, >= 0): faces, edges and corners (26 directions in 3D, 8 in 2D,
//                         2 in 1D; axes of width 0 take no part), or faces only; periodic axes
//                         wrap. The overlapping subdomains of optimized Schwarz (Yamazaki et al., 2019,
//                         section 4: overlap gamma, corners included, 2D) and the periodic 3D
//                         halos of the asynchrony-tolerant schemes (Aditya et al., 2019, sections 4-5) are
//                         such plans.
//   make_ghost_plan       an assembled matrix's ghost columns (GhostPlanSpec: what is sent to each
//                         rank, how many ghost entries each rank provides): send offsets into x,
//                         receive offsets into the contiguous ghost buffer.
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "desync/decomposition/cart_grid.hpp"

namespace desync::comm {

/// One neighbour of a plan (see the header comment).
struct PlanNeighbour {
  int peer = MPI_PROC_NULL;
  int send_tag = 0;  ///< 0 <= tag < max_plan_tag
  int recv_tag = 0;
  std::vector<std::int32_t> send;  ///< source offsets, in message order
  std::vector<std::int32_t> recv;  ///< destination offsets, in message order
  /// Structured plans: the direction (dx, dy, dz), each -1, 0 or 1, in which the peer lies.
  std::array<int, 3> direction{0, 0, 0};
};

/// Tags of a plan lie in [0, max_plan_tag).
inline constexpr int max_plan_tag = 64;

struct HaloPlan {
  int rank = 0;  ///< this process's rank in the plan's communicator
  std::vector<PlanNeighbour> neighbours;

  /// Served by a local copy (the peer is this rank).
  bool is_local(std::size_t n) const { return neighbours[n].peer == rank; }
  /// Distinct peers other than this rank.
  int remote_peers() const;
  /// Empty when the plan is well formed on this rank (peers in [0, size), tags in range, each
  /// (peer, send_tag) and (peer, recv_tag) used once, local entries paired by tag with matching
  /// sizes, offsets >= 0), otherwise the reason. Does not communicate.
  std::string check(int size) const;
};

/// A structured halo: width per axis (x, y, z), >= 0, and whether edges and corners travel too.
struct StructuredHalo {
  decomposition::Index3 width{1, 1, 1};
  bool corners = true;  ///< false: faces only (what the 7-point stencils need)
};

/// Tag of the structured direction d (each component -1, 0, 1): 0..26; the opposite direction has
/// tag 26 - tag.
constexpr int direction_tag(std::array<int, 3> d) { return (d[0] + 1) + 3 * (d[1] + 1) + 9 * (d[2] + 1); }

/// The plan of a grid block stored as a decomposition::Field(grid.local(), halo.width): offsets
/// are Field::index values. Per direction d (faces first in the order x-, x+, y-, y+, z-, z+, then
/// edges and corners by tag) with a neighbour: the send region is the w-wide layer of owned cells
/// next to d (the whole extent along axes where d is 0), the receive region the halo cells beyond
/// it, both walked z outer, x inner, so the two ends agree. Throws desync::InputError (on every
/// rank alike) if a width is negative or exceeds the smallest block along its axis.
HaloPlan make_structured_plan(const decomposition::CartGrid& grid, StructuredHalo halo);

/// What a rank sends to and receives from its neighbours in one ghost exchange. Entries are
/// doubles (a block operator lists each scalar entry of a block).
struct GhostPlanSpec {
  /// Ranks (in the communicator given to GhostExchange) that receive owned entries from here.
  std::vector<int> send_ranks;
  /// send_ranks.size() + 1 offsets into send_index.
  std::vector<int> send_offsets{0};
  /// Owned entries packed for each send rank, in the order that rank stores them as ghosts.
  std::vector<std::int32_t> send_index;
  /// Ranks that send ghost entries here; the ghost buffer holds their data in this order.
  std::vector<int> recv_ranks;
  /// recv_ranks.size() + 1 offsets into the ghost buffer.
  std::vector<int> recv_offsets{0};
  /// The communicator is Cartesian and send_ranks == recv_ranks list its 2 * ndims neighbours in
  /// MPI's neighbour order (per dimension: the lower, then the upper neighbour), MPI_PROC_NULL
  /// included with zero counts. Slot s then sends on tag s and receives on tag s ^ 1 (what leaves
  /// through the lower side arrives through the peer's upper side), so periodic dimensions of one
  /// or two ranks are exchanged correctly. Otherwise a rank may appear at most once per list.
  bool cartesian = false;
};

/// Empty when `spec` is consistent on this rank for `comm` (offsets, ranks, Cartesian slot order),
/// otherwise the reason. Local (MPI_Cart_* queries only).
std::string check_ghost_plan(MPI_Comm comm, const GhostPlanSpec& spec);
/// The plan of `spec`: send offsets into the owned vector x, receive offsets into the ghost buffer
/// (recv_offsets[n] .. recv_offsets[n + 1] - 1 for receive rank n). Neighbours that exchange
/// nothing are left out. Throws desync::InputError if check_ghost_plan finds a problem.
HaloPlan make_ghost_plan(MPI_Comm comm, const GhostPlanSpec& spec);

}  // namespace desync::comm
