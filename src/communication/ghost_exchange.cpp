#include "desync/communication/ghost_exchange.hpp"

#include <algorithm>
#include <string>

#include "desync/communication/request_ledger.hpp"
#include "desync/core/error.hpp"

namespace desync::comm {

namespace {

// Tag of the point-to-point engine. The traffic runs on a private duplicate of the communicator,
// so it cannot match any other layer's messages; the tag is distinct from the halo layer's anyway.
constexpr int ghost_tag = 31001;

enum Phase : int { idle = 0, run = 1, stop = 2, quit = 3 };

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

// Empty when the offsets are a valid partition of [0, total) into `parts` pieces.
std::string check_offsets(const std::vector<int>& offsets, std::size_t parts, std::size_t total, const char* what) {
  if (offsets.size() != parts + 1) return std::string(what) + ": expected one offset per neighbour plus one";
  if (offsets.front() != 0) return std::string(what) + ": first offset must be 0";
  for (std::size_t n = 0; n < parts; ++n)
    if (offsets[n + 1] < offsets[n]) return std::string(what) + ": offsets must not decrease";
  if (static_cast<std::size_t>(offsets.back()) != total)
    return std::string(what) + ": last offset does not match the number of entries";
  return {};
}

}  // namespace

void require_thread_multiple(const char* what) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw InputError(std::string(what) + " needs MPI_THREAD_MULTIPLE, but MPI was initialised with " +
                     thread_level_name(provided));
}

