// Several subdomains in one rank's block (include/desync/linalg/local_solver.hpp, LocalBlocks): the
// pieces by recursive graph bisection, their extension by `overlap` layers, one local solver each,
// and the additive or restricted sum of their solutions.
#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "desync/core/timer.hpp"
#include "desync/linalg/local_solver.hpp"

namespace desync::linalg {

namespace {

using Rows = std::vector<std::int32_t>;

// The graph of a + a^T without the diagonal: row i's neighbours adj[ptr[i], ptr[i + 1]).
struct Graph {
  std::vector<std::int64_t> ptr;
  Rows adj;
};

Graph symmetric_graph(const LocalCsr& a) {
  const auto n = static_cast<std::size_t>(a.rows);
  std::vector<Rows> lists(n);
  for (std::size_t i = 0; i < n; ++i)
    for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
      const auto j = static_cast<std::size_t>(a.col[static_cast<std::size_t>(p)]);
      if (j == i) continue;
      lists[i].push_back(static_cast<std::int32_t>(j));
      lists[j].push_back(static_cast<std::int32_t>(i));
    }
  Graph g;
  g.ptr.assign(1, 0);
  for (auto& l : lists) {
    std::sort(l.begin(), l.end());
    l.erase(std::unique(l.begin(), l.end()), l.end());
    g.adj.insert(g.adj.end(), l.begin(), l.end());
    g.ptr.push_back(static_cast<std::int64_t>(g.adj.size()));
  }
  return g;
}

// Breadth-first order of the rows marked `stamp` in `in`, starting at `start` and restarting at the
// lowest unvisited row of `rows` for every further component. `seen` holds visit stamps.
Rows breadth_first(const Graph& g, const Rows& rows, std::int32_t start, const std::vector<int>& in, int stamp,
                   std::vector<int>& seen, int visit) {
  Rows order;
  order.reserve(rows.size());
  auto grow = [&](std::int32_t root) {
    std::size_t head = order.size();
    seen[static_cast<std::size_t>(root)] = visit;
    order.push_back(root);
    while (head < order.size()) {
      const std::int32_t i = order[head++];
      for (auto p = g.ptr[static_cast<std::size_t>(i)]; p < g.ptr[static_cast<std::size_t>(i) + 1]; ++p) {
        const auto j = static_cast<std::size_t>(g.adj[static_cast<std::size_t>(p)]);
        if (in[j] == stamp && seen[j] != visit) {
          seen[j] = visit;
          order.push_back(static_cast<std::int32_t>(j));
        }
      }
    }
  };
  grow(start);
  for (const std::int32_t r : rows)
    if (seen[static_cast<std::size_t>(r)] != visit) grow(r);
  return order;
}

// Recursive bisection: `rows` into `parts` pieces labelled first_label.. (label[row]). Each cut
// takes the first share of a breadth-first order from a pseudo-peripheral row (the last row
// reached from the lowest one, George and Liu's first sweep), so the halves are connected fronts.
struct Bisection {
  const Graph& g;
  std::vector<int>& label;
  std::vector<int> in, seen;
  int stamps = 0;

