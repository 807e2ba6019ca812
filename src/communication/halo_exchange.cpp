#include "desync/communication/halo_exchange.hpp"

#include <utility>

namespace desync::comm {

using decomposition::Field;
using decomposition::opposite_face;

HaloExchange::HaloExchange(const decomposition::CartGrid& grid, PlanExchangeConfig config) {
  // Jacobi's halo: the six faces, one cell wide (decomposition::Field's layout).
  HaloPlan plan = make_structured_plan(grid, StructuredHalo{{1, 1, 1}, /*corners=*/false});
  for (const auto& nb : plan.neighbours) {
    int face = 0;
    for (int a = 0; a < 3; ++a)
      if (nb.direction[static_cast<std::size_t>(a)] != 0) face = 2 * a + (nb.direction[static_cast<std::size_t>(a)] > 0 ? 1 : 0);
    faces_.push_back(face);
  }
  exchange_ = std::make_unique<PlanExchange>(grid.comm(), std::move(plan), config);
}

HaloExchange::~HaloExchange() { close(); }

void HaloExchange::close() { exchange_->close(); }

void HaloExchange::exchange(Field& u, std::int64_t time_level) {
  exchange_->start(u.data(), time_level);
  exchange_->finish(u.data(), time_level);
}

void HaloExchange::push(const Field& u, std::int64_t time_level) { exchange_->start(u.data(), time_level); }

void HaloExchange::pull(Field& u, std::int64_t own_level) { exchange_->finish(u.data(), own_level); }

void HaloExchange::refresh(Field& u) const { exchange_->install(u.data()); }

std::int64_t HaloExchange::halo_level(int face) const {
  for (std::size_t n = 0; n < faces_.size(); ++n)
    if (faces_[n] == face) return exchange_->time_level(n);
  return -1;
}

void exchange_halos_blocking(const decomposition::CartGrid& grid, Field& u) {
  constexpr int tag = 30000;
  for (int axis = 0; axis < 3; ++axis) {
    for (int dir = 0; dir < 2; ++dir) {
      // Send through face f, receive through the opposite face.
      const int send_face = 2 * axis + dir;
      const int recv_face = opposite_face(send_face);
      const std::size_t n = u.face_size(send_face);
      std::vector<double> out(n), in(n);
      u.pack_boundary(send_face, out.data());
      MPI_Sendrecv(out.data(), static_cast<int>(n), MPI_DOUBLE, grid.neighbour(send_face), tag + send_face,
                   in.data(), static_cast<int>(n), MPI_DOUBLE, grid.neighbour(recv_face), tag + send_face,
                   grid.comm(), MPI_STATUS_IGNORE);
      if (!grid.on_global_boundary(recv_face)) u.unpack_halo(recv_face, in.data());
    }
  }
}

}  // namespace desync::comm
