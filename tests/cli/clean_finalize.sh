#!/usr/bin/env bash
# Repeated asynchronous runs must end clean: exit 0, and nothing from the MPI library's own
# end-of-run checks on stderr (MPICH over UCX warns about requests "not returned to mpool";
# Open MPI is asked to list leaked handles with mpi_show_handle_leaks).
#   clean_finalize.sh FLAVOUR -- mpiexec ... desync
set -u
flavour=$1; shift; [ "$1" = "--" ] && shift
extra=()
[ "$flavour" = openmpi ] && extra=(--mca mpi_show_handle_leaks 1)
launch=("$@")
desync=${launch[-1]}; unset 'launch[-1]'
status=0
for mode in async racy; do
  for reduction in iallreduce tree; do
    for rep in 1 2; do
      err=$(timeout 60 "${launch[@]}" "${extra[@]}" "$desync" jacobi --global 16x12x10 --mode "$mode" \
              --reduction "$reduction" --tol 1e-3 --polish --quiet 2>&1 >/dev/null)
      rc=$?
      if [ $rc -ne 0 ] || echo "$err" | grep -qiE "warn|leak|not returned|pending|not freed"; then
        echo "FAIL: $mode $reduction run $rep: exit $rc"; echo "$err"; status=1
      fi
    done
  done
done
[ $status -eq 0 ] && echo "clean: 8 asynchronous runs, exit 0, no end-of-run complaints"
exit $status
