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

void IndexRuns::gather(const double* x, double* out, int threads) const {
  const int nt = threads > 1 && size_ >= threaded_from ? threads : 1;
  if (!by_runs()) {
    const std::int32_t* idx = offsets_.data();
    const auto m = static_cast<std::int64_t>(offsets_.size());
    #pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (std::int64_t e = 0; e < m; ++e) out[e] = x[idx[e]];
    return;
  }
  const Run* runs = runs_.data();
  const auto n = static_cast<std::int64_t>(runs_.size());
  #pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (std::int64_t q = 0; q < n; ++q) {
    const Run& r = runs[q];
    double* o = out + r.first;
    const double* s = x + r.start;
    if (r.stride == 1) {
      std::memcpy(o, s, static_cast<std::size_t>(r.count) * sizeof(double));
    } else {
      for (std::int64_t e = 0; e < r.count; ++e) o[e] = s[e * r.stride];
    }
  }
}

void IndexRuns::scatter(const double* in, double* x, int threads) const {
  const int nt = threads > 1 && size_ >= threaded_from ? threads : 1;
  if (!by_runs()) {
    const std::int32_t* idx = offsets_.data();
    const auto m = static_cast<std::int64_t>(offsets_.size());
    #pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (std::int64_t e = 0; e < m; ++e) x[idx[e]] = in[e];
    return;
  }
  const Run* runs = runs_.data();
  const auto n = static_cast<std::int64_t>(runs_.size());
  #pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (std::int64_t q = 0; q < n; ++q) {
    const Run& r = runs[q];
    const double* i = in + r.first;
    double* d = x + r.start;
    if (r.stride == 1) {
      std::memcpy(d, i, static_cast<std::size_t>(r.count) * sizeof(double));
    } else {
      for (std::int64_t e = 0; e < r.count; ++e) d[e * r.stride] = i[e];
    }
  }
}

}  // namespace desync::comm
