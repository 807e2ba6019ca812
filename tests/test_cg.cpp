// The CG family: every method with every preconditioner reaches the tolerance and matches a dense
// direct solve of the same system; the methods agree on iteration counts; the reduction modes
// agree; residual replacement keeps the true residual honest; failures are reported, not NaNs; every
// method follows a plain, unfused transcription of its listing.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "desync/core/error.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/linalg/csr.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/vector.hpp"
#include "desync/problems/elasticity3d.hpp"
#include "desync/problems/poisson3d.hpp"
#include "desync/solvers/cg/cg.hpp"
#include "desync/solvers/pc/preconditioner.hpp"
#include "matrix_test_util.hpp"
#include "test_util.hpp"

using namespace desync;
using decomposition::CartGrid;
using decomposition::Index3;
using linalg::DistributedCsr;
using solvers::CgOptions;
using solvers::CgResult;
using desync::core::StopReason;

namespace {

/// The registered methods' names (solvers::cg_method_registry), all of them or those that overlap
/// their reductions with work when non-blocking.
std::vector<std::string> registered_methods(bool overlapping_only = false) {
  std::vector<std::string> names;
  for (const auto& m : solvers::cg_method_registry().methods())
    if (!overlapping_only || m.overlaps_reduction) names.push_back(m.name);
  return names;
}
const std::vector<std::string> all_methods = registered_methods();
const std::vector<std::string> overlapping_methods = registered_methods(true);
const std::string all_pcs[] = {"none", "jacobi", "bjacobi-ic0"};

std::string label(const std::string& m, std::string p, bool nonblocking = true) {
  return m + "/" + p + (nonblocking ? "/nonblocking" : "/blocking");
}

/// The whole of a distributed vector on rank 0 (empty elsewhere).
std::vector<double> gather(MPI_Comm comm, const std::vector<double>& local) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int n = static_cast<int>(local.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(total) : 0);
  MPI_Gatherv(local.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm);
  return all;
}

/// The matrix as a dense row-major N x N array on rank 0 (scalar rows and columns).
std::vector<double> gather_dense(const DistributedCsr& A) {
  const int bs = A.block_size;
  const std::int64_t N = A.global_rows();
  std::vector<double> triplets;  // row, col, value
  const std::int64_t first = A.first_block_row();
  for (std::int64_t i = 0; i < A.local_block_rows(); ++i)
    for (std::int64_t e = A.row_ptr[static_cast<std::size_t>(i)]; e < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++e)
      for (int a = 0; a < bs; ++a)
        for (int c = 0; c < bs; ++c) {
          triplets.push_back(static_cast<double>((first + i) * bs + a));
          triplets.push_back(static_cast<double>(A.col[static_cast<std::size_t>(e)] * bs + c));
          triplets.push_back(A.val[static_cast<std::size_t>(e) * bs * bs + a * bs + c]);
        }
  const auto all = gather(A.comm, triplets);
  std::vector<double> dense;
  if (!all.empty() || A.rank() == 0) {
    dense.assign(static_cast<std::size_t>(N * N), 0.0);
    for (std::size_t t = 0; t + 2 < all.size(); t += 3)
      dense[static_cast<std::size_t>(all[t]) * static_cast<std::size_t>(N) + static_cast<std::size_t>(all[t + 1])] +=
          all[t + 2];
  }
  return dense;
}

