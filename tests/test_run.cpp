// desync::run and friends: agreement on errors, field files written collectively, statistics.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "desync/communication/halo_exchange.hpp"
#include "desync/decomposition/cart_grid.hpp"
#include "desync/decomposition/field.hpp"
#include "desync/core/error.hpp"
#include "desync/run/field_io.hpp"
#include "desync/run/record.hpp"
#include "desync/solvers/driver/iteration_result.hpp"
#include "test_util.hpp"

using namespace desync;
using decomposition::CartGrid;
using decomposition::Field;
using decomposition::Index3;

TEST(AgreeOrThrow, EveryRankThrowsTheLowestFailingRanksMessage) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  EXPECT_NO_THROW(agree_or_throw(comm, true, "unused"));
  // The last rank fails alone: everyone throws its message.
  try {
    agree_or_throw(comm, rank != size - 1, "rank " + std::to_string(rank) + " is unhappy");
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(size - 1) + " is unhappy");
  }
  // Every rank from 1 on fails (or rank 0 alone on one rank): the lowest one's message wins.
  const int lowest = size > 1 ? 1 : 0;
  try {
    agree_or_throw(comm, size > 1 && rank == 0, "message of rank " + std::to_string(rank));
    ADD_FAILURE() << "no exception";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "message of rank " + std::to_string(lowest));
  }
}

TEST(FieldFormat, FromExtension) {
  EXPECT_EQ(run::field_format_for("u.npy"), run::FieldFormat::npy);
  EXPECT_EQ(run::field_format_for("dir/u.vti"), run::FieldFormat::vti);
  for (const char* bad : {"u.txt", "u", "npy", "u.npy.bak", "u.NPY", ""})
    EXPECT_THROW(run::field_format_for(bad), InputError) << "'" << bad << "'";
}

namespace {

/// A file name all ranks agree on, in a fresh directory removed at the end.
class SharedTempDir {
 public:
  explicit SharedTempDir(MPI_Comm comm) : comm_(comm) {
    int pid = static_cast<int>(getpid());
    MPI_Bcast(&pid, 1, MPI_INT, 0, comm);
    dir_ = std::filesystem::temp_directory_path() / ("desync_test_run_" + std::to_string(pid));
    if (desync_test::world_rank() == 0) std::filesystem::create_directories(dir_);
    MPI_Barrier(comm);
  }
  ~SharedTempDir() {
    MPI_Barrier(comm_);
    if (desync_test::world_rank() == 0) std::filesystem::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  MPI_Comm comm_;
  std::filesystem::path dir_;
};

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct SaveCase {
  Index3 global;
  Index3 hint;
};
// 13x11x7 split along y and z is the shape on which Open MPI 4.1's default MPI-IO (ompio, fcoll
// vulcan with data sieving) most often loses an aggregator's part of the file (see the report).
const SaveCase save_cases[] = {
    {{7, 5, 3}, {0, 0, 0}}, {{5, 6, 9}, {1, 1, 0}}, {{9, 4, 5}, {0, 1, 1}}, {{13, 11, 7}, {1, 0, 0}}};

/// Rank 0: cells of the file at `path` that do not hold 0.5 + global index ("" = header problem).
long check_saved_file(const std::string& path, const Index3& global, std::string& problem) {
  const long long cells = static_cast<long long>(global[0]) * global[1] * global[2];
  const std::vector<char> raw = read_all(path);
  std::size_t data = 0;
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    if (raw.size() < 10 || std::string(raw.data(), 6) != "\x93NUMPY") {
      problem = "bad .npy magic";
      return -1;
    }
    const std::size_t hlen = static_cast<unsigned char>(raw[8]) | (static_cast<unsigned char>(raw[9]) << 8);
    data = 10 + hlen;
    if (raw.size() < data) {
      problem = "file shorter than its header";
      return -1;
    }
    const std::string header(raw.begin() + 10, raw.begin() + static_cast<std::ptrdiff_t>(data));
    const std::string shape = "'shape': (" + std::to_string(global[2]) + ", " + std::to_string(global[1]) + ", " +
                              std::to_string(global[0]) + ")";
    if (data % 64 != 0) problem = "data offset not a multiple of 64";
    if (header.find(shape) == std::string::npos) problem = "no " + shape + " in header " + header;
    if (header.find("'descr': '<f8'") == std::string::npos) problem = "descr not <f8: " + header;
    if (raw.size() != data + 8 * static_cast<std::size_t>(cells)) problem = "wrong file size";
  } else {
    const std::string text(raw.begin(), raw.end());
    const auto pos = text.find("<AppendedData encoding=\"raw\">");
    const auto underscore = pos == std::string::npos ? pos : text.find('_', pos);
    if (underscore == std::string::npos || underscore + 9 > raw.size()) {
      problem = "no appended data";
      return -1;
    }
    std::uint64_t bytes = 0;
    std::memcpy(&bytes, raw.data() + underscore + 1, 8);
    if (bytes != 8u * static_cast<std::uint64_t>(cells)) problem = "wrong appended byte count";
    data = underscore + 9;
    if (data + bytes > raw.size() || text.substr(data + bytes) != "\n  </AppendedData>\n</VTKFile>\n")
      problem = "wrong footer";
  }
  if (raw.size() < data + 8 * static_cast<std::size_t>(cells)) {
    problem = "file too short";
    return -1;
  }
  long wrong = 0;
  for (long long g = 0; g < cells; ++g) {
    double v;
    std::memcpy(&v, raw.data() + data + 8 * static_cast<std::size_t>(g), 8);
    wrong += v != 0.5 + static_cast<double>(g) ? 1 : 0;
  }
  return wrong;
}

}  // namespace

