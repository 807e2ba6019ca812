#pragma once
// An offset list of a halo plan (PlanNeighbour::send or ::recv) as strided runs, for the pack and
// unpack loops of comm::PlanExchange.
//
// A structured face is a few long regular runs: a y- or z-face is rows of consecutive cells, an
// x-face one cell per row at the row's stride, and a plan over several variables repeats them per
// variable. Copying run by run moves a stride-1 run as a block (vector loads and stores) and a
// strided one without reading an offset per value; a list with no regularity (an assembled
// matrix's ghost columns) keeps the plain offset loop. Either way every value goes where the
// offset list says, so results are bitwise those of the list (test_plan: IndexRuns.*).
//
//   position e of the packed buffer  <->  element offset start + (e - first) * stride of the array,
//   for the run with first <= e < first + count.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace desync::comm {

class IndexRuns {
 public:
  struct Run {
    std::int64_t first = 0;   ///< position of the run's first value in the packed buffer
    std::int64_t start = 0;   ///< its offset in the array
    std::int64_t stride = 1;  ///< offset step between consecutive values of the run
    std::int64_t count = 0;
  };

  IndexRuns() = default;
  /// Compresses `offsets` greedily into maximal runs of one stride. The runs replace the offsets
  /// only where they pay: at least `min_mean_run` values per run on average (default 4);
  /// otherwise the offsets are kept and used as they are.
  explicit IndexRuns(const std::vector<std::int32_t>& offsets, double min_mean_run = 4.0);

  /// out[e] = x[offsets[e]] for every e. With threads > 1 and a list of at least threaded_from
  /// values the runs are shared among that many OpenMP threads (each run is copied by one thread).
  void gather(const double* x, double* out, int threads = 1) const;
  /// x[offsets[e]] = in[e] for every e (threads as gather).
  void scatter(const double* in, double* x, int threads = 1) const;

  /// Calls visit(first, start, stride, count) for every run (for a plain offset list: once per
  /// entry, count 1), for loops that compute what they write (the asynchrony-tolerant halo
  /// approximation): buffer positions first + e go to offsets start + e * stride, e < count. With
  /// threads > 1 and a large list the calls are shared among that many OpenMP threads, so visit
  /// must only write what its run names.
  template <class Visit>
  void for_each_run(Visit&& visit, int threads = 1) const {
    const int nt = threads > 1 && size_ >= threaded_from ? threads : 1;
    if (by_runs()) {
      const auto n = static_cast<std::int64_t>(runs_.size());
      #pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
      for (std::int64_t q = 0; q < n; ++q) {
        const Run& r = runs_[static_cast<std::size_t>(q)];
        visit(r.first, r.start, r.stride, r.count);
      }
    } else {
      const auto m = static_cast<std::int64_t>(offsets_.size());
      #pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
      for (std::int64_t e = 0; e < m; ++e)
        visit(e, static_cast<std::int64_t>(offsets_[static_cast<std::size_t>(e)]), std::int64_t{1}, std::int64_t{1});
    }
  }

  /// Lists of at least this many values are shared among threads when threads are given.
  static constexpr std::size_t threaded_from = 4096;

  std::size_t size() const { return size_; }
  /// True when the copies go run by run (false: the offset list).
  bool by_runs() const { return offsets_.empty() && size_ > 0; }
  const std::vector<Run>& runs() const { return runs_; }

 private:
  std::size_t size_ = 0;
  std::vector<Run> runs_;               // by_runs(): the runs, in buffer order
  std::vector<std::int32_t> offsets_;   // otherwise: the plain list
};

}  // namespace desync::comm
