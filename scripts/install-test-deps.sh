#!/usr/bin/env bash
# Installs the Debian packages some tests need, by group, only those missing; `make test` runs it.
#   fabric     ibsim-utils (the simulated InfiniBand fabric), opensm, infiniband-diags
#   transfer   xrootd-server, xrootd-client (fabricbench transfer)
#   netpipe    netpipe-tcp, netpipe-openmpi (the NetPIPE importer's live tests)
#   apps       lammps, quantum-espresso, openfoam (the application catalogue's real runs and
#              `fabricbench study apps`; about 130 MB to download, 1-2 minutes to install)
#   slurm      slurmctld, slurmd, slurm-client, munge (lab up --slurm and its tests)
#   mpich      mpich, libmpich-dev (the MPI-dependent tests run a second time under MPICH)
# `make run` does not need any of them.
set -euo pipefail

declare -A groups=(
  [fabric]="ibsim-utils opensm infiniband-diags"
  [transfer]="xrootd-server xrootd-client"
  [netpipe]="netpipe-tcp netpipe-openmpi"
  [apps]="lammps quantum-espresso openfoam"
  [slurm]="slurmctld slurmd slurm-client munge"
  [mpich]="mpich libmpich-dev"
)
[ $# -gt 0 ] || set -- "${!groups[@]}"

missing=()
for group in "$@"; do
  [ -n "${groups[$group]:-}" ] || { echo "install-test-deps: unknown group '$group' (known: ${!groups[*]})" >&2; exit 2; }
  for p in ${groups[$group]}; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "fabricbench: the tests of $* need ${missing[*]} and there is no apt-get here; they will be skipped" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "fabricbench: need root (or sudo) to install ${missing[*]}; the tests that use them will be skipped" >&2
    exit 0
  fi
  SUDO=sudo
fi
echo "installing test packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Others may be installing at the same time: wait for dpkg's lock instead of failing.
# Installing MPICH next to Open MPI leaves the alternatives (mpicc, mpirun) as they were:
# Debian gives Open MPI the higher priority, and fabricbench selects MPICH by its own names.
$SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The tests start their own OpenSM on a simulated fabric; the package's service must not manage a real
# fabric on a machine that has one just because the tests were run there.
if [[ " ${missing[*]} " == *" opensm "* ]] && command -v systemctl >/dev/null; then
  $SUDO systemctl disable --now opensm.service >/dev/null 2>&1 || true
fi
# Likewise Slurm and munge: `lab up --slurm` starts its own, with its own key and configuration.
for svc in slurmctld slurmd munge; do
  if [[ " ${missing[*]} " == *" $svc "* ]] && command -v systemctl >/dev/null; then
    $SUDO systemctl disable --now "$svc.service" >/dev/null 2>&1 || true
  fi
done