// Every rank writes its block: the global array on disk holds, at position (k, j, i), the value
// given to global cell (i, j, k); halos (filled with garbage) are never written. Each shape is saved
// several times, into fresh files, alternating .npy and .vti: a write that loses data only now and
// then is still caught.
TEST(SaveField, NpyAndVtiHoldTheGlobalArray) {
  desync_test::TestComm comm;
  SharedTempDir tmp(comm);
  const int repeats = 10;
  for (const auto& c : save_cases) {
    const Index3 dims = decomposition::choose_dims(desync_test::world_size(), c.hint);
    if (!decomposition::check_split(c.global, dims).empty()) continue;
    CartGrid grid(comm, c.global, dims);
    Field u(grid.local(), -999.0);
    const auto& n = grid.local();
    for (int k = 0; k < n[2]; ++k)
      for (int j = 0; j < n[1]; ++j)
        for (int i = 0; i < n[0]; ++i) u(i, j, k) = 0.5 + static_cast<double>(grid.global_index(i, j, k));
    const std::string shape = std::to_string(c.global[0]) + "x" + std::to_string(c.global[1]) + "x" +
                              std::to_string(c.global[2]) + " on " + std::to_string(dims[0]) + "x" +
                              std::to_string(dims[1]) + "x" + std::to_string(dims[2]);
    int bad_saves = 0;
    std::string first_problem;
    for (int rep = 0; rep < repeats; ++rep) {
      std::string name = "u";
      name += std::to_string(&c - save_cases);
      name += '_';
      name += std::to_string(rep);
      name += rep % 2 ? ".vti" : ".npy";
      const std::string path = tmp.path(name);
      run::save_field(grid, u, path);
      MPI_Barrier(comm);
      if (grid.rank() != 0) continue;
      std::string problem;
      const long wrong = check_saved_file(path, c.global, problem);
      if (wrong != 0 || !problem.empty()) {
        ++bad_saves;
        if (first_problem.empty())
          first_problem = path + ": " + (problem.empty() ? "" : problem + ", ") + std::to_string(wrong) +
                          " of " + std::to_string(grid.global_cells()) + " values wrong";
      }
    }
    EXPECT_EQ(bad_saves, 0) << shape << ": " << bad_saves << " of " << repeats
                            << " saves wrote a wrong file; first: " << first_problem;
  }
}

TEST(SaveField, UnwritablePathThrowsOnEveryRank) {
  desync_test::TestComm comm;
  CartGrid grid(comm, {6, 5, 4}, decomposition::choose_dims(desync_test::world_size(), {0, 0, 0}));
  Field u(grid.local());
  EXPECT_THROW(run::save_field(grid, u, "/nonexistent/dir/u.npy"), std::runtime_error);
  EXPECT_THROW(run::check_writable(comm, "/nonexistent/dir/u.npy", "--save"), InputError);
  EXPECT_NO_THROW(run::check_writable(comm, "some_new_file.npy", "--save"));
}

TEST(Stats, DelayStatsRecordsSignedAges) {
  comm::DelayStats d;
  EXPECT_EQ(d.mean(), 0.0);
  d.record(3);
  d.record(0);
  d.record(-2);  // the sender is ahead
  d.record(100);
  EXPECT_EQ(d.count, 4);
  EXPECT_EQ(d.ahead, 1);
  EXPECT_EQ(d.min, -2);
  EXPECT_EQ(d.max, 100);
  EXPECT_DOUBLE_EQ(d.mean(), 101.0 / 4.0);
  EXPECT_EQ(d.histogram[0], 2);  // 0 and the negative age
  EXPECT_EQ(d.histogram[3], 1);
  EXPECT_EQ(d.histogram[comm::DelayStats::bins - 1], 1);  // 63 and older
  long total = 0;
  for (long h : d.histogram) total += h;
  EXPECT_EQ(total, d.count);
}

