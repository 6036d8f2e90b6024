#!/usr/bin/env bash
# The GPU evidence in one visit to a machine with N GPUs (docs/gpu-testing.md): run from the
# project's root on that machine, with the CUDA build in BUILD (default build-gpu). It reads N
# from nvidia-smi and runs what fits.
#
#   tests/gpu/gpu-suite.sh [suites] [sanitize] [apps] [sweep] [graphs]     (default: all)
#
#   suites  REPEAT (3) rounds of: ctest -L gpu and -L nccl at each rank count k = 1..min(N, 4)
#           on its own (-R _np<k>$, -j 1: one GPU per rank), under no variable,
#           HALOX_NODE_SIZE=1 and HALOX_NODE_SIZE=2; -L nccl again on NCCL's network code path
#           (NET/Socket over lo); every GPU test binary at 2N ranks (two ranks per GPU); the
#           Python GPU suite (python/tests/gpu/run-gpu.sh). HALOX_WAIT_TIMEOUT=120: a stuck
#           exchange fails naming the peer it waits for;
#   sanitize compute-sanitizer memcheck and racecheck on the CUDA graph replay test at 2 ranks
#           (racecheck replays RACECHECK_REPLAYS = 10 times);
#   apps    at every GPU count G in GPUS (1 2 4 8 up to N): jacobi2d over CUDA IPC, NCCL
#           (virtual nodes: HALOX_NODE_SIZE=1) and host staging, and NVIDIA's NCCL Jacobi
#           (nccl, nccl_overlap) where NVREF names the folder holding their binaries
#           (NVREF/nccl/jacobi, ...); heat3d --scaling over IPC and NCCL;
#   sweep   halo_bench --sweep --graph at 2 ranks, and the full 3-field exchanges over IPC and
#           NCCL at every G (a 2x2x1 process grid at 4 ranks, 2x2x2 at 8);
#   graphs  jacobi2d --graph and without at 2048^2, 4096^2 and SIZES over IPC and NCCL at every
#           G, next to NVIDIA's nccl_graphs; heat3d --graph --scaling.
#
# Output: OUT (default ./gpu-suite-out)/<stage>.txt, one file per stage, each command's lines
# prefixed by what ran, and a summary line per stage. Knobs: REPEAT (3), GPUS (the counts to
# scale over), SIZES (jacobi2d grid sides, default "16384 20480"), NITER (1000), HEAT_N
# (heat3d --n per GPU, "256 512"), HEAT_STEPS (200). Every command runs under a timeout.
set -uo pipefail
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-./gpu-suite-out}
REPEAT=${REPEAT:-3}
SIZES=${SIZES:-16384 20480}
NITER=${NITER:-1000}
HEAT_N=${HEAT_N:-256 512}
HEAT_STEPS=${HEAT_STEPS:-200}
mkdir -p "$OUT"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(suites sanitize apps sweep graphs)
source "$(dirname "${BASH_SOURCE[0]}")/../../cmake/mpi-env.sh"
export NCCL_NVLS_ENABLE=0  # never NVLink multicast
export HALOX_WAIT_TIMEOUT=${HALOX_WAIT_TIMEOUT:-120}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
GPUS=${GPUS:-$(for g in 1 2 4 8; do [ "$g" -le "$gpus" ] && echo -n "$g "; done)}
echo "gpu-suite.sh: $gpus GPU(s): $(nvidia-smi -L 2>/dev/null | head -1); stages: ${stages[*]}"
[ "$gpus" -ge 2 ] || echo "gpu-suite.sh: WARNING: $gpus GPU(s): the paths between GPUs do not run here"

# run FILE LABEL SECONDS COMMAND...: the command's output, each line prefixed with LABEL.
run() {
  local file=$1 label=$2 secs=$3
  shift 3
  echo "### $label: $*" >>"$file"
  timeout -s KILL "$secs" "$@" 2>&1 | sed "s|^|$label: |" >>"$file"
  local rc=${PIPESTATUS[0]}
  echo "### $label: exit $rc" >>"$file"
  echo "$label: exit $rc"
}


stage_suites() {
  local f=$OUT/suites.txt top=$((gpus < 4 ? gpus : 4))
  for round in $(seq 1 "$REPEAT"); do
    for k in $(seq 1 "$top"); do
      for node in "" 1 2; do
        local e=()
        [ -n "$node" ] && e=(HALOX_NODE_SIZE=$node)
        run "$f" "r$round-gpu-np$k${node:+-node$node}" 600 env "${e[@]}" ctest --test-dir "$BUILD" \
          -L gpu -R "_np${k}\$" -j 1 --output-on-failure --timeout 240
      done
      run "$f" "r$round-nccl-net-np$k" 300 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
        NCCL_SOCKET_IFNAME=lo ctest --test-dir "$BUILD" -L nccl -R "_np${k}\$" -j 1 \
        --output-on-failure --timeout 240
    done
    for t in "$BUILD"/tests/test_device_* "$BUILD"/tests/test_graphs "$BUILD"/tests/test_chain_device; do
      [ -x "$t" ] && run "$f" "r$round-$(basename "$t")-np$((2 * gpus))" 600 \
        mpirun -np $((2 * gpus)) "$t"
    done
    [ -x python/tests/gpu/run-gpu.sh ] && run "$f" "r$round-python" 600 bash python/tests/gpu/run-gpu.sh
  done
  echo "suites: $(grep -c 'exit 0$' "$f") commands passed, $(grep -E '^### .*exit [^0]' "$f" | grep -c .) failed or timed out"
  grep -E '^### .*exit [^0]|tests passed|Timeout' "$f" | tail -40
}