/// Solves the dense SPD system by Cholesky (rank 0 only).
std::vector<double> cholesky_solve(std::vector<double> a, std::vector<double> b) {
  const auto n = b.size();
  for (std::size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (std::size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) ADD_FAILURE() << "dense Cholesky: matrix not positive definite at row " << j;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (std::size_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (std::size_t k = 0; k < j; ++k) v -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = v / d;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {  // L y = b
    double v = b[i];
    for (std::size_t k = 0; k < i; ++k) v -= a[i * n + k] * b[k];
    b[i] = v / a[i * n + i];
  }
  for (std::size_t i = n; i-- > 0;) {  // L^T x = y
    double v = b[i];
    for (std::size_t k = i + 1; k < n; ++k) v -= a[k * n + i] * b[k];
    b[i] = v / a[i * n + i];
  }
  return b;
}

/// A system with its direct solution on rank 0.
struct System {
  std::unique_ptr<CartGrid> grid;
  std::unique_ptr<linalg::Operator> op;
  std::vector<double> b;
  std::vector<double> exact;  ///< rank 0
};

void add_direct_solution(System& s, const DistributedCsr& A) {
  const auto dense = gather_dense(A);
  const auto b_all = gather(A.comm, s.b);
  if (A.rank() == 0) s.exact = cholesky_solve(dense, b_all);
}

System poisson(Index3 global, bool assembled) {
  System s;
  s.grid = std::make_unique<CartGrid>(MPI_COMM_WORLD, global, decomposition::choose_dims(desync_test::world_size(), {0, 0, 0}));
  const auto A = problems::assemble_poisson3d(*s.grid);
  s.op = assembled ? linalg::make_csr_operator(A, {}) : problems::make_poisson3d_operator(*s.grid, {});
  s.b = problems::poisson3d_rhs(*s.grid);
  add_direct_solution(s, A);
  return s;
}

System elasticity(Index3 nodes) {
  System s;
  s.grid = std::make_unique<CartGrid>(MPI_COMM_WORLD, nodes, decomposition::choose_dims(desync_test::world_size(), {0, 0, 0}));
  auto sys = problems::assemble_elasticity3d(*s.grid);
  s.op = linalg::make_csr_operator(sys.A, {});
  s.b = sys.b;
  add_direct_solution(s, sys.A);
  return s;
}

CgResult solve(System& s, const std::string& m, std::string pc, double rtol, std::vector<double>& x, bool nonblocking = true,
               int replace_every = 0) {
  CgOptions o;
  o.method = m;
  o.pc = pc;
  o.iteration.tol = rtol;
  o.nonblocking = nonblocking;
  o.replace_every = replace_every;
  o.iteration.max_iters = 2000;
  x.assign(static_cast<std::size_t>(s.op->local_size()), 0.0);
  return solvers::solve_cg(*s.op, s.b, x, o);
}

/// ||x - exact|| / ||exact|| on rank 0, broadcast.
double error_vs_direct(const System& s, const std::vector<double>& x) {
  const auto all = gather(s.op->comm(), x);
  double e = 0;
  if (!s.exact.empty()) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      num += (all[i] - s.exact[i]) * (all[i] - s.exact[i]);
      den += s.exact[i] * s.exact[i];
    }
    e = std::sqrt(num / den);
  }
  MPI_Bcast(&e, 1, MPI_DOUBLE, 0, s.op->comm());
  return e;
}

/// Every method with every preconditioner converges and matches the direct solution; returns, per
/// preconditioner, the largest difference between the methods' iteration counts.
std::vector<std::int64_t> check_all_methods(System& s, double rtol, double max_error) {
  std::vector<std::int64_t> spread;
  for (auto pc : all_pcs) {
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
    for (const auto& m : all_methods) {
      std::vector<double> x;
      const CgResult r = solve(s, m, pc, rtol, x);
      SCOPED_TRACE(label(m, pc));
      EXPECT_EQ(r.stop, core::StopReason::converged) << r.message;
      EXPECT_TRUE(r.converged);
      EXPECT_LE(r.true_residual, rtol);
      EXPECT_GT(r.iterations, 0);
      EXPECT_LE(error_vs_direct(s, x), max_error);
      EXPECT_EQ(r.stats.iterations, r.iterations);
      lo = std::min(lo, r.iterations);
      hi = std::max(hi, r.iterations);
    }
    spread.push_back(hi - lo);
  }
  return spread;
}

// ---- small units --------------------------------------------------------------------------------

// ---- the registry of methods -------------------------------------------------------------------

TEST(CgRegistry, EveryMethodIsComplete) {
  const auto& methods = solvers::cg_method_registry().methods();
  ASSERT_FALSE(methods.empty());
  const auto kinds = solvers::cg_cost_kinds();
  for (const auto& m : methods) {
    SCOPED_TRACE(m.name);
    EXPECT_FALSE(m.description.empty());
    EXPECT_NE(m.run, nullptr);
    EXPECT_EQ(m.vector_cost.name, "cg." + m.name + ".vector");  // the calibration's naming
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), m.vector_cost), 1);
    EXPECT_EQ(&solvers::find_cg_method(m.name), &m);
  }
  for (const auto& k : solvers::pc_cost_kinds()) EXPECT_EQ(std::count(kinds.begin(), kinds.end(), k), 1) << k.name;
}

TEST(CgRegistry, UnknownNamesAndDuplicatesAreRefused) {
  try {
    solvers::find_cg_method("bogus");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    std::string expected = "--method 'bogus': unknown method (expected ";
    const auto& methods = solvers::cg_method_registry().methods();
    for (std::size_t i = 0; i < methods.size(); ++i)
      expected += (i == 0 ? "" : i + 1 == methods.size() ? " or " : ", ") + methods[i].name;
    EXPECT_EQ(std::string(e.what()), expected + ")");
  }
  solvers::CgMethodRegistry r;
  solvers::register_all_cg_methods(r);
  EXPECT_EQ(r.methods().size(), solvers::cg_method_registry().methods().size());
  EXPECT_THROW(r.add(r.methods().front()), std::logic_error);
}

