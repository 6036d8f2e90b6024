#!/usr/bin/env bash
# Quick start, part 2: builds and runs the whole test suite.
#  1. CPU build (warnings are errors), every ctest test at every rank count, the Python package's
#     pytest suites (label python, 1-4 ranks, Debian's /usr/bin/python3) included;
#  2. AddressSanitizer + UndefinedBehaviorSanitizer build of the unit tests and a few MPI tests;
#  3. where nvcc exists, a CUDA build (so CUDA code always compiles) running its unit and GPU
#     tests; GPU tests skip (exit 77) on machines without a GPU.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The Python bindings and their tests: Debian's interpreter, pybind11, NumPy, mpi4py, pytest.
bash "$root/cmake/install-deps.sh" python3-dev pybind11-dev python3-pybind11 python3-numpy \
  python3-mpi4py python3-pytest
source "$root/cmake/mpi-env.sh"
# Debian's python3 (which sees python3-numpy and python3-mpi4py), not the first on PATH.
python=(-DPython_EXECUTABLE=/usr/bin/python3)
jobs=$(nproc)
step() { printf '\n==== %s\n' "$*"; }

step "CPU build"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALOX_ENABLE_CUDA=OFF \
  -DHALOX_WERROR=ON "${python[@]}" >/dev/null
cmake --build "$root/build"
step "CPU tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs"

step "sanitizer build (ASan + UBSan)"
san_tests=(test_stencil test_decomposition test_strided_copy test_exchange test_errors)
cmake -S "$root" -B "$root/build-sanitize" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHALOX_ENABLE_CUDA=OFF \
  -DHALOX_SANITIZE=ON -DHALOX_WERROR=ON -DHALOX_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$root/build-sanitize" --target "${san_tests[@]}"
step "sanitizer tests"
ctest --test-dir "$root/build-sanitize" --output-on-failure -j "$jobs" \
  -R '^(test_stencil|test_decomposition|test_strided_copy)_np1$|^(test_exchange|test_errors)_np(1|2|3)$'

if command -v nvcc >/dev/null 2>&1; then
  step "CUDA build ($(nvcc --version | tail -n 1))"
  cmake -S "$root" -B "$root/build-cuda" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALOX_ENABLE_CUDA=ON \
    -DHALOX_WERROR=ON "${python[@]}" >/dev/null
  cmake --build "$root/build-cuda"
  step "CUDA build: unit and GPU tests"
  ctest --test-dir "$root/build-cuda" --output-on-failure -j "$jobs" -L 'unit|gpu'
else
  step "no nvcc: CUDA build skipped"
fi
step "all test stages passed"
