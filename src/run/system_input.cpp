// A user's assembled system for the commands that accept --matrix (system_input.hpp).
#include "system_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "desync/core/error.hpp"
#include "desync/core/timer.hpp"
#include "desync/linalg/csr_operator.hpp"
#include "desync/linalg/system_io.hpp"
#include "desync/run/field_io.hpp"

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

void SystemCli::check() const {
  if (!given()) {
    if (!rhs.empty()) throw InputError("--rhs goes with --matrix");
    if (partition_opt_ && partition_opt_->count() > 0) throw InputError("--partition goes with --matrix");
    if (seed_opt_ && seed_opt_->count() > 0) throw InputError("--partition-seed goes with --matrix");
    return;
  }
  linalg::parse_partition(partition, seed);  // InputError for an empty value
}

void SystemCli::effective(std::vector<std::pair<std::string, std::string>>& out) const {
  out.push_back({"matrix", matrix});
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

LoadedSystem load_system(MPI_Comm comm, const SystemCli& cli) {
  LoadedSystem s;
  core::Stopwatch read_clock;
  linalg::DistributedCsr input = linalg::read_matrix(comm, cli.matrix);
  std::vector<double> b;
  if (!cli.rhs.empty()) {
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
  s.system = linalg::partition_system(input, linalg::parse_partition(cli.partition, cli.seed));
  s.b = s.system.to_partitioned(comm, b);
  return s;
}

void describe_system(RunRecord& r, nlohmann::json& details, const LoadedSystem& s, const SystemCli& cli) {
  const auto& st = s.system.stats;
  r.setup_lines.push_back({"matrix", fmt::format("{}: {} rows, {} non-zeros; right-hand side {}", cli.matrix, s.rows,
                                                 s.nonzeros, s.rhs_is_a_times_one ? "A 1" : cli.rhs)});
  const std::string seeded = st.method == "metis" || st.method == "ptscotch" ? fmt::format(" (seed {})", st.seed) : "";
  r.setup_lines.push_back(
      {"partition", fmt::format("{}{}: edge cut {}, rows per rank {}/{:.1f}/{}, non-zeros {}/{:.1f}/{} (min/mean/max), "
                                "{:.3f} s",
                                st.method == "file" ? cli.partition : st.method, seeded, st.edge_cut, st.rows_min,
                                st.rows_mean, st.rows_max, st.nonzeros_min, st.nonzeros_mean, st.nonzeros_max,
                                st.seconds)});
  details["matrix"] = {{"path", cli.matrix},
                       {"rows", s.rows},
                       {"nonzeros", s.nonzeros},
                       {"rhs", s.rhs_is_a_times_one ? "A*1" : cli.rhs},
                       {"read_seconds", s.read_seconds}};
  details["partition"] = {{"method", st.method},
                          {"file", st.method == "file" ? cli.partition : ""},
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
