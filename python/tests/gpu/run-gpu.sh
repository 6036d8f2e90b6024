#!/usr/bin/env bash
# The Python package on GPUs: run on a machine with NVIDIA GPUs (two for the CUDA IPC paths), from
# the project's root, with a CUDA build of the module in BUILD (default build-gpu):
#
#   python/tests/gpu/run-gpu.sh [BUILD]
#
# Runs, each under `timeout`:
#   1. the device tests (python/tests/gpu) at 1, 2, 3 and 4 ranks: halox's own device fields,
#      cudaMalloc memory through __cuda_array_interface__, halox's DLPack capsules, NVRTC kernels
#      on user streams (no array library needed);
#   2. the CPU suite once at 2 ranks (where NumPy is there), as a check of the carried build;
#   3. examples/python/heat2d.py --device at 2 and 4 ranks (NumPy), checked against a serial run;
#   4. examples/python/bench_overhead.py --device (1 and 2 ranks): JSON rows, bench_overhead.json.
# Output goes to $OUT where set, else BUILD/gpu-python-results.
# Exit status: 0 when every step passed (or skipped for a stated reason), 1 otherwise.
#
# It needs: a Python interpreter that can import the module (the one it was built for: CPython
# 3.11 for a build made on Debian 12), with mpi4py and pytest. Where the machine's own python3
# cannot (Ubuntu 24.04 has 3.12 and no mpi4py), it uses BUILD/python-runtime, which
# python/tests/gpu/prepare.sh puts there before the build is carried (docs/python.md). Also
# libcuda and libnvrtc (the CUDA toolkit's, for the test kernels) and mpirun.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
build=$(cd "${1:-build-gpu}" 2>/dev/null && pwd) || { echo "run-gpu.sh: no build directory ${1:-build-gpu}" >&2; exit 1; }
out=${OUT:-$build/gpu-python-results}
mkdir -p "$out"
log() { echo "run-gpu.sh: $*" | tee -a "$out/summary.txt"; }
: > "$out/summary.txt"

source "$root/cmake/mpi-env.sh"
export PYTHONDONTWRITEBYTECODE=1 PYTHONNOUSERSITE=1
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on shared machines
export PATH="$PATH:/usr/local/cuda/bin"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64"
[ -d "$root/.device/lib" ] && export LD_LIBRARY_PATH="$root/.device/lib:$LD_LIBRARY_PATH"

module=$(ls "$build"/python/halox/_halox*.so 2>/dev/null | head -n 1)
if [ -z "$module" ]; then
  log "FAILED: no $build/python/halox/_halox*.so; build it (cmake --build $build --target halox_python)"
  exit 1
fi
abi=$(basename "$module" | sed -n 's/^_halox\.\(cpython-[0-9]*\).*/\1/p')
log "module $module (built for $abi)"

# An interpreter that imports the module, with mpi4py and pytest: HALOX_PYTHON, then the
# carried runtime, then the machine's own.
runtime="$build/python-runtime"
candidates=()
[ -n "${HALOX_PYTHON:-}" ] && candidates+=("$HALOX_PYTHON")
[ -x "$runtime/bin/python3" ] && candidates+=("$runtime/bin/python3")
candidates+=(python3 /usr/bin/python3)
py=""
for c in "${candidates[@]}"; do
  envs=()
  if [ "$c" = "$runtime/bin/python3" ]; then
    envs=(PYTHONHOME="$runtime" LD_LIBRARY_PATH="$runtime/lib:$LD_LIBRARY_PATH")
  fi
  if env "${envs[@]}" PYTHONPATH="$build/python:$runtime/lib/python3/dist-packages" \
       "$c" -c 'import halox._halox, mpi4py.MPI, pytest' >/dev/null 2>"$out/probe.err"; then
    py=$c
    break
  fi
  log "cannot use $c: $(tail -n 1 "$out/probe.err")"
done
if [ -z "$py" ]; then
  log "FAILED: no interpreter here imports the module ($abi) with mpi4py and pytest."
  log "  The module only loads into the Python minor version it was built for. Either carry the"
  log "  runtime prepare.sh makes (run here on the build machine: python/tests/gpu/prepare.sh $build),"
  log "  or set HALOX_PYTHON to a $abi interpreter with mpi4py and pytest installed."
  exit 1
fi
if [ "$py" = "$runtime/bin/python3" ]; then
  export PYTHONHOME="$runtime" LD_LIBRARY_PATH="$runtime/lib:$LD_LIBRARY_PATH"
fi
export PYTHONPATH="$build/python:$runtime/lib/python3/dist-packages"
log "python: $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
gpus=$("$py" -c 'import halox; print(halox.device_count())' 2>/dev/null || echo 0)
cuda=$("$py" -c 'import halox; print(halox.cuda_enabled())' 2>/dev/null || echo False)
numpy=$("$py" -c 'import numpy; print(numpy.__version__)' 2>/dev/null || echo "")
log "halox built with CUDA: $cuda; GPUs: $gpus; NumPy: ${numpy:-absent (steps 2, 3 and the host rows are skipped)}"
nvidia-smi -L 2>/dev/null | tee -a "$out/summary.txt"
[ "$cuda" = "True" ] || log "warning: $build is not a CUDA build: every device test skips"

failed=0
# run NAME TIMEOUT COMMAND...: one step, its output in $out/NAME.log.
run() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout -s KILL "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  case $rc in
    0) log "passed   $name ($((SECONDS - t0)) s): $(grep -E 'passed|skipped|verified|failed' "$out/$name.log" | tail -n 1)" ;;
    77) log "skipped  $name: $(grep -iE 'skip|no CUDA' "$out/$name.log" | tail -n 1)" ;;
    137) log "FAILED   $name: killed after $limit s (a hang; see $name.log)"; failed=1 ;;
    *) log "FAILED   $name (exit $rc): see $out/$name.log"; failed=1 ;;
  esac
}

mpi=(mpirun --bind-to none)
pytest=("$py" -m pytest -q -rs --color=no -p no:cacheprovider)
for n in 1 2 3 4; do
  run "device_tests_np$n" 900 "${mpi[@]}" -np "$n" "${pytest[@]}" python/tests/gpu
done
if [ -n "$numpy" ]; then
  run "cpu_suite_np2" 900 "${mpi[@]}" -np 2 "${pytest[@]}" --ignore=python/tests/gpu python/tests
  for n in 2 4; do
    run "heat2d_device_np$n" 300 "${mpi[@]}" -np "$n" "$py" examples/python/heat2d.py --device --n 128 --steps 100
  done
else
  log "skipped  cpu_suite_np2, heat2d_device: no NumPy for $py"
fi
bench=(examples/python/bench_overhead.py --device)
[ -n "$numpy" ] || bench+=(--no-host)
for n in 1 2; do
  run "bench_overhead_np$n" 600 "${mpi[@]}" -np "$n" "$py" "${bench[@]}"
  grep '^{' "$out/bench_overhead_np$n.log" >> "$out/bench_overhead.json"
done
log "results in $out: summary.txt, one .log per step, bench_overhead.json"
[ $failed = 0 ] && log "every step passed" || log "SOME STEPS FAILED"
exit $failed