namespace {

/// docs/design.md's "Adding a preconditioner", followed once: M = 2 I (u = r / 2), as its file
/// src/solvers/pc/pc_halving.cpp would define it (not registered: the example's registry only).
class HalvingPc final : public solvers::Preconditioner {
 public:
  void apply(std::span<const double> r, std::span<double> u) const override {
    for (std::size_t i = 0; i < r.size(); ++i) u[i] = 0.5 * r[i];
  }
  double apply_dot(std::span<const double> r, std::span<double> u) const override {
    apply(r, u);
    return linalg::dot(r, u);
  }
  std::string description() const override { return "halving"; }
};

std::unique_ptr<solvers::Preconditioner> make_halving(const linalg::Operator&, const solvers::SchwarzPcSetup&, bool) {
  return std::make_unique<HalvingPc>();
}

solvers::PcInfo halving_pc() {
  return {.name = "halving", .description = "M = 2 I", .cost = "pc.halving", .make = &make_halving};
}

}  // namespace

TEST(PcRegistry, EveryPreconditionerIsCompleteAndANewOneTakesOneLine) {
  const auto& pcs = solvers::pc_registry().preconditioners();
  ASSERT_EQ(pcs.size(), 5u);
  System s = poisson({6, 6, 6}, true);
  const auto n = s.b.size();
  for (const auto& p : pcs) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.description.empty());
    EXPECT_EQ(p.cost.name, "pc." + p.name);  // the calibration's naming
    EXPECT_EQ(&solvers::find_pc(p.name), &p);
    if (p.subdomains) continue;  // they need the assembled matrix (test_algebraic_schwarz)
    auto pc = p.make(*s.op, {}, true);
    std::vector<double> u(n);
    pc->apply(s.b, u);
    if (p.identity) {
      EXPECT_EQ(u, s.b);
    }
  }
  try {
    solvers::find_pc("ilu");
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--pc 'ilu': unknown preconditioner (expected none, jacobi, bjacobi-ic0, asm or ras)");
  }
  EXPECT_EQ(solvers::subdomain_pcs(), "asm or ras");
  solvers::PcRegistry r;
  solvers::register_all_preconditioners(r);
  EXPECT_THROW(r.add(solvers::jacobi_pc()), std::logic_error);
  r.add(halving_pc());  // the one line a new preconditioner adds
  const solvers::PcInfo* h = r.find("halving");
  ASSERT_NE(h, nullptr);
  auto pc = h->make(*s.op, {}, true);
  std::vector<double> u(n);
  const double ru = pc->apply_dot(s.b, u);
  double expect = 0;
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(u[i], 0.5 * s.b[i]);
    expect += s.b[i] * u[i];
  }
  EXPECT_NEAR(ru, expect, 1e-14 * std::abs(expect));
}

TEST(CgVector, FusedKernelsMatchPlainOnes) {
  const std::size_t n = 37;
  std::vector<double> a(n), b(n), c(n), d(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = 1.0 + 0.1 * static_cast<double>(i);
    b[i] = std::sin(static_cast<double>(i));
    c[i] = 0.5 - 0.01 * static_cast<double>(i);
    d[i] = 2.0 + std::cos(static_cast<double>(i));
  }
  // update_r_jacobi == r -= alpha q; u = d r; sums
  auto r = a, u = c;
  const auto s = linalg::update_r_jacobi(0.3, b, r, d, u);
  double ru = 0, rr = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double ri = a[i] - 0.3 * b[i];
    EXPECT_DOUBLE_EQ(r[i], ri);
    EXPECT_DOUBLE_EQ(u[i], d[i] * ri);
    ru += ri * d[i] * ri;
    rr += ri * ri;
  }
  EXPECT_NEAR(s[0], ru, 1e-12 * std::fabs(ru));
  EXPECT_NEAR(s[1], rr, 1e-12 * rr);
  // update_pqxr with u = r aliasing (the unpreconditioned cg-cg)
  auto p = b, q = c, x = d, r2 = a;
  const double rr2 = linalg::update_pqxr(0.2, 0.7, r2, a, p, q, x, r2);
  double ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double pi = a[i] + 0.7 * b[i], qi = a[i] + 0.7 * c[i], ri = a[i] - 0.2 * qi;
    EXPECT_DOUBLE_EQ(p[i], pi);
    EXPECT_DOUBLE_EQ(q[i], qi);
    EXPECT_DOUBLE_EQ(x[i], d[i] + 0.2 * pi);
    EXPECT_DOUBLE_EQ(r2[i], ri);
    ref += ri * ri;
  }
  EXPECT_NEAR(rr2, ref, 1e-12 * ref);
}

