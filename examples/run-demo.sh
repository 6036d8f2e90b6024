#!/usr/bin/env bash
# Quick start, part 1: builds the heat3d mini-app and runs it on 4 MPI ranks. Its last line
# starts with "verified" when the distributed result matches a serial run.
#   examples/run-demo.sh [heat3d options, e.g. --n 64 --steps 100]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/cmake/install-deps.sh"
source "$root/cmake/mpi-env.sh"
build="$root/build-demo"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALOX_ENABLE_CUDA=OFF \
  -DHALOX_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target heat3d
mpirun -np 4 "$build/examples/heat3d" "$@"
