// Ghost entries of a row-distributed vector: who needs what (linalg/ghost_requests.hpp).
#include "desync/linalg/ghost_requests.hpp"
#include "desync/communication/sparse_alltoall.hpp"

#include <algorithm>

namespace desync::linalg {

int owner_of(const std::vector<std::int64_t>& offsets, std::int64_t g) {
  return static_cast<int>(std::upper_bound(offsets.begin(), offsets.end(), g) - offsets.begin() - 1);
}

namespace {
std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> d(counts.size() + 1, 0);
  for (std::size_t q = 0; q < counts.size(); ++q) d[q + 1] = d[q] + counts[q];
  return d;
}
}  // namespace

GhostRequests request_entries(MPI_Comm comm, const std::vector<std::int64_t>& offsets,
                              std::span<const std::int64_t> wanted) {
  const std::size_t nranks = offsets.size() - 1;
  GhostRequests r;
  r.need.assign(nranks, 0);
  r.give.assign(nranks, 0);
  for (std::int64_t g : wanted) ++r.need[static_cast<std::size_t>(owner_of(offsets, g))];
  comm::sparse_alltoall(r.need.data(), r.give.data(), comm);
  r.need_displs = displacements(r.need);
  r.give_displs = displacements(r.give);
  r.asked.resize(static_cast<std::size_t>(r.give_displs.back()));
  comm::sparse_alltoallv(wanted.data(), r.need.data(), r.need_displs.data(), MPI_INT64_T, r.asked.data(), r.give.data(),
                r.give_displs.data(), MPI_INT64_T, comm);
  return r;
}

comm::GhostPlanSpec GhostRequests::plan_spec(std::int64_t first, std::int64_t last, int block_size, bool& ok) const {
  comm::GhostPlanSpec spec;
  for (std::size_t q = 0; q < need.size(); ++q) {
    if (give[q] > 0) {
      spec.send_ranks.push_back(static_cast<int>(q));
      for (int m = give_displs[q]; m < give_displs[q + 1]; ++m) {
        const std::int64_t g = asked[static_cast<std::size_t>(m)];
        if (g < first || g >= last) {
          ok = false;
          continue;
        }
        for (int b = 0; b < block_size; ++b)
          spec.send_index.push_back(static_cast<std::int32_t>((g - first) * block_size + b));
      }
      spec.send_offsets.push_back(static_cast<int>(spec.send_index.size()));
    }
    if (need[q] > 0) {  // wanted is ascending, hence grouped by owner in rank order
      spec.recv_ranks.push_back(static_cast<int>(q));
      spec.recv_offsets.push_back(spec.recv_offsets.back() + need[q] * block_size);
    }
  }
  return spec;
}

}  // namespace desync::linalg
