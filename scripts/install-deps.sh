#!/usr/bin/env bash
# Installs what desync needs from Debian's packages, only if something is missing.
# Needs root (or sudo) when it has to install.
#   --petsc  also PETSc (petsc-dev, built with Open MPI) and pkg-config, for the optional comparison
#            with PETSc (make bench-petsc, docs/benchmarks.md); not needed to build or test desync.
set -euo pipefail
packages=(build-essential cmake libopenmpi-dev openmpi-bin libmpich-dev mpich
          libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libsuitesparse-dev python3 python3-venv
          libmetis-dev libptscotch-dev  # graph partitioners for --partition metis|ptscotch
          libmumps-dev  # the coarse matrix of two-level Schwarz on --coarse-ranks k ranks (Open MPI builds)
          libsimgrid-dev)  # SimGrid's SMPI: the simulated-cluster build (make build-sim, docs/simulation.md)
# Optional extras: `--petsc` (make bench-petsc): PETSc and pkg-config for the side-by-side benchmark;
# `tsan` (make tsan): clang, LLVM's OpenMP runtime with its ThreadSanitizer support (libarcher, in
# libomp-14-dev) and clang's sanitizer runtimes.
for arg in "$@"; do
  case "$arg" in
    --petsc) packages+=(petsc-dev pkg-config) ;;
    tsan|--tsan) packages+=(clang-14 libomp-14-dev libclang-rt-14-dev) ;;
    *) echo "usage: bash scripts/install-deps.sh [--petsc] [tsan]" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "desync: installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "desync: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
