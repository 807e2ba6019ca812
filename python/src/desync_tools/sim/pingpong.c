/* desync-sim calibrate-host: half the round trip of ping-pongs between ranks 0 and 1, the least over
   several trials: 8 B and 1 MiB (latency and bandwidth), and 1 KiB .. 256 KiB by factors of 4 (the
   curve between them). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double pingpong(int rank, char* buf, int bytes, int reps) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < reps; i++) {
    if (rank == 0) {
      MPI_Send(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  double t = (MPI_Wtime() - t0) / (2.0 * reps);
  MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return t;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int trials = argc > 1 ? atoi(argv[1]) : 5;
  const int big = 1 << 20;
  char* buf = calloc(big, 1);
  pingpong(rank, buf, 8, 200);
  pingpong(rank, buf, big, 5);
  double small_t = 1e30, big_t = 1e30;
  for (int i = 0; i < trials; i++) {
    double s = pingpong(rank, buf, 8, 2000), b = pingpong(rank, buf, big, 40);
    if (s < small_t) small_t = s;
    if (b < big_t) big_t = b;
  }
  if (rank == 0) printf("time_8B_s %.9e\ntime_1MiB_s %.9e\n", small_t, big_t);
  for (int bytes = 1024; bytes < big; bytes *= 4) {
    double least = 1e30;
    for (int i = 0; i < trials; i++) {
      double t = pingpong(rank, buf, bytes, bytes < 65536 ? 1000 : 40);
      if (t < least) least = t;
    }
    if (rank == 0) printf("time_%dB_s %.9e\n", bytes, least);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
