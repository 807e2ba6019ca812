#pragma once
// Internal to the Schwarz solvers: the one run of every Schwarz iteration (Yamazaki, Chow,
// Bouteiller and Dongarra, 2019, sections 3-4), the grid's (schwarz.cpp) and the matrix's
// (algebraic.cpp), one level or two, over a solvers::Subdomain (subdomain.hpp). The loops are
// solvers::IterationDriver's with StopRule::every_rank_local (section 4.3); the exchange of the
// interface values goes through a comm::PlanExchange over any transport, synchronous (section 4.1:
// send, then wait for every neighbour's values of the same iteration) or asynchronous (section
// 4.2: push the newest values, pull the newest whole messages).
#include <span>

#include "desync/solvers/driver/iteration_driver.hpp"
#include "desync/solvers/schwarz/schwarz_options.hpp"
#include "desync/solvers/schwarz/subdomain.hpp"

namespace desync::solvers::detail {

class CoarseLevel;

/// The driver's settings of a Schwarz run: every rank locally converged stops it (section 4.3),
/// with the tree termination in async mode unless asked otherwise, and the per-rank residual
/// histories kept.
DriverOptions schwarz_driver_options(const SchwarzOptions& o);

/// One rank's run over `sub` (collective over sub.comm()). x0: the owned values' initial guess
/// (empty: zero); x receives the final owned values (sub.owned() of them, in owned_index order).
/// coarse: the two-level method's coarse level (nullptr: one level). Fills the result's run, the
/// factorisation's and the three kinds of work's figures and the coarse level's.
SchwarzResult run_schwarz(Subdomain& sub, const SchwarzOptions& o, std::span<const double> x0, std::span<double> x,
                          CoarseLevel* coarse);

}  // namespace desync::solvers::detail
