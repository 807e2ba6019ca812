// Restricted additive (optionally optimized) Schwarz on an assembled matrix, synchronous and
// asynchronous (Yamazaki et al., 2019, sections 3-4); see include/desync/solvers/schwarz/algebraic.hpp.
#include "desync/solvers/schwarz/algebraic.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/core/simulation.hpp"
#include "desync/core/timer.hpp"
#include "desync/solvers/driver/iteration_driver.hpp"
#include "coarse/coarse_level.hpp"
#include "schwarz_run.hpp"

namespace desync::solvers {

SchwarzResult solve_algebraic_schwarz(const linalg::DistributedCsr& A, std::span<const double> b, std::span<double> x,
                                      const SchwarzOptions& o) {
  const auto rows = static_cast<std::size_t>(A.local_rows());
  agree_or_throw(A.comm, b.size() == rows && x.size() == rows,
                 fmt::format("schwarz: right-hand side and iterate must have this rank's {} rows (got {} and {})", rows,
                             b.size(), x.size()));
  agree_or_throw(A.comm, o.mode == comm::HaloMode::sync || o.mode == comm::HaloMode::async,
                 fmt::format("--mode {}: schwarz runs sync or async", comm::to_string(o.mode)));
  agree_or_throw(A.comm, o.transport.max_in_flight >= 1,
                 fmt::format("--inflight {}: R must be >= 1", o.transport.max_in_flight));
  agree_or_throw(A.comm, o.coarse_form == CoarseForm::galerkin || (o.subdomains.coarse.two_level() && !o.asynchronous()),
                 "--coarse-form fixed-point: the synchronous two-level iteration only (--mode sync with --coarse)");
  core::Stopwatch setup;
  OverlappingSubdomain sub(A, o.subdomains);
  const double setup_seconds = setup.seconds();
  sub.set_rhs(b, o.transport);  // b on Omega_p
  std::unique_ptr<detail::CoarseLevel> coarse;
  if (o.subdomains.coarse.two_level()) {
    CoarseOptions on_pieces = o.subdomains.coarse;  // on the subdomains the local solves use
    on_pieces.subdomains_per_rank = o.subdomains.subdomains_per_rank;
    coarse = std::make_unique<detail::CoarseLevel>(A, sub, on_pieces);
  }
  const std::vector<double> x0(x.begin(), x.end());
  SchwarzResult r = detail::run_schwarz(sub, o, x0, x, coarse.get());
  r.setup_seconds = setup_seconds;
  return r;
}

}  // namespace desync::solvers
