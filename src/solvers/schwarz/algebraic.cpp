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
#include "desync/linalg/system_io.hpp"
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
  agree_or_throw(A.comm, o.coarse_form == CoarseForm::galerkin || o.subdomains.coarse.two_level(),
                 "--coarse-form fixed-point: a two-level iteration only (with --coarse)");
  if (o.coarse_form == CoarseForm::fixed_point && o.asynchronous()) {
    // The asynchronous fixed-point form sums Phi^T M^-1 (b - A u) from each rank's own values with
    // Wt = A^T M^-T Phi, set up as A M^-1 Phi (coarse_level.hpp): A and the local solves symmetric.
    // Its corrections land on the values they were computed from only with one local solve per
    // coarse solution (--coarse-reuse 1); with 4 the 2D Poisson problem diverged at 4 ranks.
    agree_or_throw(A.comm, o.coarse_reuse == 1,
                   fmt::format("--coarse-form fixed-point with --mode async: --coarse-reuse 1 only (got {}): each "
                               "correction must land on the values its residual was taken from",
                               o.coarse_reuse));
    agree_or_throw(A.comm, o.subdomains.subdomains_per_rank <= 1 && linalg::exact(o.subdomains.local_solver),
                   "--coarse-form fixed-point with --mode async: exact local solves, one subdomain per rank "
                   "(not ilu0-ilu3, no --subdomains-per-rank)");
    agree_or_throw(A.comm, linalg::is_symmetric(A),
                   "--coarse-form fixed-point with --mode async: the matrix must be symmetric (its coarse "
                   "right-hand side uses A^T = A); use --mode sync");
  }
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