GhostExchange::GhostExchange(MPI_Comm comm, GhostPlanSpec spec, ExchangeEngine engine,
                             Progress progress)
    : spec_(std::move(spec)), engine_(engine), progress_(progress) {
  if (engine_ == ExchangeEngine::blocking) progress_ = Progress::none;

  // Validation, agreed on by every rank so that none goes on into the collective calls alone.
  std::string problem;
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  const auto recv_total = spec_.recv_offsets.empty() ? 0 : static_cast<std::size_t>(spec_.recv_offsets.back());
  problem = check_offsets(spec_.send_offsets, spec_.send_ranks.size(), spec_.send_index.size(), "ghost plan send list");
  if (problem.empty())
    problem = check_offsets(spec_.recv_offsets, spec_.recv_ranks.size(), recv_total, "ghost plan receive list");
  if (problem.empty()) {
    for (int r : spec_.send_ranks)
      if ((r < 0 || r >= nranks) && !(spec_.cartesian && r == MPI_PROC_NULL)) problem = "ghost plan: bad send rank";
    for (int r : spec_.recv_ranks)
      if ((r < 0 || r >= nranks) && !(spec_.cartesian && r == MPI_PROC_NULL)) problem = "ghost plan: bad receive rank";
  }
  if (problem.empty() && spec_.cartesian) {
    int topo = MPI_UNDEFINED;
    MPI_Topo_test(comm, &topo);
    if (topo != MPI_CART) {
      problem = "ghost plan: a Cartesian plan needs a Cartesian communicator";
    } else {
      int ndims = 0;
      MPI_Cartdim_get(comm, &ndims);
      std::vector<int> dims(static_cast<std::size_t>(ndims)), periods(dims.size()), coords(dims.size());
      MPI_Cart_get(comm, ndims, dims.data(), periods.data(), coords.data());
      // MPI libraries disagree on the slot order when both neighbours of a periodic dimension are
      // the same rank; desync's grids are not periodic and periodic ones are refused.
      if (std::any_of(periods.begin(), periods.end(), [](int p) { return p != 0; }))
        problem = "ghost plan: periodic Cartesian communicators are not supported";
      std::vector<int> expect;
      for (int d = 0; d < ndims; ++d) {
        int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
        MPI_Cart_shift(comm, d, 1, &lo, &hi);
        expect.push_back(lo);
        expect.push_back(hi);
      }
      if (spec_.send_ranks != expect || spec_.recv_ranks != expect)
        problem = "ghost plan: a Cartesian plan must list the 2 * ndims neighbours in MPI's order";
    }
  }
  if (problem.empty()) {
    for (std::size_t n = 0; n < spec_.send_ranks.size(); ++n)
      if (spec_.send_ranks[n] == MPI_PROC_NULL && spec_.send_offsets[n + 1] != spec_.send_offsets[n])
        problem = "ghost plan: entries listed for MPI_PROC_NULL";
    for (std::size_t n = 0; n < spec_.recv_ranks.size(); ++n)
      if (spec_.recv_ranks[n] == MPI_PROC_NULL && spec_.recv_offsets[n + 1] != spec_.recv_offsets[n])
        problem = "ghost plan: entries listed for MPI_PROC_NULL";
  }
  if (problem.empty() && progress_ == Progress::thread) {
    try {
      require_thread_multiple("--progress thread (a progress thread calling MPI_Test)");
    } catch (const InputError& e) {
      problem = e.what();
    }
  }
  agree_or_throw(comm, problem.empty(), problem);

  send_.assign(spec_.send_index.size(), 0.0);
  ghost_.assign(recv_total, 0.0);

  std::vector<int> distinct;
  for (int r : spec_.send_ranks)
    if (r != MPI_PROC_NULL) distinct.push_back(r);
  for (int r : spec_.recv_ranks)
    if (r != MPI_PROC_NULL) distinct.push_back(r);
  std::sort(distinct.begin(), distinct.end());
  neighbours_ = static_cast<int>(std::unique(distinct.begin(), distinct.end()) - distinct.begin());

  for (std::size_t n = 0; n < spec_.send_ranks.size(); ++n) {
    send_counts_.push_back(spec_.send_offsets[n + 1] - spec_.send_offsets[n]);
    send_displs_.push_back(spec_.send_offsets[n]);
    if (spec_.send_ranks[n] != MPI_PROC_NULL && send_counts_.back() > 0) p2p_send_.push_back(static_cast<int>(n));
  }
  for (std::size_t n = 0; n < spec_.recv_ranks.size(); ++n) {
    recv_counts_.push_back(spec_.recv_offsets[n + 1] - spec_.recv_offsets[n]);
    recv_displs_.push_back(spec_.recv_offsets[n]);
    if (spec_.recv_ranks[n] != MPI_PROC_NULL && recv_counts_.back() > 0) p2p_recv_.push_back(static_cast<int>(n));
  }

  // No rank exchanges anything (e.g. one rank): the neighbour collective need not be called at all.
  int mine = (p2p_send_.empty() && p2p_recv_.empty()) ? 0 : 1;
  int any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  any_traffic_ = any != 0;

  if (engine_ == ExchangeEngine::neighbor) {
    if (spec_.cartesian) {
      MPI_Comm_dup(comm, &comm_);  // keeps the Cartesian topology
    } else {
      MPI_Dist_graph_create_adjacent(comm, static_cast<int>(spec_.recv_ranks.size()), spec_.recv_ranks.data(),
                                     MPI_UNWEIGHTED, static_cast<int>(spec_.send_ranks.size()),
                                     spec_.send_ranks.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, /*reorder=*/0, &comm_);
    }
    requests_.assign(1, MPI_REQUEST_NULL);
  } else {
    MPI_Comm_dup(comm, &comm_);
    requests_.assign(p2p_send_.size() + p2p_recv_.size(), MPI_REQUEST_NULL);
  }

  if (progress_ == Progress::thread) thread_ = std::thread([this] { thread_main(); });
}

GhostExchange::~GhostExchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) finish();
  if (thread_.joinable()) {
    phase_.store(quit, std::memory_order_release);
    phase_.notify_all();
    thread_.join();
  }
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

