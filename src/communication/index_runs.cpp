#include "desync/communication/index_runs.hpp"

#include <cstring>

namespace desync::comm {

IndexRuns::IndexRuns(const std::vector<std::int32_t>& offsets, double min_mean_run) : size_(offsets.size()) {
  const std::size_t m = offsets.size();
  for (std::size_t e = 0; e < m;) {
    Run r;
    r.first = static_cast<std::int64_t>(e);
    r.start = offsets[e];
    r.count = 1;
    if (e + 1 < m) {
      r.stride = static_cast<std::int64_t>(offsets[e + 1]) - offsets[e];
      while (e + static_cast<std::size_t>(r.count) < m &&
             static_cast<std::int64_t>(offsets[e + static_cast<std::size_t>(r.count)]) ==
                 r.start + r.count * r.stride)
        ++r.count;
    }
    runs_.push_back(r);
    e += static_cast<std::size_t>(r.count);
  }
  if (m > 0 && static_cast<double>(m) < min_mean_run * static_cast<double>(runs_.size())) {
    runs_.clear();
    offsets_ = offsets;
  }
}

namespace {
// Gather: out[position] = x[offset]; scatter: x[offset] = in[position]; run by run.
template <bool gather>
void copy_runs(const IndexRuns& runs, const double* src, double* dst, int threads) {
  runs.for_each_run(
      [&](std::int64_t first, std::int64_t start, std::int64_t stride, std::int64_t count) {
        const double* s = src + (gather ? start : first);
        double* d = dst + (gather ? first : start);
        if (count == 1) {
          *d = *s;
        } else if (stride == 1) {
          std::memcpy(d, s, static_cast<std::size_t>(count) * sizeof(double));
        } else {
          const std::int64_t s_step = gather ? stride : 1, d_step = gather ? 1 : stride;
          for (std::int64_t e = 0; e < count; ++e) d[e * d_step] = s[e * s_step];
        }
      },
      threads);
}
}  // namespace

void IndexRuns::gather(const double* x, double* out, int threads) const { copy_runs<true>(*this, x, out, threads); }

void IndexRuns::scatter(const double* in, double* x, int threads) const { copy_runs<false>(*this, in, x, threads); }

}  // namespace desync::comm
