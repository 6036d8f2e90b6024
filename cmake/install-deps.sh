#!/usr/bin/env bash
# Installs the Debian packages halox needs, only when one is missing (apt-get update first).
# Used by examples/run-demo.sh and tests/run-tests.sh; safe to run again.
set -euo pipefail
packages=(g++ gfortran cmake ninja-build libboost-mpi-dev libopenmpi-dev openmpi-bin libfmt-dev catch2 libcli11-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "halox: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