void GhostExchange::post() {
  if (engine_ == ExchangeEngine::neighbor) {
    if (!any_traffic_) return;
    MPI_Ineighbor_alltoallv(send_.data(), send_counts_.data(), send_displs_.data(), MPI_DOUBLE, ghost_.data(),
                            recv_counts_.data(), recv_displs_.data(), MPI_DOUBLE, comm_, &requests_[0]);
    RequestLedger::posted(1);
    pending_ = 1;
    stats_.messages_sent += static_cast<long>(p2p_send_.size());
    stats_.messages_received += static_cast<long>(p2p_recv_.size());
    stats_.bytes_sent += static_cast<double>(send_.size() * sizeof(double));
    return;
  }
  // Receives were posted by start() before packing; the sends follow.
  std::size_t q = p2p_recv_.size();
  for (int n : p2p_send_) {
    MPI_Isend(send_.data() + send_displs_[static_cast<std::size_t>(n)], send_counts_[static_cast<std::size_t>(n)],
              MPI_DOUBLE, spec_.send_ranks[static_cast<std::size_t>(n)], ghost_tag, comm_, &requests_[q++]);
  }
  RequestLedger::posted(static_cast<long>(p2p_send_.size()));
  pending_ = static_cast<int>(requests_.size());
  stats_.messages_sent += static_cast<long>(p2p_send_.size());
  stats_.messages_received += static_cast<long>(p2p_recv_.size());
  stats_.bytes_sent += static_cast<double>(send_.size() * sizeof(double));
}

void GhostExchange::start(const double* x) {
  finish();  // a previous exchange still pending is completed first (the buffers are reused)
  ++stats_.exchanges;
  if (engine_ != ExchangeEngine::neighbor) {
    std::size_t q = 0;
    for (int n : p2p_recv_) {
      MPI_Irecv(ghost_.data() + recv_displs_[static_cast<std::size_t>(n)], recv_counts_[static_cast<std::size_t>(n)],
                MPI_DOUBLE, spec_.recv_ranks[static_cast<std::size_t>(n)], ghost_tag, comm_, &requests_[q++]);
    }
    RequestLedger::posted(static_cast<long>(p2p_recv_.size()));
  }
  const std::int32_t* idx = spec_.send_index.data();
  double* out = send_.data();
  const std::size_t m = send_.size();
  for (std::size_t e = 0; e < m; ++e) out[e] = x[idx[e]];
  post();
  if (engine_ == ExchangeEngine::blocking) {
    wait_pending();
  } else if (progress_ == Progress::thread && pending_ > 0) {
    phase_.store(run, std::memory_order_release);
    phase_.notify_all();
  }
}

bool GhostExchange::test_pending() {
  if (pending_ == 0) return true;
  int done = 0;
  MPI_Testall(pending_, requests_.data(), &done, MPI_STATUSES_IGNORE);
  ++stats_.polls;
  if (!done) return false;
  RequestLedger::retired(pending_);
  pending_ = 0;
  return true;
}

void GhostExchange::wait_pending() {
  if (pending_ == 0) return;
  MPI_Waitall(pending_, requests_.data(), MPI_STATUSES_IGNORE);
  RequestLedger::retired(pending_);
  pending_ = 0;
}

bool GhostExchange::poll() {
  if (progress_ == Progress::thread) return false;  // the thread owns the requests
  return test_pending();
}

void GhostExchange::finish() {
  if (progress_ == Progress::thread && phase_.load(std::memory_order_acquire) != idle) {
    phase_.store(stop, std::memory_order_release);
    phase_.notify_all();
    for (int p = phase_.load(std::memory_order_acquire); p != idle; p = phase_.load(std::memory_order_acquire))
      phase_.wait(p, std::memory_order_acquire);
  }
  wait_pending();
}

void GhostExchange::thread_main() {
  for (;;) {
    phase_.wait(idle, std::memory_order_acquire);
    int p = phase_.load(std::memory_order_acquire);
    if (p == quit) return;
    if (p == run) {
      bool done = pending_ == 0;
      while (!done && phase_.load(std::memory_order_acquire) == run) {
        done = test_pending();
        if (!done) std::this_thread::yield();
      }
      // Complete: sleep until the caller asks for the requests back.
      if (done) phase_.wait(run, std::memory_order_acquire);
    }
    // p is stop now: hand the requests back to the caller.
    phase_.store(idle, std::memory_order_release);
    phase_.notify_all();
  }
}

}  // namespace desync::comm
