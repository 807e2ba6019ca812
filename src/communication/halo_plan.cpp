#include "desync/communication/halo_plan.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "desync/core/error.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/core/simulation.hpp"

namespace desync::comm {

using decomposition::Index3;

int HaloPlan::remote_peers() const {
  std::set<int> peers;
  for (const auto& n : neighbours)
    if (n.peer != rank) peers.insert(n.peer);
  return static_cast<int>(peers.size());
}

std::string HaloPlan::check(int size) const {
  std::set<std::pair<int, int>> sends, recvs;
  for (std::size_t q = 0; q < neighbours.size(); ++q) {
    const auto& n = neighbours[q];
    if (n.peer < 0 || n.peer >= size) return "halo plan: neighbour " + std::to_string(q) + " has no valid peer rank";
    if (n.send_tag < 0 || n.send_tag >= max_plan_tag || n.recv_tag < 0 || n.recv_tag >= max_plan_tag)
      return "halo plan: tag out of range";
    if (!sends.insert({n.peer, n.send_tag}).second || !recvs.insert({n.peer, n.recv_tag}).second)
      return "halo plan: two neighbours share a peer and a tag";
    for (auto o : n.send)
      if (o < 0) return "halo plan: negative send offset";
    for (auto o : n.recv)
      if (o < 0) return "halo plan: negative receive offset";
    if (n.peer == rank) {
      // A local copy: the entry whose recv_tag is our send_tag takes what we send.
      const auto m = std::find_if(neighbours.begin(), neighbours.end(), [&](const PlanNeighbour& p) {
        return p.peer == rank && p.recv_tag == n.send_tag;
      });
      if (m == neighbours.end() || m->recv.size() != n.send.size())
        return "halo plan: a local neighbour has no matching receiving entry";
    }
  }
  return {};
}

// ----------------------------------------------------------------------------------------------
// Structured plans.

namespace {

// Index range [lo, hi) along one axis of the cells a direction component selects.
// send: the owned layer next to the side (d = -1: [0, w), d = +1: [n - w, n), d = 0: [0, n)).
// recv: the halo beyond it (d = -1: [-w, 0), d = +1: [n, n + w), d = 0: [0, n)).
std::pair<int, int> span(int d, int n, int w, bool recv) {
  if (d == 0) return {0, n};
  if (d < 0) return recv ? std::pair{-w, 0} : std::pair{0, w};
  return recv ? std::pair{n, n + w} : std::pair{n - w, n};
}

void walk(const decomposition::Field& f, std::array<int, 3> d, bool recv, std::vector<std::int32_t>& out) {
  const Index3& n = f.extent();
  const Index3& w = f.halo_width();
  const auto [i0, i1] = span(d[0], n[0], w[0], recv);
  const auto [j0, j1] = span(d[1], n[1], w[1], recv);
  const auto [k0, k1] = span(d[2], n[2], w[2], recv);
  for (int k = k0; k < k1; ++k)
    for (int j = j0; j < j1; ++j)
      for (int i = i0; i < i1; ++i) out.push_back(static_cast<std::int32_t>(f.index(i, j, k)));
}

}  // namespace

HaloPlan make_structured_plan(const decomposition::CartGrid& grid, StructuredHalo halo) {
  static const char axis_name[3] = {'x', 'y', 'z'};
  const Index3& w = halo.width;
  for (int a = 0; a < 3; ++a) {
    if (w[a] < 0)
      throw InputError(std::string("halo width along ") + axis_name[a] + " must be >= 0, got " + std::to_string(w[a]));
    // The smallest block along the axis (block sizes differ by at most one): a neighbour's send
    // layer must fit inside its block.
    const int smallest = grid.global()[a] / grid.dims()[a];
    if (w[a] > smallest)
      throw InputError(std::string("halo width ") + std::to_string(w[a]) + " along " + axis_name[a] +
                       " is larger than the smallest block (" + std::to_string(smallest) + " cells)");
  }
  const decomposition::Field shape(grid.local(), w);
  const long long storage = static_cast<long long>(shape.storage_size());
  if (storage > 0x7fffffffLL) throw InputError("halo plan: block with halo exceeds 2^31 - 1 entries");

  HaloPlan plan;
  plan.rank = grid.rank();
  // Faces first (x-, x+, y-, y+, z-, z+, the Face order), then edges and corners by tag.
  std::vector<std::array<int, 3>> directions;
  for (int a = 0; a < 3; ++a)
    for (int s : {-1, 1}) {
      std::array<int, 3> d{0, 0, 0};
      d[static_cast<std::size_t>(a)] = s;
      directions.push_back(d);
    }
  if (halo.corners)
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
          if (std::abs(dx) + std::abs(dy) + std::abs(dz) >= 2) directions.push_back({dx, dy, dz});

  for (const auto& d : directions) {
    bool used = true;
    Index3 at = grid.coords();
    for (int a = 0; a < 3; ++a) {
      if (d[static_cast<std::size_t>(a)] != 0 && w[a] == 0) used = false;  // no halo on this axis
      at[a] += d[static_cast<std::size_t>(a)];
    }
    if (!used) continue;
    const int peer = grid.rank_at(at);
    if (peer == MPI_PROC_NULL) continue;  // the global boundary of a non-periodic axis
    PlanNeighbour n;
    n.peer = peer;
    n.direction = d;
    // What leaves towards d arrives at the peer from its direction -d.
    n.send_tag = direction_tag(d);
    n.recv_tag = direction_tag({-d[0], -d[1], -d[2]});
    walk(shape, d, /*recv=*/false, n.send);
    walk(shape, d, /*recv=*/true, n.recv);
    plan.neighbours.push_back(std::move(n));
  }
  return plan;
}

// ----------------------------------------------------------------------------------------------
// Plans of assembled matrices.

namespace {

// Empty when the offsets are a valid partition of [0, total) into `parts` pieces.
std::string check_offsets(const std::vector<int>& offsets, std::size_t parts, std::size_t total, const char* what) {
  if (offsets.size() != parts + 1) return std::string(what) + ": expected one offset per neighbour plus one";
  if (offsets.front() != 0) return std::string(what) + ": first offset must be 0";
  for (std::size_t n = 0; n < parts; ++n)
    if (offsets[n + 1] < offsets[n]) return std::string(what) + ": offsets must not decrease";
  if (static_cast<std::size_t>(offsets.back()) != total)
    return std::string(what) + ": last offset does not match the number of entries";
  return {};
}

}  // namespace

std::string check_ghost_plan(MPI_Comm comm, const GhostPlanSpec& spec) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  const auto recv_total = spec.recv_offsets.empty() ? 0 : static_cast<std::size_t>(spec.recv_offsets.back());
  std::string problem =
      check_offsets(spec.send_offsets, spec.send_ranks.size(), spec.send_index.size(), "ghost plan send list");
  if (problem.empty())
    problem = check_offsets(spec.recv_offsets, spec.recv_ranks.size(), recv_total, "ghost plan receive list");
  if (!problem.empty()) return problem;
  for (int r : spec.send_ranks)
    if ((r < 0 || r >= nranks) && !(spec.cartesian && r == MPI_PROC_NULL)) return "ghost plan: bad send rank";
  for (int r : spec.recv_ranks)
    if ((r < 0 || r >= nranks) && !(spec.cartesian && r == MPI_PROC_NULL)) return "ghost plan: bad receive rank";
  for (std::size_t n = 0; n < spec.send_ranks.size(); ++n)
    if (spec.send_ranks[n] == MPI_PROC_NULL && spec.send_offsets[n + 1] != spec.send_offsets[n])
      return "ghost plan: entries listed for MPI_PROC_NULL";
  for (std::size_t n = 0; n < spec.recv_ranks.size(); ++n)
    if (spec.recv_ranks[n] == MPI_PROC_NULL && spec.recv_offsets[n + 1] != spec.recv_offsets[n])
      return "ghost plan: entries listed for MPI_PROC_NULL";
  for (auto i : spec.send_index)
    if (i < 0) return "ghost plan: negative send index";
  if (spec.cartesian) {
    int topo = MPI_CART;
    if (!core::simulated_build) MPI_Topo_test(comm, &topo);  // SMPI 3.32 has no MPI_Topo_test
    if (topo != MPI_CART) return "ghost plan: a Cartesian plan needs a Cartesian communicator";
    int ndims = 0;
    MPI_Cartdim_get(comm, &ndims);
    std::vector<int> expect;
    for (int d = 0; d < ndims; ++d) {
      int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
      MPI_Cart_shift(comm, d, 1, &lo, &hi);
      expect.push_back(lo);
      expect.push_back(hi);
    }
    if (spec.send_ranks != expect || spec.recv_ranks != expect)
      return "ghost plan: a Cartesian plan must list the 2 * ndims neighbours in MPI's order";
    if (expect.size() > static_cast<std::size_t>(max_plan_tag)) return "ghost plan: too many Cartesian dimensions";
  } else {
    auto once = [](std::vector<int> r) {
      std::sort(r.begin(), r.end());
      return std::adjacent_find(r.begin(), r.end()) == r.end();
    };
    if (!once(spec.send_ranks) || !once(spec.recv_ranks)) return "ghost plan: a rank is listed twice";
  }
  return {};
}