TEST(CgVector, GlobalSumBlockingAndNonblocking) {
  desync_test::TestComm comm;
  for (bool nb : {false, true}) {
    linalg::GlobalSum sum(comm, nb);
    const double v[3] = {1.0, 2.0, static_cast<double>(desync_test::world_rank())};
    sum.start(v, 3);
    const double* g = sum.wait();
    const int p = desync_test::world_size();
    EXPECT_EQ(g[0], p);
    EXPECT_EQ(g[1], 2.0 * p);
    EXPECT_EQ(g[2], p * (p - 1) / 2.0);
    EXPECT_EQ(sum.stats().count, 1);
  }
}

TEST(CgIc0, TridiagonalFactorIsExactCholesky) {
  // IC(0) of a tridiagonal matrix has no fill-in to drop: it is the Cholesky factor, so
  // M^-1 (A y) == y.
  const std::int64_t n = 20;
  linalg::LocalCsr a;
  a.rows = n;
  a.row_ptr.push_back(0);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i > 0) {
      a.col.push_back(static_cast<std::int32_t>(i - 1));
      a.val.push_back(-1.0);
    }
    a.col.push_back(static_cast<std::int32_t>(i));
    a.val.push_back(2.5);
    if (i + 1 < n) {
      a.col.push_back(static_cast<std::int32_t>(i + 1));
      a.val.push_back(-1.0);
    }
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col.size()));
  }
  std::vector<double> y(n), ay(n, 0.0), z(n);
  for (std::int64_t i = 0; i < n; ++i) y[static_cast<std::size_t>(i)] = std::cos(0.3 * static_cast<double>(i));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t e = a.row_ptr[static_cast<std::size_t>(i)]; e < a.row_ptr[static_cast<std::size_t>(i) + 1]; ++e)
      ay[static_cast<std::size_t>(i)] += a.val[static_cast<std::size_t>(e)] * y[static_cast<std::size_t>(a.col[static_cast<std::size_t>(e)])];
  solvers::Ic0Factor f(a);
  const double dot = f.solve(ay, z);
  double ref = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(z[static_cast<std::size_t>(i)], y[static_cast<std::size_t>(i)], 1e-12);
    ref += ay[static_cast<std::size_t>(i)] * z[static_cast<std::size_t>(i)];
  }
  EXPECT_NEAR(dot, ref, 1e-12 * std::fabs(ref));
}

// Progress control inside the preconditioner: the polls change no arithmetic (IC(0) and Jacobi's
// apply bitwise; Jacobi's apply_dot sums (r, u) chunk by chunk) and account for every row once.
TEST(CgPc, PollsEveryIntervalRowsAndChangeNoResult) {
  System s = poisson({9, 8, 7}, true);
  const auto n = static_cast<std::size_t>(s.op->local_size());
  std::vector<double> r(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = std::sin(0.7 * static_cast<double>(i)) + 1.5;
  for (const std::string kind : {"jacobi", "bjacobi-ic0"}) {
    SCOPED_TRACE(kind);
    auto pc = solvers::make_preconditioner(kind, *s.op);
    std::vector<double> u0(n), u1(n), u2(n), u3(n);
    pc->apply(r, u0);
    const double d0 = pc->apply_dot(r, u1);
    const std::int64_t interval = 5;
    double rows = 0;
    long calls = 0;
    pc->set_polls({interval, [&](double k) {
                     rows += k;
                     ++calls;
                   }});
    pc->apply(r, u2);
    const double passes = kind == "bjacobi-ic0" ? 2 : 1;  // IC(0): a forward and a backward pass
    const long chunks = static_cast<long>((static_cast<std::int64_t>(n) + interval - 1) / interval);
    EXPECT_EQ(rows, static_cast<double>(n));
    EXPECT_EQ(calls, static_cast<long>(passes) * chunks);
    const double d1 = pc->apply_dot(r, u3);
    EXPECT_EQ(rows, 2.0 * static_cast<double>(n));
    EXPECT_EQ(u2, u0);
    EXPECT_EQ(u3, u1);
    if (kind == "bjacobi-ic0")
      EXPECT_EQ(d1, d0);
    else
      EXPECT_NEAR(d1, d0, 1e-13 * std::fabs(d0));
  }
}

// With --progress test and --reduction doubling the pipelined methods' reductions advance at the
// preconditioner's polls: the same iterates as without polls, bitwise (IC(0)).
TEST(CgPc, PollsInThePreconditionerGiveTheSameIterates) {
  System s = poisson({8, 7, 6}, false);
  for (const auto& m : overlapping_methods) {
    std::vector<std::vector<double>> xs;
    std::vector<std::int64_t> its;
    for (std::int64_t interval : {0, 1, 7}) {
      CgOptions o;
      o.method = m;
      o.pc = "bjacobi-ic0";
      o.doubling = true;
      o.pc_poll_interval = interval;
      o.iteration.tol = 1e-8;
      std::vector<double> x(s.b.size(), 0.0);
      const CgResult r = solvers::solve_cg(*s.op, s.b, x, o);
      EXPECT_TRUE(r.converged) << r.message;
      xs.push_back(x);
      its.push_back(r.iterations);
    }
    EXPECT_EQ(its[1], its[0]) << m;
    EXPECT_EQ(its[2], its[0]) << m;
    EXPECT_EQ(xs[1], xs[0]) << m;
    EXPECT_EQ(xs[2], xs[0]) << m;
  }
}

TEST(CgIc0, NonPositivePivotIsNamed) {
  linalg::LocalCsr a;  // [[1, 2], [2, 1]]: symmetric, indefinite; pivot 2 is 1 - 4 = -3
  a.rows = 2;
  a.row_ptr = {0, 2, 4};
  a.col = {0, 1, 0, 1};
  a.val = {1, 2, 2, 1};
  try {
    solvers::Ic0Factor f(a, 0, 10);
    ADD_FAILURE() << "no error";
  } catch (const solvers::PcSetupError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("pivot"), std::string::npos) << msg;
    EXPECT_NE(msg.find("negative"), std::string::npos) << msg;
    EXPECT_NE(msg.find("global row 11"), std::string::npos) << msg;
  }
}