  void split(const Rows& rows, int parts, int first_label) {
    if (parts == 1) {
      for (const std::int32_t r : rows) label[static_cast<std::size_t>(r)] = first_label;
      return;
    }
    const int stamp = ++stamps;
    for (const std::int32_t r : rows) in[static_cast<std::size_t>(r)] = stamp;
    const Rows probe = breadth_first(g, rows, rows.front(), in, stamp, seen, ++stamps);
    const Rows order = breadth_first(g, rows, probe.back(), in, stamp, seen, ++stamps);
    const int left_parts = parts / 2;
    const auto left_rows = static_cast<std::size_t>(static_cast<std::int64_t>(order.size()) * left_parts / parts);
    Rows left(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(left_rows));
    Rows right(order.begin() + static_cast<std::ptrdiff_t>(left_rows), order.end());
    std::sort(left.begin(), left.end());
    std::sort(right.begin(), right.end());
    split(left, left_parts, first_label);
    split(right, parts - left_parts, first_label + left_parts);
  }
};

// label[i] = the piece of row i in [first, first + count), -1 elsewhere.
std::vector<int> pieces_of(const Graph& g, std::int64_t first, std::int64_t count, int blocks) {
  const std::size_t n = g.ptr.size() - 1;
  std::vector<int> label(n, -1);
  Rows split;
  for (std::int64_t i = first; i < first + count; ++i) split.push_back(static_cast<std::int32_t>(i));
  Bisection bisect{g, label, std::vector<int>(n, 0), std::vector<int>(n, 0)};
  bisect.split(split, blocks, 0);
  return label;
}

class BlockSolver final : public LocalSolver {
 public:
  BlockSolver(const LocalCsr& a, const LocalBlocks& b, LocalSolverKind kind, double ilu_relax)
      : restricted_(b.restricted) {
    core::Stopwatch clock;
    rows_ = a.rows;
    approximate_ = true;
    const auto n = static_cast<std::size_t>(a.rows);
    const std::int64_t count = b.rows < 0 ? a.rows - b.first : b.rows;
    if (b.blocks < 1 || b.first < 0 || count < 0 || b.first + count > a.rows)
      throw std::invalid_argument(fmt::format("{} pieces of rows [{}, {}) of a {}-row block", b.blocks, b.first,
                                              b.first + count, a.rows));
    if (b.blocks > count)
      throw std::invalid_argument(fmt::format("{} pieces of {} rows: at most one piece per row", b.blocks, count));
    const Graph g = symmetric_graph(a);
    const std::vector<int> label = pieces_of(g, b.first, count, b.blocks);  // the pieces' own rows
    pieces_.resize(static_cast<std::size_t>(b.blocks));
    for (std::int64_t i = b.first; i < b.first + count; ++i)
      pieces_[static_cast<std::size_t>(label[static_cast<std::size_t>(i)])].rows.push_back(static_cast<std::int32_t>(i));

    // Omega_k: the own rows and `overlap` layers around them in the block's graph.
    std::vector<int> mark(n, -1);
    std::vector<std::int32_t> local(n, -1);
    keeper_.assign(n, -1);
    for (int k = 0; k < b.blocks; ++k) {
      Rows& rows = pieces_[static_cast<std::size_t>(k)].rows;
      for (const std::int32_t r : rows) mark[static_cast<std::size_t>(r)] = k;
      std::size_t layer_begin = 0;
      for (int layer = 0; layer < b.overlap; ++layer) {
        const std::size_t layer_end = rows.size();
        for (std::size_t q = layer_begin; q < layer_end; ++q) {
          const auto i = static_cast<std::size_t>(rows[q]);
          for (auto p = g.ptr[i]; p < g.ptr[i + 1]; ++p) {
            const auto j = static_cast<std::size_t>(g.adj[static_cast<std::size_t>(p)]);
            if (mark[j] != k) {
              mark[j] = k;
              rows.push_back(static_cast<std::int32_t>(j));
            }
          }
        }
        layer_begin = layer_end;
      }
      std::sort(rows.begin(), rows.end());
      // Restricted: own rows first, then rows outside the split that no earlier piece keeps.
      for (const std::int32_t r : rows) {
        const auto i = static_cast<std::size_t>(r);
        if (label[i] == k || (label[i] < 0 && keeper_[i] < 0)) keeper_[i] = k;
      }
    }

    // A_k = a(Omega_k, Omega_k): columns renumbered in the piece (ascending rows keep them ascending).
    std::int64_t nonzeros = 0, smallest = a.rows, largest = 0;
    for (int k = 0; k < b.blocks; ++k) {
      Piece& piece = pieces_[static_cast<std::size_t>(k)];
      for (std::size_t q = 0; q < piece.rows.size(); ++q) local[static_cast<std::size_t>(piece.rows[q])] = static_cast<std::int32_t>(q);
      LocalCsr ak;
      ak.rows = static_cast<std::int64_t>(piece.rows.size());
      ak.row_ptr.assign(1, 0);
      for (const std::int32_t r : piece.rows) {
        const auto i = static_cast<std::size_t>(r);
        for (auto p = a.row_ptr[i]; p < a.row_ptr[i + 1]; ++p) {
          const std::int32_t j = local[static_cast<std::size_t>(a.col[static_cast<std::size_t>(p)])];
          if (j < 0) continue;  // a coupling out of Omega_k: dropped (the Dirichlet condition between pieces)
          ak.col.push_back(j);
          ak.val.push_back(a.val[static_cast<std::size_t>(p)]);
        }
        ak.row_ptr.push_back(static_cast<std::int64_t>(ak.col.size()));
      }
      for (const std::int32_t r : piece.rows) local[static_cast<std::size_t>(r)] = -1;
      try {
        piece.solver = make_local_solver(ak, kind, LocalSolverUse::many_solves, ilu_relax);
      } catch (const FactorisationError& e) {
        throw FactorisationError(fmt::format("piece {} of {} ({} rows): {}", k + 1, b.blocks, ak.rows, e.what()));
      }
      piece.b.resize(piece.rows.size());
      piece.x.resize(piece.rows.size());
      nonzeros += piece.solver->factor_nonzeros();
      smallest = std::min(smallest, ak.rows);
      largest = std::max(largest, ak.rows);
    }
    const LocalSolver& first = *pieces_.front().solver;
    kind_ = first.kind();
    factor_nonzeros_ = nonzeros;
    reason_ = fmt::format("{} pieces of {}-{} rows (overlap {}, {}): {}", b.blocks, smallest, largest, b.overlap,
                          restricted_ ? "restricted" : "additive", first.reason());
    factor_seconds_ = clock.seconds();
  }

