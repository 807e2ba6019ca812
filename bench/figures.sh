#!/usr/bin/env bash
# The figures of the benchmark experiment files (docs/benchmarks.md, *Running them*): runs the experiments in
# bench/experiments/ with desync-run, collects them, prints their summaries (ratios to the reference
# measured in the same experiment) and draws the figures with desync-plot into docs/figures/.
#
#   make bench-figures                  (builds build/bench, installs desync-plot/desync-run in build/venv)
#   bash bench/figures.sh BUILD_DIR     (desync-run and desync-plot on PATH)
#
# Results go to BUILD_DIR/results/<experiment>/ (restartable: finished runs are kept; delete the
# folder to measure again), with a report.html each. Environment: EXPERIMENTS, a subset of the
# experiments (default: all three: time_to_solution transport_rate omp).
set -euo pipefail
if [[ $# -ne 1 || ! -x "$1/desync" ]]; then
  echo "usage: bash bench/figures.sh BUILD_DIR   (BUILD_DIR/desync must exist)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
figures="$here/../docs/figures"
mkdir -p "$figures"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0

run() {  # run NAME [collect options...]
  local name=$1; shift
  local res="$build/results/$name"
  echo "== $name: desync-run run bench/experiments/$name.toml -o $res --desync $build/desync"
  desync-run run "$here/experiments/$name.toml" -o "$res" --desync "$build/desync" || status=1
  desync-run collect "$res" --summary "$@" | tee "$res/summary.txt"
  desync-plot report "$res" -o "$res/report.html"
}

# the record of the first repetition of one combination
record() { echo "$build/results/$1/runs/$2,rep=1/record.json"; }

for name in ${EXPERIMENTS:-time_to_solution transport_rate omp}; do
  case $name in
    time_to_solution)
      run time_to_solution --baseline mode=sync
      r=$build/results/time_to_solution
      desync-plot sweep "$r/results.csv" --x slow-factor --y wall_time --by mode \
        --title "Jacobi, 2 ranks, 50^3 per rank: time to solution" -o "$figures/time_to_solution.png"
      desync-plot convergence "$(record time_to_solution ranks=2,slow-factor=2,mode=sync)" \
        "$(record time_to_solution ranks=2,slow-factor=2,mode=async)" \
        "$(record time_to_solution ranks=2,slow-factor=2,mode=racy)" \
        --title "Jacobi, 2 ranks, rank 1 at half speed" -o "$figures/time_to_solution_convergence.png"
      desync-plot breakdown "$(record time_to_solution ranks=2,slow-factor=2,mode=sync)" \
        "$(record time_to_solution ranks=2,slow-factor=2,mode=async)" \
        "$(record time_to_solution ranks=2,slow-factor=2,mode=racy)" --per run \
        --title "time split, rank 1 at half speed (means over ranks)" -o "$figures/time_to_solution_split.png"
      ;;
    transport_rate)
      run transport_rate --metric iteration_rate --baseline transport=p2p
      desync-plot sweep "$build/results/transport_rate/results.csv" --x transport --y iteration_rate \
        --title "async Jacobi, 2 ranks: iteration rate per transport" -o "$figures/transport_rate.png"
      ;;
    omp)
      run omp --baseline mode=sync
      desync-plot sweep "$build/results/omp/results.csv" --x mode --y wall_time --by check-every \
        --title "OpenMP Jacobi, 1 rank x 2 threads: time to solution" -o "$figures/omp.png"
      ;;
    *) echo "figures.sh: unknown experiment '$name'" >&2; exit 2 ;;
  esac
  echo
done
exit $status
