// A user's assembled system for the commands that accept --matrix (system_input.hpp).
#include "system_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "desync/core/comm.hpp"
#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/system_io.hpp"
#include "desync/run/field_io.hpp"
#include "desync/solvers/schwarz/coarse/coarse_registry.hpp"
#include "invocation.hpp"
#include "report_common.hpp"

namespace desync::run::detail {

void SystemCli::add(CLI::App& app, const std::string& what) {
  app.add_option("--matrix", matrix,
                 what + ": a Matrix Market (.mtx) or PETSc binary (.petsc, .bin, .dat) file, any square real "
                        "matrix (replaces the built-in problem)");
  app.add_option("--rhs", rhs, "With --matrix: the right-hand side (Matrix Market, PETSc binary Vec or .npy; default A 1)");
  partition_opt_ = app.add_option("--partition", partition,
                                  "With --matrix: which rank owns which rows: rows (the file's contiguous row blocks) | "
                                  "metis (k-way on the graph of A + A^T, on rank 0) | ptscotch (distributed) | a file "
                                  "with one part number per row")
                       ->capture_default_str();
  seed_opt_ = app.add_option("--partition-seed", seed, "With --partition metis or ptscotch: the partitioner's seed")
                  ->capture_default_str();
}

bool SystemCli::given() const { return !matrix.empty() || supplied_system() != nullptr; }

std::string SystemCli::source() const {
  const SuppliedSystem* supplied = supplied_system();
  return supplied ? supplied->description : matrix;
}

void SystemCli::check() const {
  if (supplied_system() && !matrix.empty())
    throw InputError("--matrix '" + matrix + "' cannot be given with a matrix in memory");
  if (!given()) {
    if (!rhs.empty()) throw InputError("--rhs goes with --matrix");
    if (partition_opt_ && partition_opt_->count() > 0) throw InputError("--partition goes with --matrix");
    if (seed_opt_ && seed_opt_->count() > 0) throw InputError("--partition-seed goes with --matrix");
    return;
  }
  linalg::parse_partition(partition, seed);  // InputError for an empty value
}

void SystemCli::effective(std::vector<std::pair<std::string, std::string>>& out) const {
  out.push_back({"matrix", source()});
  out.push_back({"rhs", rhs});
  out.push_back({"partition", given() ? partition : ""});
  out.push_back({"partition-seed", std::to_string(seed)});
}

namespace {
double max_seconds(MPI_Comm comm, double s) {
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, comm);
  return s;
}
}  // namespace

