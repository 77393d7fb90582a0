#!/usr/bin/env bash
# Builds the engine and the profiler against one MPI's compiler wrapper, chosen by explicit path
# (the system's alternatives stay as they are), into PREFIX/native/FAMILY, where fabricbench
# finds them under FABRICBENCH_MPI=FAMILY.
#   build-native.sh PREFIX mpich|openmpi        that MPI's wrapper (mpicc.mpich, mpicc.openmpi)
#   build-native.sh PREFIX FAMILY /path/to/mpicc  any wrapper of that family (a module, a private install)
set -euo pipefail
prefix=$1 family=$2 mpicc=${3:-}
case "$family" in
  mpich) names="mpicc.mpich" ;;
  openmpi) names="mpicc.openmpi" ;;
  *) echo "build-native: MPI must be mpich or openmpi, not '$family'" >&2; exit 2 ;;
esac
if [ -z "$mpicc" ]; then
  for n in $names; do mpicc=$(command -v "$n" || true); [ -n "$mpicc" ] && break; done
fi
if [ -z "$mpicc" ] || [ ! -x "$mpicc" ]; then
  echo "build-native: no compiler wrapper for $family (${mpicc:-$names}); Debian: apt-get install" \
       "$( [ "$family" = mpich ] && echo mpich libmpich-dev || echo openmpi-bin libopenmpi-dev ), or give MPICC=/path/to/mpicc" >&2
  exit 1
fi
build="build/native-$family"
cmake -S . -B "$build" -G Ninja -DMPI_C_COMPILER="$mpicc" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" >/dev/null
cmake --install "$build" --prefix "$prefix/native/$family" >/dev/null
built=$(sed -n 's/.*"flavour": "\([a-z]*\)".*/\1/p' "$prefix/native/$family/share/mpi.json")
if [ "$built" != "$family" ]; then
  echo "build-native: $mpicc is $built, not $family" >&2
  rm -rf "$prefix/native/$family"
  exit 1
fi
echo "fabricbench native parts for $family ($mpicc): $prefix/native/$family"
