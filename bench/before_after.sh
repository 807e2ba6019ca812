#!/usr/bin/env bash
# Back-to-back comparison of two desync builds (e.g. before and after a change) on the benchmarks
# whose figures a change must not regress: the sweep kernel against STREAM, async/sync time to
# solution with a slow rank, the iteration rate over each channel transport, CG against PETSc, and
# Schwarz's iterations and time, sync and async, with rank 1 slowed twofold.
# The two builds run alternately, round by round, so that both see the same state of the machine.
#
#   bash bench/before_after.sh OLD_TREE NEW_TREE [ROUNDS]
#
# OLD_TREE and NEW_TREE are source trees (each with its own bench/ scripts, which read its own JSON
# schema) with a benchmark build in TREE/build/bench (cmake -DDESYNC_NATIVE=ON
# -DDESYNC_BUILD_TESTS=OFF; petsc_poisson3d is taken from NEW_TREE). Results: NEW_TREE/build/bench/before-after/.
set -euo pipefail
if [[ $# -lt 2 ]]; then echo "usage: bash bench/before_after.sh OLD_TREE NEW_TREE [ROUNDS]" >&2; exit 2; fi
old=$(cd "$1" && pwd); new=$(cd "$2" && pwd); rounds=${3:-2}
for t in "$old" "$new"; do
  for exe in desync desync_bench_sweep; do
    [[ -x "$t/build/bench/$exe" ]] || { echo "before_after.sh: $t/build/bench/$exe not found" >&2; exit 2; }
  done
done
petsc="$new/build/bench/petsc_poisson3d"
out="$new/build/bench/before-after"; mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=${MPIRUN:-/usr/bin/mpirun.openmpi}
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/load.txt"
for r in $(seq 1 "$rounds"); do
  for side in old new; do
    t=${!side}; b="$t/build/bench"; tag="${side}_r$r"
    for np in 1 2; do
      "$MPIRUN" -np $np "$b/desync_bench_sweep" --reps 20 --json "$out/sweep_np${np}_$tag.json" > "$out/sweep_np${np}_$tag.txt"
      echo "$tag sweep np$np: $(grep '^SUMMARY' "$out/sweep_np${np}_$tag.txt")"
    done
    python3 "$t/bench/time_to_solution.py" --desync "$b/desync" --mpirun "$MPIRUN" --reps 3 --modes sync,async \
        --variants default --json "$out/tts_$tag.json" > "$out/tts_$tag.txt" 2>/dev/null
    echo "$tag time to solution:"; grep -iE "slow|ratio|async|sync" "$out/tts_$tag.txt" | tail -8
    python3 "$t/bench/transport_rate.py" --desync "$b/desync" --mpirun "$MPIRUN" --reps 3 \
        --json "$out/transport_$tag.json" > "$out/transport_$tag.txt" 2>/dev/null
    echo "$tag transport rates:"; tail -10 "$out/transport_$tag.txt"
    if [[ -x "$petsc" ]]; then
      python3 "$t/bench/cg_compare.py" --desync "$b/desync" --petsc "$petsc" --mpirun "$MPIRUN" --reps 3 \
          --methods cg,pipecg --petsc-methods cg --pcs none --json "$out/cg_$tag.json" > "$out/cg_$tag.txt" 2>/dev/null
      echo "$tag CG vs PETSc:"; grep -E "^\s+(petsc|desync)" "$out/cg_$tag.txt"
    fi
    for mode in sync async; do
      for rep in 1 2 3; do
        "$MPIRUN" -np 2 "$b/desync" schwarz --global 128 --mode $mode --slow-rank 1 --slow-factor 2 --quiet \
            --json "$out/schwarz_${mode}_${tag}_$rep.json" || true
      done
      echo "$tag schwarz $mode: $(python3 -c '
import json, statistics, sys
runs = [json.load(open(f)) for f in sys.argv[1:]]
print("iterations (max over ranks)", [int(r["iterations"]["max"]) for r in runs],
      "median time %.3f s" % statistics.median(r["wall_time"] for r in runs))' "$out"/schwarz_${mode}_${tag}_*.json)"
    done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