/// A system in memory (run::invoke), checked on every rank, as a DistributedCsr in the layout a file
/// would be read in (balanced consecutive row blocks) or in the caller's own blocks (on_root false);
/// `b` the caller's right-hand side and `near_kernel` its near-kernel vectors in the same layout
/// (left empty without). Collective.
linalg::DistributedCsr supplied_matrix(MPI_Comm comm, const SuppliedSystem& in, std::vector<double>& b, bool& has_rhs,
                                       std::vector<std::vector<double>>& near_kernel) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool holds = in.on_root ? rank == 0 : true;  // whether this rank's arrays count
  std::string problem;
  if (holds && !in.has_matrix)
    problem = in.on_root ? "no matrix on rank 0: with partition '" + in.partition + "' rank 0 passes the whole matrix"
                         : fmt::format("partition 'given': rank {} passed no matrix; with 'given' every rank passes its "
                                       "own rows (a whole matrix on rank 0 goes with partition 'rows', 'metis', "
                                       "'ptscotch' or an array of ranks)",
                                       rank);
  else if (holds) {
    const auto nnz = static_cast<std::int64_t>(in.col.size());
    if (in.rows < 0 || in.cols < 0 || in.row_ptr.size() != static_cast<std::size_t>(in.rows) + 1 ||
        in.val.size() != in.col.size() || in.row_ptr.front() != 0 || in.row_ptr.back() != nnz ||
        !std::is_sorted(in.row_ptr.begin(), in.row_ptr.end()))
      problem = fmt::format("the matrix's compressed rows do not fit together on rank {} ({} rows, {} row offsets, {} "
                            "column indices, {} values)",
                            rank, in.rows, in.row_ptr.size(), in.col.size(), in.val.size());
    else if (const auto bad = std::find_if(in.col.begin(), in.col.end(), [&](std::int64_t c) { return c < 0 || c >= in.cols; });
             bad != in.col.end())
      problem = fmt::format("the matrix has a column index {} outside 0..{} (rank {})", *bad, in.cols - 1, rank);
    else if (in.has_rhs && static_cast<std::int64_t>(in.b.size()) != in.rows)
      problem = in.on_root ? fmt::format("b has {} entries and the matrix {} rows", in.b.size(), in.rows)
                           : fmt::format("b has {} entries on rank {} and the matrix {} rows there", in.b.size(), rank, in.rows);
    else if (in.near_kernel_vectors < 0 ||
             static_cast<std::int64_t>(in.near_kernel.size()) != in.near_kernel_vectors * in.rows)
      problem = fmt::format("near_kernel: {} values on rank {} for {} vectors of the matrix's {} rows there",
                            in.near_kernel.size(), rank, in.near_kernel_vectors, in.rows);
    else if (std::any_of(in.near_kernel.begin(), in.near_kernel.end(), [](double v) { return !std::isfinite(v); }))
      problem = "near_kernel: a value is NaN or infinite";
  }
  agree_or_throw(comm, problem.empty(), problem);
  // The global shape: rank 0's, or the sum of the blocks (whose column counts must agree).
  std::int64_t shape[3] = {in.on_root ? (rank == 0 ? in.rows : 0) : in.rows, in.cols, -in.cols};
  if (in.on_root && rank != 0) shape[1] = shape[2] = std::numeric_limits<std::int64_t>::min();
  MPI_Allreduce(MPI_IN_PLACE, &shape[0], 1, MPI_INT64_T, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &shape[1], 2, MPI_INT64_T, MPI_MAX, comm);
  const std::int64_t n = shape[0], cols = shape[1], cols_min = -shape[2];
  if (!in.on_root && cols != cols_min)
    throw InputError(fmt::format("partition 'given': the ranks' blocks have different column counts ({} to {})", cols_min, cols));
  if (n != cols) throw InputError(fmt::format("the matrix is not square ({} x {})", n, cols));
  if (n == 0) throw InputError("the matrix has no rows");
  // Whether b was given: rank 0's word for a matrix on rank 0, every rank's alike otherwise.
  int rhs = in.has_rhs ? 1 : 0, rhs_min = rhs;
  if (in.on_root) {
    MPI_Bcast(&rhs, 1, MPI_INT, 0, comm);
    rhs_min = rhs;
  } else {
    MPI_Allreduce(MPI_IN_PLACE, &rhs, 1, MPI_INT, MPI_MAX, comm);
    MPI_Allreduce(MPI_IN_PLACE, &rhs_min, 1, MPI_INT, MPI_MIN, comm);
  }
  if (rhs != rhs_min) throw InputError("partition 'given': some ranks passed b and others did not");
  has_rhs = rhs != 0;
  // How many near-kernel vectors: rank 0's, or every rank's alike.
  int nk[2] = {in.near_kernel_vectors, -in.near_kernel_vectors};
  if (in.on_root)
    MPI_Bcast(nk, 1, MPI_INT, 0, comm);
  else
    MPI_Allreduce(MPI_IN_PLACE, nk, 2, MPI_INT, MPI_MAX, comm);
  if (!in.on_root && nk[0] != -nk[1])
    throw InputError("partition 'given': the ranks passed different numbers of near-kernel vectors");
  const int vectors = nk[0];

  // The compressed rows, columns ascending and duplicates summed (as a Matrix Market file's).
  linalg::DistributedCsr A;
  A.comm = comm;
  A.row_offsets.assign(static_cast<std::size_t>(size) + 1, 0);
  const std::int64_t here = holds ? in.rows : 0;
  if (in.on_root) {
    for (int r = 1; r <= size; ++r) A.row_offsets[static_cast<std::size_t>(r)] = n;
  } else {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(size));
    MPI_Allgather(&here, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm);
    for (int r = 0; r < size; ++r)
      A.row_offsets[static_cast<std::size_t>(r) + 1] = A.row_offsets[static_cast<std::size_t>(r)] + counts[static_cast<std::size_t>(r)];
  }
  A.row_ptr.assign(1, 0);
  std::vector<std::pair<std::int64_t, double>> row;
  for (std::int64_t i = 0; i < here; ++i) {
    row.clear();
    for (auto p = in.row_ptr[static_cast<std::size_t>(i)]; p < in.row_ptr[static_cast<std::size_t>(i) + 1]; ++p)
      row.emplace_back(in.col[static_cast<std::size_t>(p)], in.val[static_cast<std::size_t>(p)]);
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
    for (const auto& [c, v] : row) {
      if (!A.col.empty() && static_cast<std::int64_t>(A.col.size()) > A.row_ptr.back() && A.col.back() == c)
        A.val.back() += v;
      else {
        A.col.push_back(c);
        A.val.push_back(v);
      }
    }
    A.row_ptr.push_back(static_cast<std::int64_t>(A.col.size()));
  }
  if (has_rhs && holds) b = in.b;
  near_kernel.assign(static_cast<std::size_t>(vectors), {});
  if (holds)
    for (int v = 0; v < vectors; ++v)
      near_kernel[static_cast<std::size_t>(v)].assign(in.near_kernel.begin() + v * here, in.near_kernel.begin() + (v + 1) * here);
  if (!in.on_root || size == 1) return A;
  // From rank 0 to balanced consecutive blocks, the layout in which a file is read (read_matrix), so
  // that every partition method then sees what it sees on the command line.
  linalg::PartitionOptions blocks;
  blocks.method = linalg::PartitionMethod::file;
  blocks.file = "the balanced row blocks";
  blocks.parts_given = true;
  if (rank == 0)
    for (int r = 0; r < size; ++r) blocks.parts.insert(blocks.parts.end(), static_cast<std::size_t>(n / size + (r < n % size ? 1 : 0)), r);
  linalg::PartitionedSystem balanced = linalg::partition_system(A, blocks);
  if (has_rhs) {
    if (rank != 0) b.clear();
    b = balanced.to_partitioned(comm, b);
  }
  for (auto& z : near_kernel) z = balanced.to_partitioned(comm, z);
  return std::move(balanced.A);
}

