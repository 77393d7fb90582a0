#!/usr/bin/env bash
# Installs the system packages fabricbench needs on Debian/Ubuntu, only those missing.
# MPI (Open MPI), a C and Fortran compiler, CMake and Ninja to build the native parts;
# HPCC, iperf3 and NetPIPE for the HPCC driver and the importers' live tests; iproute2 for the lab;
# PostgreSQL for the store tests on a server; Chromium for the report's browser test.
set -euo pipefail

packages=(openmpi-bin libopenmpi-dev gcc gfortran cmake ninja-build python3-venv hpcc iperf3 iproute2 util-linux procps postgresql)
[ "${FABRICBENCH_NO_BROWSER:-0}" = 1 ] || packages+=(chromium)
# MPI=mpich (make ... MPI=mpich): MPICH next to Open MPI, selected by its own names, not the alternatives.
[ "${MPI:-}" = mpich ] && packages+=(mpich libmpich-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "fabricbench: missing system packages (${missing[*]}) and no apt-get here;" >&2
  echo "install an MPI with mpicc and mpirun (or 'module load' one), CMake and a C compiler, then run make again." >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "fabricbench: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
