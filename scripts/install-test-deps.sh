#!/usr/bin/env bash
# Installs the Debian packages that only some tests and studies need, by group, only those missing:
#   scripts/install-test-deps.sh transfer      xrootd server and client (fabricbench transfer)
# `make run` never needs these; the tests that do call this script when a tool is missing.
set -euo pipefail

packages=()
for group in "$@"; do
  case "$group" in
    transfer) packages+=(xrootd-server xrootd-client) ;;
    *) echo "fabricbench: unknown package group '$group' (groups: transfer)" >&2; exit 2 ;;
  esac
done
[ ${#packages[@]} -gt 0 ] || { echo "usage: $0 GROUP... (groups: transfer)" >&2; exit 2; }
exec bash "$(dirname "$0")/install-system-deps.sh" "${packages[@]}"