/// The partition of a system in memory: its method, or rank 0's array of ranks.
linalg::PartitionOptions supplied_partition(const SuppliedSystem& in, int seed) {
  if (!in.on_root) return linalg::parse_partition("rows", seed);
  if (in.partition != "array") {
    if (in.partition != "rows" && in.partition != "metis" && in.partition != "ptscotch")
      throw InputError("partition '" + in.partition + "': expected rows, metis, ptscotch, given or an array of ranks");
    return linalg::parse_partition(in.partition, seed);
  }
  linalg::PartitionOptions o;
  o.method = linalg::PartitionMethod::file;
  o.file = "the partition array";
  o.parts_given = true;
  o.parts = in.parts;
  o.seed = seed;
  return o;
}

namespace {

// A row without a non-zero entry makes A singular whatever the method: refused at input (exit code
// 2, every rank alike), naming the first such row in the file's numbering, before a method or a
// preconditioner meets it in its own way (a zero pivot, a zero diagonal, a "converged" Krylov run).
void refuse_empty_rows(const linalg::DistributedCsr& A) {
  const auto bs = static_cast<std::size_t>(A.block_size);
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t i = 0; i < A.local_block_rows() && first == std::numeric_limits<std::int64_t>::max(); ++i) {
    for (std::size_t r = 0; r < bs; ++r) {
      bool any = false;
      for (auto p = A.row_ptr[static_cast<std::size_t>(i)]; p < A.row_ptr[static_cast<std::size_t>(i) + 1] && !any; ++p)
        for (std::size_t c = 0; c < bs && !any; ++c) any = A.val[static_cast<std::size_t>(p) * bs * bs + r * bs + c] != 0.0;
      if (!any) {
        first = (A.first_block_row() + i) * A.block_size + static_cast<std::int64_t>(r);
        break;
      }
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT64_T, MPI_MIN, A.comm);
  if (first != std::numeric_limits<std::int64_t>::max())
    throw InputError(fmt::format("row {} (0-based) of the matrix has no non-zero entry: the matrix is singular", first));
}

}  // namespace