HaloPlan make_ghost_plan(MPI_Comm comm, const GhostPlanSpec& spec) {
  const std::string problem = check_ghost_plan(comm, spec);
  if (!problem.empty()) throw InputError(problem);
  HaloPlan plan;
  MPI_Comm_rank(comm, &plan.rank);
  auto recv_part = [&](std::size_t m, PlanNeighbour& n) {
    for (int g = spec.recv_offsets[m]; g < spec.recv_offsets[m + 1]; ++g) n.recv.push_back(g);
  };
  auto send_part = [&](std::size_t m, PlanNeighbour& n) {
    n.send.assign(spec.send_index.begin() + spec.send_offsets[m], spec.send_index.begin() + spec.send_offsets[m + 1]);
  };
  if (spec.cartesian) {
    // One neighbour per slot: slot s sends on tag s, receives on tag s ^ 1 (lower <-> upper side).
    for (std::size_t s = 0; s < spec.send_ranks.size(); ++s) {
      if (spec.send_ranks[s] == MPI_PROC_NULL) continue;
      PlanNeighbour n;
      n.peer = spec.send_ranks[s];
      n.send_tag = static_cast<int>(s);
      n.recv_tag = static_cast<int>(s ^ 1U);
      send_part(s, n);
      recv_part(s, n);
      if (!n.send.empty() || !n.recv.empty()) plan.neighbours.push_back(std::move(n));
    }
    return plan;
  }
  // One neighbour per distinct peer, ascending; tag pair (0, 0).
  std::vector<int> peers(spec.send_ranks);
  peers.insert(peers.end(), spec.recv_ranks.begin(), spec.recv_ranks.end());
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  for (int p : peers) {
    PlanNeighbour n;
    n.peer = p;
    for (std::size_t s = 0; s < spec.send_ranks.size(); ++s)
      if (spec.send_ranks[s] == p) send_part(s, n);
    for (std::size_t m = 0; m < spec.recv_ranks.size(); ++m)
      if (spec.recv_ranks[m] == p) recv_part(m, n);
    if (!n.send.empty() || !n.recv.empty()) plan.neighbours.push_back(std::move(n));
  }
  return plan;
}

}  // namespace desync::comm
