#include "desync/run/stats.hpp"
#include "desync/core/gather.hpp"

namespace desync::run {

namespace {
// Fixed layout of one rank's stats as doubles for a single MPI_Gather.
constexpr int scalars = 31;
constexpr int width = scalars + comm::DelayStats::bins;

std::vector<double> pack(const RankStats& s) {
  std::vector<double> v;
  v.reserve(width);
  auto put = [&](double x) { v.push_back(x); };
  put(s.rank);
  for (int a = 0; a < 3; ++a) put(s.coords[a]);
  for (int a = 0; a < 3; ++a) put(s.local[a]);
  put(s.neighbours);
  put(static_cast<double>(s.iterations));
  put(static_cast<double>(s.polish_iterations));
  put(static_cast<double>(s.reductions));
  put(s.threads);
  put(static_cast<double>(s.thread_iterations_min));
  put(static_cast<double>(s.thread_iterations_max));
  put(s.prefetch ? 1.0 : 0.0);
  put(s.time.compute); put(s.time.halo); put(s.time.reduction); put(s.time.noise);
  put(s.time.polish); put(s.time.finish); put(s.time.total);
  put(static_cast<double>(s.halo.messages_sent));
  put(static_cast<double>(s.halo.messages_received));
  put(static_cast<double>(s.halo.messages_discarded));
  put(static_cast<double>(s.halo.sends_skipped));
  put(static_cast<double>(s.halo.delay.count));
  put(s.halo.delay.sum);
  put(static_cast<double>(s.halo.delay.max));
  put(static_cast<double>(s.halo.delay.min));
  put(static_cast<double>(s.halo.delay.ahead));
  for (long h : s.halo.delay.histogram) put(static_cast<double>(h));
  return v;
}

RankStats unpack(const double* v) {
  RankStats s;
  int p = 0;
  auto get = [&] { return v[p++]; };
  s.rank = static_cast<int>(get());
  for (int a = 0; a < 3; ++a) s.coords[a] = static_cast<int>(get());
  for (int a = 0; a < 3; ++a) s.local[a] = static_cast<int>(get());
  s.neighbours = static_cast<int>(get());
  s.iterations = static_cast<std::int64_t>(get());
  s.polish_iterations = static_cast<std::int64_t>(get());
  s.reductions = static_cast<long>(get());
  s.threads = static_cast<int>(get());
  s.thread_iterations_min = static_cast<std::int64_t>(get());
  s.thread_iterations_max = static_cast<std::int64_t>(get());
  s.prefetch = get() != 0.0;
  s.time.compute = get(); s.time.halo = get(); s.time.reduction = get(); s.time.noise = get();
  s.time.polish = get(); s.time.finish = get(); s.time.total = get();
  s.halo.messages_sent = static_cast<long>(get());
  s.halo.messages_received = static_cast<long>(get());
  s.halo.messages_discarded = static_cast<long>(get());
  s.halo.sends_skipped = static_cast<long>(get());
  s.halo.delay.count = static_cast<long>(get());
  s.halo.delay.sum = get();
  s.halo.delay.max = static_cast<std::int64_t>(get());
  s.halo.delay.min = static_cast<std::int64_t>(get());
  s.halo.delay.ahead = static_cast<long>(get());
  for (auto& h : s.halo.delay.histogram) h = static_cast<long>(get());
  return s;
}
}  // namespace

std::vector<RankStats> gather_rank_stats(MPI_Comm comm, const RankStats& mine) {
  const std::vector<double> packed = pack(mine);
  return core::gather_packed(comm, packed, unpack);
}

}  // namespace desync::run