// ---- whole solves -------------------------------------------------------------------------------

TEST(Cg, Poisson3dMatrixFreeAllMethodsAndPcsMatchDirectSolve) {
  System s = poisson({12, 10, 9}, false);
  // The problem is well conditioned: the four methods' iteration counts differ by at most 2.
  const auto spread = check_all_methods(s, 1e-8, 1e-6);
  for (std::size_t i = 0; i < spread.size(); ++i)
    EXPECT_LE(spread[i], 2) << "methods' iteration counts differ, pc " << all_pcs[i];
}

TEST(Cg, Poisson3dCsrAllMethodsAndPcsMatchDirectSolve) {
  System s = poisson({9, 8, 7}, true);
  check_all_methods(s, 1e-8, 1e-6);
}

TEST(Cg, ElasticityBcsrAllMethodsAndPcsMatchDirectSolve) {
  System s = elasticity({4, 4, 4});
  check_all_methods(s, 1e-8, 1e-4);
}

TEST(Cg, MatrixFreeAndAssembledPoissonGiveTheSameIterates) {
  // The two operators give bitwise the same products, and the solver is deterministic.
  System a = poisson({8, 7, 6}, false), b = poisson({8, 7, 6}, true);
  for (const auto& m : all_methods) {
    std::vector<double> xa, xb;
    const auto ra = solve(a, m, "jacobi", 1e-8, xa);
    const auto rb = solve(b, m, "jacobi", 1e-8, xb);
    EXPECT_EQ(ra.iterations, rb.iterations) << m;
    EXPECT_EQ(xa, xb) << m;
  }
}

TEST(Cg, BlockingAndNonblockingReductionsAgree) {
  System s = poisson({8, 7, 6}, true);
  for (const auto& m : overlapping_methods)
    for (auto pc : all_pcs) {
      std::vector<double> x1, x2;
      const auto a = solve(s, m, pc, 1e-6, x1, true);
      const auto b = solve(s, m, pc, 1e-6, x2, false);
      EXPECT_TRUE(a.converged && b.converged) << label(m, pc);
      EXPECT_LE(std::abs(a.iterations - b.iterations), 1) << label(m, pc);
    }
}

TEST(Cg, ResidualReplacementKeepsTrueResidualBelowTolerance) {
  System s = poisson({8, 7, 6}, false);
  for (const auto& m : all_methods)
    for (const std::string pc : {"none", "bjacobi-ic0"}) {
      std::vector<double> x;
      const auto r = solve(s, m, pc, 1e-10, x, true, 4);
      SCOPED_TRACE(label(m, pc));
      EXPECT_EQ(r.stop, core::StopReason::converged) << r.message;
      EXPECT_LE(r.true_residual, 1e-10);
      EXPECT_GE(r.stats.replacements, 1);
      EXPECT_LE(error_vs_direct(s, x), 1e-8);
    }
}

// ---- plain references: each method as its listing reads (Horikoshi et al., 2022, section 2), one vector
// operation at a time, no fusion, no replacement. desync's fused iterations must follow them to
// rounding (the fused kernels sum their dot products in another order).

/// The iterate and the recursive residuals ||r_k|| / ||b||, k = 0..iterations, of a plain run.
struct PlainRun {
  std::vector<double> x;
  std::vector<double> residuals;
};

class Plain {
 public:
  using V = std::vector<double>;
  Plain(linalg::Operator& A, std::string pc) : A_(A), M_(solvers::make_preconditioner(pc, A)) {}

  PlainRun run(const std::string& m, const V& b, int iterations) {
    if (m == "cg") return pcg(b, iterations);
    if (m == "cg-cg") return cg_cg(b, iterations);
    if (m == "pipecg") return pipecg(b, iterations);
    if (m == "groppcg") return groppcg(b, iterations);
    if (m == "gmres") return gmres(b, iterations);
    ADD_FAILURE() << "the registered method " << m << " has no plain reference here";
    return {};
  }