LoadedSystem load_system(MPI_Comm comm, const SystemCli& cli) {
  LoadedSystem s;
  core::Stopwatch read_clock;
  const SuppliedSystem* supplied = supplied_system();
  std::vector<double> b;
  bool supplied_rhs = false;
  std::vector<std::vector<double>> near_kernel;
  linalg::DistributedCsr input = supplied ? supplied_matrix(comm, *supplied, b, supplied_rhs, near_kernel)
                                          : linalg::read_matrix(comm, cli.matrix);
  refuse_empty_rows(input);
  if (supplied_rhs) {
    s.rhs_is_a_times_one = false;
  } else if (!cli.rhs.empty()) {
    b = linalg::read_vector(comm, cli.rhs, input);
    s.rhs_is_a_times_one = false;
  } else {  // b = A 1, formed in the file's order so that it does not depend on the partition
    auto op = linalg::make_csr_operator(input, linalg::SpmvConfig{});
    const std::vector<double> ones(static_cast<std::size_t>(op->local_size()), 1.0);
    b.assign(ones.size(), 0.0);
    op->apply(ones, b);
  }
  s.read_seconds = max_seconds(comm, read_clock.seconds());
  s.rows = input.global_rows();
  std::int64_t nnz = input.nonzero_blocks();
  MPI_Allreduce(MPI_IN_PLACE, &nnz, 1, MPI_INT64_T, MPI_SUM, comm);
  s.nonzeros = nnz;
  s.system = linalg::partition_system(input, supplied ? supplied_partition(*supplied, cli.seed)
                                                      : linalg::parse_partition(cli.partition, cli.seed));
  if (supplied && supplied->on_root && supplied->partition == "array") s.system.stats.method = "array";
  s.b = s.system.to_partitioned(comm, b);
  for (auto& z : near_kernel) s.near_kernel.push_back(s.system.to_partitioned(comm, z));
  return s;
}

std::vector<std::vector<double>> near_kernel_of(MPI_Comm comm, const LoadedSystem& s, const std::string& path,
                                                bool two_level) {
  if (path.empty() && s.near_kernel.empty()) return {};
  if (!two_level) throw InputError("--near-kernel goes with --coarse " + solvers::coarse_space_names());
  if (path.empty()) return s.near_kernel;
  if (!s.near_kernel.empty())
    throw InputError("--near-kernel: given twice, as a file and in memory with the matrix");
  // A layout of the input's row blocks (the file's order) for the reader; then each vector moves
  // like b.
  const int rank = core::rank_of(comm);
  linalg::DistributedCsr layout;
  layout.comm = comm;
  layout.block_size = 1;
  layout.row_offsets = s.system.input_offsets;
  layout.row_ptr.assign(static_cast<std::size_t>(layout.row_offsets[static_cast<std::size_t>(rank) + 1] -
                                                 layout.row_offsets[static_cast<std::size_t>(rank)]) + 1, 0);
  std::vector<std::vector<double>> z;
  try {
    z = linalg::read_vectors(comm, path, layout);
  } catch (const InputError& e) {
    throw InputError(std::string("--near-kernel ") + e.what());
  }
  for (auto& v : z) v = s.system.to_partitioned(comm, v);
  return z;
}

std::string near_kernel_label(const LoadedSystem* s, const std::string& path, const std::string& built_in) {
  if (!path.empty()) return "file:" + path;
  return s && !s->near_kernel.empty() ? "given" : built_in;
}