jacobi() {  # FILE LABEL BINDING N ENV... (at every G of GPUS)
  local f=$1 label=$2 bind=$3 n=$4
  shift 4
  for g in $GPUS; do
    run "$f" "$label-g$g" 180 env "$@" mpirun -np "$g" $bind "$BUILD/examples/jacobi2d" --device \
      --nx "$n" --ny "$n" --niter "$NITER" --progress 0
  done
}

stage_apps() {
  local f=$OUT/apps.txt
  for n in $SIZES; do
    for bind in "" "--bind-to none"; do
      local b=${bind:+-nobind}
      [ -z "$bind" ] && jacobi "$f" "jacobi2d-$n-ipc" "" "$n" HALOX_NODE_SIZE=0
      jacobi "$f" "jacobi2d-$n-nccl$b" "$bind" "$n" HALOX_NODE_SIZE=1
      [ -z "$bind" ] && jacobi "$f" "jacobi2d-$n-host_staged" "" "$n" HALOX_NODE_SIZE=1 \
        HALOX_STAGING=host_staged
      if [ -n "${NVREF:-}" ]; then
        for v in nccl nccl_overlap; do
          for g in $GPUS; do
            [ -x "$NVREF/$v/jacobi" ] && run "$f" "nvidia-$v-$n$b-g$g" 180 \
              mpirun -np "$g" $bind "$NVREF/$v/jacobi" -nx "$n" -ny "$n" -niter "$NITER"
          done
        done
      fi
    done
  done
  for n in $HEAT_N; do
    for path in ipc nccl; do
      local node=0
      [ $path = nccl ] && node=1
      for g in $GPUS; do
        run "$f" "heat3d-$n-$path-g$g" 300 env HALOX_NODE_SIZE=$node mpirun -np "$g" \
          "$BUILD/examples/heat3d" --device --scaling --n "$n" --steps "$HEAT_STEPS"
      done
    done
  done
  grep -E '^###|efficiency' "$f" | grep -v 'exit 0' | tail -60
}

stage_sanitize() {
  local f=$OUT/sanitize.txt
  # API errors are not reported: NCCL's set-up probes the driver with calls that fail by design
  # (cudaFuncGetAttributes, cuMemRetainAllocationHandle); halox checks every call it makes.
  # racecheck instruments every shared-memory access: its run replays 10 times, not 200
  # (HALOX_TEST_REPLAYS; the same graphs, the same checks).
  for tool in memcheck racecheck; do
    local replays=200
    [ $tool = racecheck ] && replays=${RACECHECK_REPLAYS:-10}
    run "$f" "$tool" "${SANITIZE_SECS:-300}" mpirun -np 2 -x HALOX_TEST_REPLAYS=$replays \
      compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 \
      "$BUILD/tests/test_graphs" "a captured time step*"
  done
  grep -E 'ERROR SUMMARY|exit' "$f"
}

stage_sweep() {
  local f=$OUT/sweep.txt
  run "$f" sweep 400 mpirun -np 2 "$BUILD/bench/halo_bench" --sweep --graph
  for path in ipc nccl; do
    local node=0
    [ $path = nccl ] && node=1
    for g in $GPUS; do
      run "$f" "full-$path-g$g" 200 env HALOX_NODE_SIZE=$node mpirun -np "$g" \
        "$BUILD/bench/halo_bench" --device --sizes 64,256 --widths 1,2
    done
  done
  grep -c '"impl"' "$f"
}

stage_graphs() {
  local f=$OUT/graphs.txt
  if ! "$BUILD/examples/jacobi2d" --help 2>/dev/null | grep -q -- --graph; then
    echo "graphs: this build has no --graph" | tee -a "$f"
    return
  fi
  for n in 2048 4096 $SIZES; do
    for node in 0 1; do  # CUDA IPC, NCCL
      for g in "" --graph; do
        for G in $GPUS; do
          run "$f" "jacobi2d-$n-node$node${g:+-graph}-g$G" 180 env HALOX_NODE_SIZE=$node \
            mpirun -np "$G" "$BUILD/examples/jacobi2d" --device $g --nx "$n" --ny "$n" \
            --niter "$NITER" --progress 0
        done
      done
    done
    [ -n "${NVREF:-}" ] && [ -x "$NVREF/nccl_graphs/jacobi" ] && run "$f" "nvidia-nccl_graphs-$n" \
      180 mpirun -np 2 "$NVREF/nccl_graphs/jacobi" -nx "$n" -ny "$n" -niter "$NITER"
  done
  for n in $HEAT_N; do
    for node in 0 1; do
      run "$f" "heat3d-$n-graph-node$node" 300 env HALOX_NODE_SIZE=$node mpirun -np 2 \
        "$BUILD/examples/heat3d" --device --graph --scaling --n "$n" --steps "$HEAT_STEPS"
    done
  done
  grep -E 'efficiency|verified|FAILED' "$f" | tail -60
}

for s in "${stages[@]}"; do
  case $s in
    suites | sanitize | apps | sweep | graphs) "stage_$s" ;;
    *) echo "gpu-suite.sh: unknown stage '$s' (suites, sanitize, apps, sweep, graphs)"; exit 2 ;;
  esac
done