 private:
  V mul(const V& v) {  // A v
    V out(v.size());
    A_.apply(v, out);
    return out;
  }
  V pc(const V& v) {  // M^-1 v
    V out(v.size());
    M_->apply(v, out);
    return out;
  }
  double dot(const V& a, const V& c) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * c[i];
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, A_.comm());
    return s;
  }
  static void axpy(double a, const V& x, V& y) {  // y <- y + a x
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += a * x[i];
  }
  static void xpay(const V& x, double c, V& y) {  // y <- x + c y
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = x[i] + c * y[i];
  }
  /// r = b - A x with x = 0, and the run's bookkeeping.
  V start(const V& b, PlainRun& out) {
    out.x.assign(b.size(), 0.0);
    bnorm_ = std::sqrt(dot(b, b));
    V r = b;
    axpy(-1.0, mul(out.x), r);
    record(r, out);
    return r;
  }
  void record(const V& r, PlainRun& out) { out.residuals.push_back(std::sqrt(dot(r, r)) / bnorm_); }

  PlainRun pcg(const V& b, int iterations) {  // Algorithm 1
    PlainRun out;
    V r = start(b, out), u = pc(r), p = u;  // line 1
    double rho = dot(r, u);
    for (int k = 0; k < iterations; ++k) {
      const V q = mul(p);                       // line 3
      const double alpha = rho / dot(p, q);     // line 4
      axpy(alpha, p, out.x);                    // line 5
      axpy(-alpha, q, r);                       // line 6
      record(r, out);
      u = pc(r);                                // line 7
      const double rho_new = dot(r, u);         // line 8
      const double beta = rho_new / rho;        // line 9
      rho = rho_new;
      xpay(u, beta, p);                         // line 10
    }
    return out;
  }

  PlainRun cg_cg(const V& b, int iterations) {  // Algorithm 2
    PlainRun out;
    V r = start(b, out), u = pc(r), w = mul(u), p(b.size(), 0.0), q(b.size(), 0.0);
    double gamma = dot(r, u), delta = dot(w, u), gamma_old = 0, alpha = 0;
    for (int k = 0; k < iterations; ++k) {
      const double beta = k == 0 ? 0.0 : gamma / gamma_old;                                     // line 11
      alpha = k == 0 ? gamma / delta : gamma / (delta - beta * gamma / alpha);                  // line 12
      xpay(u, beta, p);                                                                         // line 3
      xpay(w, beta, q);                                                                         // line 4
      axpy(alpha, p, out.x);                                                                    // line 5
      axpy(-alpha, q, r);                                                                       // line 6
      record(r, out);
      u = pc(r);                                                                                // line 7
      w = mul(u);                                                                               // line 8
      gamma_old = gamma;
      gamma = dot(r, u);                                                                        // line 9
      delta = dot(w, u);                                                                        // line 10
    }
    return out;
  }

  PlainRun groppcg(const V& b, int iterations) {  // the 5-update listing (printed as Algorithm 3); s = A p, q = M^-1 s
    PlainRun out;
    V r = start(b, out), u = pc(r), p = u, s = mul(p);  // line 1
    double gamma = dot(r, u);
    for (int k = 0; k < iterations; ++k) {
      const double delta = dot(p, s);           // line 3
      const V q = pc(s);                        // line 4
      const double alpha = gamma / delta;       // line 5
      axpy(alpha, p, out.x);                    // line 6
      axpy(-alpha, s, r);                       // line 7
      record(r, out);
      axpy(-alpha, q, u);                       // line 8
      const double gamma_new = dot(r, u);       // line 9
      const V w = mul(u);                       // line 10
      const double beta = gamma_new / gamma;    // line 11
      gamma = gamma_new;
      xpay(u, beta, p);                         // line 12
      xpay(w, beta, s);                         // line 13
    }
    return out;
  }

  PlainRun pipecg(const V& b, int iterations) {  // the 8-update listing (printed as Algorithm 4); s = A p, q = M^-1 s
    PlainRun out;
    V r = start(b, out), u = pc(r), w = mul(u);  // line 1
    V z(b.size(), 0.0), q(b.size(), 0.0), s(b.size(), 0.0), p(b.size(), 0.0);
    double gamma_old = 0, alpha = 0;
    for (int k = 0; k < iterations; ++k) {
      const double gamma = dot(r, u);           // line 3
      const double delta = dot(w, u);           // line 4
      const V m = pc(w);                        // line 5
      const V n = mul(m);                       // line 6
      const double beta = k == 0 ? 0.0 : gamma / gamma_old;                     // lines 8, 10
      alpha = k == 0 ? gamma / delta : gamma / (delta - beta * gamma / alpha);  // lines 8, 10
      gamma_old = gamma;
      xpay(n, beta, z);                         // line 12
      xpay(m, beta, q);                         // line 13
      xpay(w, beta, s);                         // line 14
      xpay(u, beta, p);                         // line 15
      axpy(alpha, p, out.x);                    // line 16
      axpy(-alpha, s, r);                       // line 17
      axpy(-alpha, q, u);                       // line 18
      axpy(-alpha, z, w);                       // line 19
      record(r, out);
    }
    return out;
  }

  /// GMRES (Saad and Schultz, 1986) with right preconditioning (Saad, 2003, Algorithm 9.5), no
  /// restart within `iterations` (CgOptions::restart's default is larger): classical Gram-Schmidt
  /// twice, Givens rotations; the residuals are the estimates |g_{k}|, x is formed at the end.
  /// test_gmres.cpp holds the dense reference across restarts.
  PlainRun gmres(const V& b, int iterations) {
    PlainRun out;
    const V r = start(b, out);                                                           // line 1
    const double beta = std::sqrt(dot(r, r));
    const auto m = static_cast<std::size_t>(iterations);
    std::vector<V> v(m + 1, V(b.size(), 0.0));
    std::vector<std::vector<double>> h(m, std::vector<double>(m + 1, 0.0));  // h[j][i] = H(i, j)
    V c(m), s(m), g(m + 1, 0.0);
    g[0] = beta;
    axpy(1.0 / beta, r, v[0]);                                                           // line 1
    for (std::size_t j = 0; j < m; ++j) {
      V w = mul(pc(v[j]));                                                               // line 3
      for (int pass = 0; pass < 2; ++pass) {                                             // lines 4-7, twice
        V hj(j + 1);
        for (std::size_t i = 0; i <= j; ++i) hj[i] = dot(w, v[i]);
        for (std::size_t i = 0; i <= j; ++i) {
          h[j][i] += hj[i];
          axpy(-hj[i], v[i], w);
        }
      }
      h[j][j + 1] = std::sqrt(dot(w, w));                                                // line 8
      if (j + 1 < m) axpy(1.0 / h[j][j + 1], w, v[j + 1]);                               // line 8
      for (std::size_t i = 0; i < j; ++i) {
        const double a = h[j][i], d = h[j][i + 1];
        h[j][i] = c[i] * a + s[i] * d;
        h[j][i + 1] = -s[i] * a + c[i] * d;
      }
      const double d = std::hypot(h[j][j], h[j][j + 1]);
      c[j] = h[j][j] / d;
      s[j] = h[j][j + 1] / d;
      h[j][j] = d;
      g[j + 1] = -s[j] * g[j];
      g[j] = c[j] * g[j];
      out.residuals.push_back(std::fabs(g[j + 1]) / bnorm_);
    }
    V y(m), vy(b.size(), 0.0);                                                           // line 11
    for (std::size_t i = m; i-- > 0;) {
      double t = g[i];
      for (std::size_t l = i + 1; l < m; ++l) t -= h[l][i] * y[l];
      y[i] = t / h[i][i];
    }
    for (std::size_t i = 0; i < m; ++i) axpy(y[i], v[i], vy);
    axpy(1.0, pc(vy), out.x);
    return out;
  }

  linalg::Operator& A_;
  std::unique_ptr<solvers::Preconditioner> M_;
  double bnorm_ = 1;
};

