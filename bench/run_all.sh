#!/usr/bin/env bash
# Runs the desync benchmarks (docs/benchmarks.md) and writes their results to BUILD_DIR/bench-results/.
#
#   bash bench/run_all.sh BUILD_DIR          (make bench: BUILD_DIR = build/bench)
#
# BUILD_DIR must hold the desync and desync_bench_sweep executables (configure with
# -DDESYNC_NATIVE=ON -DDESYNC_BUILD_TESTS=OFF for the figures in the docs). Environment overrides:
#   MPIRUN      launcher (default: MPIEXEC_EXECUTABLE from BUILD_DIR/CMakeCache.txt, else mpirun)
#   SWEEP_REPS  interleaved rounds of the kernels in desync_bench_sweep (default 40)
#   SWEEP_ARGS  further desync_bench_sweep arguments, e.g. "--local 250"
#   COMM_ARGS   further `desync bench comm` arguments, e.g. "--max-doubles 65536"
#   TTS_REPS    repetitions of each time-to-solution configuration (default 5)
#   TTS_ARGS    further time_to_solution.py arguments, e.g. "--variants default"
set -euo pipefail

if [[ $# -ne 1 || "$1" == -h || "$1" == --help ]]; then
  echo "usage: bash bench/run_all.sh BUILD_DIR" >&2
  exit 2
fi
if [[ ! -d "$1" ]]; then
  echo "run_all.sh: build directory '$1' does not exist; configure and build it first (see docs/benchmarks.md)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$build/bench-results"
mkdir -p "$out"

for exe in desync desync_bench_sweep; do
  if [[ ! -x "$build/$exe" ]]; then
    echo "run_all.sh: $build/$exe not found; build it first (cmake --build $1)" >&2
    exit 2
  fi
done

if [[ -z "${MPIRUN:-}" ]]; then
  MPIRUN=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null | head -n1)
  MPIRUN=${MPIRUN:-mpirun}
fi
# Open MPI refuses to run as root without these; harmless for MPICH and for other users.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

{
  echo "date      $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host      $(uname -n) $(uname -r)"
  echo "cpu       $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1), $(nproc) CPUs"
  echo "os        $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "mpi       $("$MPIRUN" --version 2>&1 | head -n1)"
  echo "launcher  $MPIRUN"
  echo "git       $(git -C "$here/.." describe --always --dirty 2>/dev/null || echo unknown)"
  echo "load      $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min, at start)"
} | tee "$out/machine.txt"
echo

status=0
for np in 1 2; do
  echo "== sweep kernel vs STREAM, $np rank(s): $MPIRUN -np $np $build/desync_bench_sweep"
  # shellcheck disable=SC2086
  "$MPIRUN" -np "$np" "$build/desync_bench_sweep" --reps "${SWEEP_REPS:-40}" ${SWEEP_ARGS:-} \
      --json "$out/sweep_np$np.json" | tee "$out/sweep_np$np.txt" || status=1
  echo
done

echo "== communication, 2 ranks: $MPIRUN -np 2 $build/desync bench comm"
# shellcheck disable=SC2086
"$MPIRUN" -np 2 "$build/desync" bench comm ${COMM_ARGS:-} --json "$out/comm.json" | tee "$out/comm.txt" || status=1
echo

echo "== time to solution (progress in $out/time_to_solution.log)"
# shellcheck disable=SC2086
python3 "$here/time_to_solution.py" --desync "$build/desync" --mpirun "$MPIRUN" --reps "${TTS_REPS:-5}" \
    ${TTS_ARGS:-} --json "$out/time_to_solution.json" 2>"$out/time_to_solution.log" \
    | tee "$out/time_to_solution.txt" || status=1
echo

echo "== channel transports, async Jacobi iteration rate"
# shellcheck disable=SC2086
python3 "$here/transport_rate.py" --desync "$build/desync" --mpirun "$MPIRUN" --reps "${TR_REPS:-5}" \
    --json "$out/transport_rate.json" | tee "$out/transport_rate.txt" || status=1
echo

echo "== OpenMP Jacobi, 1 rank x 2 threads"
python3 "$here/omp_time_to_solution.py" --desync "$build/desync" --mpirun "$MPIRUN --bind-to none" \
    --reps "${OMP_REPS:-5}" --json "$out/omp.json" | tee "$out/omp.txt" || status=1
echo

echo "load      $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min, at end)" | tee -a "$out/machine.txt"
echo "== summary"
grep -h '^SUMMARY' "$out"/sweep_np*.txt "$out"/comm.txt || true
echo "results in $out/"
exit $status