  void solve(const double* b, double* x) override {
    const auto n = static_cast<std::size_t>(rows_);
    std::fill(x, x + n, 0.0);
    for (auto& piece : pieces_) {
      for (std::size_t q = 0; q < piece.rows.size(); ++q) piece.b[q] = b[piece.rows[q]];  // R_k b
      piece.solver->solve(piece.b.data(), piece.x.data());                                // A_k^-1 R_k b
      const int k = static_cast<int>(&piece - pieces_.data());
      for (std::size_t q = 0; q < piece.rows.size(); ++q) {
        const auto i = static_cast<std::size_t>(piece.rows[q]);
        if (!restricted_)
          x[i] += piece.x[q];  // x += R_k^T A_k^-1 R_k b (additive)
        else if (keeper_[i] == k)
          x[i] = piece.x[q];  // x += Rt_k^T A_k^-1 R_k b (restricted: the piece's kept rows)
      }
    }
  }

 private:
  struct Piece {
    Rows rows;  // Omega_k, ascending block rows
    std::unique_ptr<LocalSolver> solver;
    std::vector<double> b, x;
  };
  std::vector<Piece> pieces_;
  std::vector<int> keeper_;  // restricted: the piece that keeps row i
  bool restricted_;
};

}  // namespace

LocalCsr owned_block(const DistributedCsr& A, int rank) {
  const std::int64_t first = A.row_offsets[static_cast<std::size_t>(rank)], n = A.local_block_rows();
  LocalCsr own;
  own.rows = n;
  own.row_ptr.assign(1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (auto k = A.row_ptr[static_cast<std::size_t>(i)]; k < A.row_ptr[static_cast<std::size_t>(i) + 1]; ++k) {
      const std::int64_t j = A.col[static_cast<std::size_t>(k)] - first;
      if (j < 0 || j >= n) continue;
      own.col.push_back(static_cast<std::int32_t>(j));
      own.val.push_back(A.val[static_cast<std::size_t>(k)]);
    }
    own.row_ptr.push_back(static_cast<std::int64_t>(own.col.size()));
  }
  return own;
}

std::vector<int> block_pieces(const LocalCsr& a, std::int64_t first, std::int64_t rows, int blocks) {
  if (blocks < 1 || first < 0 || rows < blocks || first + rows > a.rows)
    throw std::invalid_argument(fmt::format("{} pieces of rows [{}, {}) of a {}-row block", blocks, first, first + rows,
                                            a.rows));
  return pieces_of(symmetric_graph(a), first, rows, blocks);
}

std::unique_ptr<LocalSolver> make_block_solver(const LocalCsr& a, const LocalBlocks& blocks, LocalSolverKind kind,
                                               double ilu_relax) {
  if (blocks.blocks == 1 && blocks.first == 0 && (blocks.rows < 0 || blocks.rows == a.rows))
    return make_local_solver(a, kind, LocalSolverUse::many_solves, ilu_relax);
  return std::make_unique<BlockSolver>(a, blocks, kind, ilu_relax);
}

}  // namespace desync::linalg