/// Every method with every preconditioner and every reduction mode follows its plain reference for
/// `iterations` iterations: the residual history and the iterate agree to `tol` (relative; the
/// residuals also to 1e-14 ||b||).
void check_against_plain(System& s, int iterations, double tol) {
  for (auto pc : all_pcs) {
    Plain plain(*s.op, pc);
    for (const auto& m : all_methods) {
      const PlainRun ref = plain.run(m, s.b, iterations);
      for (int mode : {0, 1, 2}) {  // MPI_Iallreduce, MPI_Allreduce, recursive doubling
        // A method that does not overlap its reductions always blocks: one mode is all it has.
        if (!solvers::find_cg_method(m).overlaps_reduction && mode != 1) continue;
        const bool nonblocking = mode != 1;
        SCOPED_TRACE(label(m, pc, nonblocking) + (mode == 2 ? "/doubling" : ""));
        CgOptions o;
        o.method = m;
        o.pc = pc;
        o.nonblocking = nonblocking;
        o.doubling = mode == 2;
        o.iteration.tol = 1e-30;  // no convergence test fires: the run stops at max_iters
        o.iteration.max_iters = iterations;
        std::vector<double> x(s.b.size(), 0.0);
        const CgResult r = solvers::solve_cg(*s.op, s.b, x, o);
        EXPECT_EQ(r.stop, core::StopReason::max_iters) << r.message;
        ASSERT_EQ(r.history.size(), ref.residuals.size());
        for (std::size_t k = 0; k < ref.residuals.size(); ++k) {
          EXPECT_EQ(r.history[k].iteration, static_cast<std::int64_t>(k));
          // Relative to ||r_k||, and to ||b|| for the rounding of r's recurrence once ||r_k|| << ||b||.
          EXPECT_NEAR(r.history[k].residual, ref.residuals[k], tol * ref.residuals[k] + 1e-14) << "iteration " << k;
        }
        double diff = 0, norm = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          diff += (x[i] - ref.x[i]) * (x[i] - ref.x[i]);
          norm += ref.x[i] * ref.x[i];
        }
        double sums[2] = {diff, norm};
        MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, s.op->comm());
        EXPECT_LE(std::sqrt(sums[0] / sums[1]), tol);
      }
    }
  }
}

