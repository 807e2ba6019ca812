// desync_bench_bounded_loop: what not waiting saves at 2 ranks, in plain MPI (docs/benchmarks.md,
// "What not waiting saves in plain MPI").
//
// The communication pattern of the PDE stepper at 2 ranks (2x1x1), without desync and without
// the halo approximation: each step a sweep over a 16 MiB array (the update), then two
// 160 KiB messages each way (the two x-faces, packed with a stride), then the receives:
//   sync          (receives 0): one receive posted per face; MPI_Wait for this step's message;
//   not waiting   (receives R): R receives posted per face; MPI_Test (twice when the first finds
//                 nothing, as desync's p2p channels do) takes in what has arrived; MPI_Wait only
//                 when a face is more than L = 10 steps behind (Aditya et al. (2019), Algorithm 2).
// Each message taken in is read once (the scatter's reads). Each receive is posted into the next of
// BUFFERS buffers per face in turn (default R, at least R): with 1 receive and 10 buffers a message
// lands in memory last touched 10 steps before, as with 10 receives, but one receive is posted.
// Rank 0 prints the slower rank's time.
//
//   mpirun -np 2 --bind-to core desync_bench_bounded_loop RECEIVES STEPS [BUFFERS]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace {
constexpr int faces = 2, max_lag = 10, face_values = 20480, stride = 48;

double sum(const double* values) {
  double total = 0;
  for (int i = 0; i < face_values; ++i) total += values[i];
  return total;
}

bool parse(const char* text, long low, long high, long& out) {
  char* end = nullptr;
  out = std::strtol(text, &end, 10);
  return end && *end == '\0' && end != text && out >= low && out <= high;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long receives = 0, steps = 0, buffers = 0;
  const bool parsed = (argc == 3 || argc == 4) && parse(argv[1], 0, 2 * max_lag + 1, receives) &&
                      parse(argv[2], 1, 1000000, steps) &&
                      (argc == 3 || parse(argv[3], std::max(receives, 1L), 1000, buffers));
  if (!parsed || size != 2) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: mpirun -np 2 desync_bench_bounded_loop RECEIVES STEPS [BUFFERS]\n"
                   "  RECEIVES 0 (synchronous) or 1..%d posted per face; STEPS 1..1000000;\n"
                   "  BUFFERS RECEIVES..1000 (default RECEIVES, 1 when synchronous); exactly 2 ranks\n",
                   2 * max_lag + 1);
    MPI_Finalize();
    return 2;
  }
  const bool sync = receives == 0;
  const int posted = sync ? 1 : static_cast<int>(receives);
  const int pool = buffers > 0 ? static_cast<int>(buffers) : posted;
  const int peer = 1 - rank;

  // Every value stays 1 (the sweep averages ones), so each message value is 1 + the sender's rank.
  std::vector<double> field(std::size_t{1} << 20, 1.0), next(field.size(), 1.0);
  std::vector<std::vector<double>> send(faces * max_lag, std::vector<double>(face_values, rank));
  std::vector<MPI_Request> send_req(send.size(), MPI_REQUEST_NULL);
  std::vector<std::vector<double>> landing(static_cast<std::size_t>(faces * pool), std::vector<double>(face_values));
  std::vector<long> posts(faces, 0);  // receives posted per face: the next landing buffer
  std::vector<double*> recv(static_cast<std::size_t>(faces * posted), nullptr);
  std::vector<MPI_Request> recv_req(recv.size(), MPI_REQUEST_NULL);
  std::vector<long> taken(faces, 0);
  std::vector<int> oldest(faces, 0);  // receives complete in posting order: the slot to test next
  auto post = [&](int f, int s) {
    const auto k = static_cast<std::size_t>(f * posted + s);
    auto& count = posts[static_cast<std::size_t>(f)];
    recv[k] = landing[static_cast<std::size_t>(f * pool + count++ % pool)].data();
    MPI_Irecv(recv[k], face_values, MPI_DOUBLE, peer, f, MPI_COMM_WORLD, &recv_req[k]);
  };
  for (int f = 0; f < faces; ++f)
    for (int s = 0; s < posted; ++s) post(f, s);

  double checksum = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long n = 1; n <= steps; ++n) {
    for (std::size_t i = 1; i + 1 < field.size(); ++i) next[i] = 0.25 * (field[i - 1] + 2 * field[i] + field[i + 1]);
    std::swap(field, next);
    for (int f = 0; f < faces; ++f) {
      const auto k = static_cast<std::size_t>(f * max_lag + n % max_lag);
      if (send_req[k] != MPI_REQUEST_NULL) MPI_Wait(&send_req[k], MPI_STATUS_IGNORE);
      for (int i = 0; i < face_values; ++i) send[k][static_cast<std::size_t>(i)] = field[static_cast<std::size_t>(i) * stride] + rank;
      MPI_Isend(send[k].data(), face_values, MPI_DOUBLE, peer, f, MPI_COMM_WORLD, &send_req[k]);
    }
    for (int f = 0; f < faces; ++f) {
      for (;;) {
        const int s = oldest[static_cast<std::size_t>(f)];
        auto& req = recv_req[static_cast<std::size_t>(f * posted + s)];
        int done = 0;
        if (sync ? taken[static_cast<std::size_t>(f)] < n : taken[static_cast<std::size_t>(f)] < n - max_lag) {
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          done = 1;
        } else if (!sync) {
          MPI_Test(&req, &done, MPI_STATUS_IGNORE);
          if (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        }
        if (!done) break;
        ++taken[static_cast<std::size_t>(f)];
        checksum += sum(recv[static_cast<std::size_t>(f * posted + s)]);
        post(f, s);
        oldest[static_cast<std::size_t>(f)] = (s + 1) % posted;
      }
    }
  }
  const double seconds = MPI_Wtime() - start;

  // Drain: every message the peer sent is received, the receives left over are cancelled.
  MPI_Waitall(static_cast<int>(send_req.size()), send_req.data(), MPI_STATUSES_IGNORE);
  for (int f = 0; f < faces; ++f) {
    while (taken[static_cast<std::size_t>(f)] < steps) {
      const int s = oldest[static_cast<std::size_t>(f)];
      MPI_Wait(&recv_req[static_cast<std::size_t>(f * posted + s)], MPI_STATUS_IGNORE);
      ++taken[static_cast<std::size_t>(f)];
      checksum += sum(recv[static_cast<std::size_t>(f * posted + s)]);
      post(f, s);
      oldest[static_cast<std::size_t>(f)] = (s + 1) % posted;
    }
  }
  for (auto& req : recv_req) {
    MPI_Cancel(&req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  }
  double slowest = 0;
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  // The checksum says every value of every message arrived.
  const double expected = static_cast<double>(steps) * faces * face_values * (1 + peer);
  const bool ok = checksum == expected;
  if (rank == 0)
    std::printf("%s receives %ld buffers %d steps %ld seconds %.6f us_per_step %.2f data %s\n", sync ? "sync" : "not-waiting",
                receives, pool, steps, slowest, slowest / static_cast<double>(steps) * 1e6, ok ? "ok" : "WRONG");
  int all_ok = ok ? 1 : 0, both = 0;
  MPI_Allreduce(&all_ok, &both, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Finalize();
  return both ? 0 : 1;
}