TEST(Stats, SummariseIterations) {
  std::vector<run::RankFields> ranks(3);
  ranks[0].integer("iterations", 10);
  ranks[1].integer("iterations", 40);
  ranks[2].integer("iterations", 25);
  const auto s = run::summarise_iterations(ranks);
  EXPECT_EQ(s.min, 10);
  EXPECT_EQ(s.max, 40);
  EXPECT_DOUBLE_EQ(s.mean, 25.0);
  const auto e = run::summarise_iterations({});
  EXPECT_EQ(e.min, 0);
  EXPECT_EQ(e.max, 0);
}

TEST(Stats, MeanTimeSplitCountsOnlyCountedParts) {
  std::vector<run::RankFields> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ranks[static_cast<std::size_t>(r)].time_part("spmv", 1.0 + r).time_part("halo_wait", 0.5, false).time_part("pc", 2.0);
    ranks[static_cast<std::size_t>(r)].total_time = 4.0 + 2 * r;
  }
  EXPECT_DOUBLE_EQ(ranks[0].other_time(), 1.0);  // 4 - 1 - 2: halo_wait is a share of spmv
  EXPECT_DOUBLE_EQ(ranks[1].other_time(), 2.0);  // 6 - 2 - 2
  const auto m = run::mean_time_split(ranks);
  ASSERT_EQ(m.size(), 5U);
  const std::vector<std::string> names{"spmv", "halo_wait", "pc", "other", "total"};
  const std::vector<double> means{1.5, 0.5, 2.0, 1.5, 5.0};
  for (std::size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i].name, names[i]);
    EXPECT_DOUBLE_EQ(m[i].seconds, means[i]) << names[i];
  }
}

// Every rank's statistics arrive on rank 0 by name, in rank order, with their kinds and lengths.
TEST(Stats, GatherRankFieldsOrdersByRankOnRankZero) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  solvers::RankStats stats;  // Jacobi's statistics, named as its command file names them
  stats.halo.delay.record(rank);
  stats.halo.delay.record(-1);
  run::RankFields mine;
  mine.integer("rank", rank)
      .integers("coords", {rank, 2 * rank, 3})
      .integer("iterations", 1000 + rank)
      .integer("big", (std::int64_t{1} << 52) + rank)
      .flag("prefetch", rank % 2 == 1)
      .number("delay_mean", stats.halo.delay.mean())
      .integers("delay_histogram", std::vector<std::int64_t>(stats.halo.delay.histogram.begin(),
                                                             stats.halo.delay.histogram.end()));
  mine.time_part("compute", 0.25 * rank).time_part("halo", 0.5);
  mine.total_time = 1.0 + rank;
  const auto all = run::gather_rank_fields(comm, mine);
  if (rank != 0) {
    EXPECT_TRUE(all.empty());
    return;
  }
  ASSERT_EQ(all.size(), static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const auto& s = all[static_cast<std::size_t>(r)];
    ASSERT_EQ(s.fields.size(), mine.fields.size());
    EXPECT_EQ(s.value("rank"), r);
    EXPECT_EQ(s.find("coords")->values, (std::vector<double>{1.0 * r, 2.0 * r, 3.0}));
    EXPECT_EQ(s.find("coords")->kind, run::RankField::Kind::integers);
    EXPECT_EQ(s.value("iterations"), 1000 + r);
    EXPECT_EQ(static_cast<std::int64_t>(s.value("big")), (std::int64_t{1} << 52) + r);  // exact below 2^53
    EXPECT_EQ(s.value("prefetch"), r % 2 == 1 ? 1.0 : 0.0);
    EXPECT_EQ(s.value("delay_mean"), (r - 1) / 2.0);
    const auto& h = s.find("delay_histogram")->values;
    ASSERT_EQ(h.size(), static_cast<std::size_t>(comm::DelayStats::bins));
    EXPECT_EQ(h[0], r == 0 ? 2.0 : 1.0);  // ages <= 0: the -1, and rank 0's own 0
    if (r > 0) {
      EXPECT_EQ(h[static_cast<std::size_t>(std::min(r, comm::DelayStats::bins - 1))], 1.0);
    }
    ASSERT_EQ(s.time.size(), 2U);
    EXPECT_EQ(s.time[0].name, "compute");
    EXPECT_EQ(s.time[0].seconds, 0.25 * r);
    EXPECT_EQ(s.total_time, 1.0 + r);
    EXPECT_THROW(s.value("no_such_field"), std::out_of_range);
  }
}

// Ranks that name their statistics differently are a programming error, found on every rank.
TEST(Stats, GatherRankFieldsRejectsDifferentNames) {
  desync_test::TestComm comm;
  const int rank = desync_test::world_rank(), size = desync_test::world_size();
  run::RankFields mine;
  mine.integer("rank", rank).integer("iterations", 1);
  if (rank == size - 1) mine.integer("extra", 1);
  if (size == 1) {
    EXPECT_NO_THROW(run::gather_rank_fields(comm, mine));
    return;
  }
  EXPECT_THROW(run::gather_rank_fields(comm, mine), std::logic_error);
}