TEST(Cg, EveryMethodFollowsItsPlainListingPoisson) {
  System s = poisson({8, 7, 6}, false);
  check_against_plain(s, 15, 1e-9);
}

TEST(Cg, EveryMethodFollowsItsPlainListingElasticity) {
  System s = elasticity({4, 4, 3});
  check_against_plain(s, 15, 1e-9);
}

TEST(Cg, IndefiniteMatrixBreaksDownWithAClearMessage) {  // the CG methods; gmres solves it
  desync_test::TestComm comm;
  const auto A = desync_test::diagonal_matrix(comm, 16, [](std::int64_t i) { return i % 2 == 0 ? 1.0 : -1.0; });
  auto op = linalg::make_csr_operator(A, {});
  const std::vector<double> b(static_cast<std::size_t>(op->local_size()), 1.0);
  for (const auto& m : all_methods) {
    // no preconditioner: (p, Ap) = sum of +1 and -1 = 0 at the first step
    std::vector<double> x(b.size(), 0.0);
    CgOptions o;
    o.method = m;
    const auto r = solvers::solve_cg(*op, b, x, o);
    if (m == "gmres") {  // any nonsingular matrix: two steps (test_gmres.cpp, HappyBreakdown...)
      EXPECT_TRUE(r.converged) << r.message;
    } else {
      EXPECT_EQ(r.stop, core::StopReason::breakdown) << m << ": " << r.message;
      EXPECT_NE(r.message.find("not positive definite"), std::string::npos) << r.message;
      EXPECT_FALSE(r.converged);
      EXPECT_TRUE(solvers::is_numerical_failure(r.stop));
    }
    // jacobi: negative diagonal entry (gmres needs a non-zero one only: M^-1 A = I, solved at
    // once); IC(0): negative pivot
    for (const std::string pc : {"jacobi", "bjacobi-ic0"}) {
      o.pc = pc;
      std::fill(x.begin(), x.end(), 0.0);
      const auto f = solvers::solve_cg(*op, b, x, o);
      if (m == "gmres" && pc == "jacobi") {
        EXPECT_TRUE(f.converged) << f.message;
        EXPECT_LE(f.iterations, 1);
        continue;
      }
      EXPECT_EQ(f.stop, core::StopReason::pc_failed) << label(m, pc);
      EXPECT_NE(f.message.find(pc == "jacobi" ? "diagonal" : "pivot"), std::string::npos) << f.message;
    }
  }
}

TEST(Cg, NonFiniteRightHandSideIsReported) {
  System s = poisson({6, 5, 4}, false);
  if (desync_test::world_rank() == 0) s.b[0] = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> x;
  const auto r = solve(s, "pipecg", "none", 1e-6, x);
  EXPECT_EQ(r.stop, core::StopReason::non_finite);
  EXPECT_NE(r.message.find("NaN or Inf"), std::string::npos) << r.message;
}

TEST(Cg, LimitsAndZeroRightHandSide) {
  System s = poisson({8, 7, 6}, false);
  CgOptions o;
  o.iteration.max_iters = 5;
  for (const auto& m : all_methods) {
    o.method = m;
    std::vector<double> x(s.b.size(), 0.0);
    const auto r = solvers::solve_cg(*s.op, s.b, x, o);
    EXPECT_EQ(r.stop, core::StopReason::max_iters) << m;
    EXPECT_EQ(r.iterations, 5);
    EXPECT_FALSE(r.converged);
    EXPECT_GT(r.true_residual, 1e-6);
    EXPECT_EQ(r.history.size(), 6u);
  }
  o.iteration.max_iters = 100;
  const std::vector<double> zero(s.b.size(), 0.0);
  std::vector<double> x(s.b.size(), 3.0);
  const auto r = solvers::solve_cg(*s.op, zero, x, o);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.iterations, 0);
  for (double v : x) EXPECT_EQ(v, 0.0);
}

}  // namespace