void describe_system(RunRecord& r, nlohmann::json& details, const LoadedSystem& s, const SystemCli& cli) {
  const auto& st = s.system.stats;
  const SuppliedSystem* supplied = supplied_system();
  const std::string rhs = s.rhs_is_a_times_one ? "A 1" : supplied ? "given" : cli.rhs;
  r.setup_lines.push_back({"matrix", fmt::format("{}: {} rows, {} non-zeros; right-hand side {}", cli.source(), s.rows,
                                                 s.nonzeros, rhs)});
  const std::string seeded = st.method == "metis" || st.method == "ptscotch" ? fmt::format(" (seed {})", st.seed) : "";
  r.setup_lines.push_back(
      {"partition", fmt::format("{}{}: edge cut {}, rows per rank {}/{:.1f}/{}, non-zeros {}/{:.1f}/{} (min/mean/max), "
                                "{:.3f} s",
                                st.method == "file" && !supplied ? cli.partition : st.method, seeded, st.edge_cut, st.rows_min,
                                st.rows_mean, st.rows_max, st.nonzeros_min, st.nonzeros_mean, st.nonzeros_max,
                                st.seconds)});
  details["matrix"] = {{"path", cli.source()},
                       {"rows", s.rows},
                       {"nonzeros", s.nonzeros},
                       {"rhs", s.rhs_is_a_times_one ? "A*1" : rhs},
                       {"read_seconds", s.read_seconds}};
  details["partition"] = {{"method", st.method},
                          {"file", st.method == "file" && !supplied ? cli.partition : ""},
                          {"seed", st.seed},
                          {"edge_cut", st.edge_cut},
                          {"rows", {{"min", st.rows_min}, {"mean", st.rows_mean}, {"max", st.rows_max}}},
                          {"nonzeros", {{"min", st.nonzeros_min}, {"mean", st.nonzeros_mean}, {"max", st.nonzeros_max}}},
                          {"seconds", st.seconds}};
}

void check_vector_path(MPI_Comm comm, const std::string& path, const std::string& option) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".npy" && ext != ".mtx" && ext != ".petsc" && ext != ".bin" && ext != ".dat")
    throw InputError(option + " '" + path + "': unknown format (expected .npy, .mtx, or PETSc binary .petsc/.bin/.dat)");
  check_writable(comm, path, option);
}

void save_solution(MPI_Comm comm, const LoadedSystem& s, std::span<const double> x, const std::string& path) {
  const std::vector<double> original = s.system.to_input(comm, x);
  linalg::write_vector(comm, path, s.system.input_offsets, original);
}

std::string deliver_solution(MPI_Comm comm, const LoadedSystem& s, std::span<const double> x, const std::string& path) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string io_error = path.empty() ? "" : output_error(rank, [&] { save_solution(comm, s, x, path); });
  if (Invocation* inv = current_invocation()) {
    const int bs = s.system.A.block_size;
    inv->has_solution = true;
    inv->x.assign(x.begin(), x.end());
    inv->rows.clear();
    for (const std::int64_t row : s.system.original_row)
      for (int k = 0; k < bs; ++k) inv->rows.push_back(row * bs + k);
  }
  return io_error;
}

void export_system(MPI_Comm comm, const std::string& dir, const linalg::DistributedCsr& A, std::span<const double> b,
                   std::span<const int> part) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::string failure;
  if (rank == 0) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
      failure = fmt::format("--export-system '{}': cannot create the directory ({})", dir, ec.message());
  }
  agree_or_throw(comm, failure.empty(), failure);
  const std::string base = (std::filesystem::path(dir) / "").string();
  linalg::write_petsc_binary(A, base + "A.petsc");
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(size) + 1, 0);
  for (int r = 0; r <= size; ++r) offsets[static_cast<std::size_t>(r)] = A.row_offsets[static_cast<std::size_t>(r)] * A.block_size;
  linalg::write_vector(comm, base + "b.petsc", offsets, b);
  // partition.txt: gathered on rank 0 (one small integer per row).
  const int mine = static_cast<int>(part.size());
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::vector<int> all;
  if (rank == 0) {
    for (int r = 1; r < size; ++r) displs[static_cast<std::size_t>(r)] = displs[static_cast<std::size_t>(r) - 1] + counts[static_cast<std::size_t>(r) - 1];
    all.resize(static_cast<std::size_t>(displs.back() + counts.back()));
  }
  MPI_Gatherv(part.data(), mine, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, 0, comm);
  if (rank == 0) {
    std::ofstream out(base + "partition.txt");
    out << "# the part (rank) of each row of A.petsc in the run that exported it, one per line\n";
    for (int p : all) out << p << '\n';
    out.close();
    if (!out) failure = "--export-system: cannot write " + base + "partition.txt";
  }
  agree_or_throw(comm, failure.empty(), failure);
}

}  // namespace desync::run::detail
