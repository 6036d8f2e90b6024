#!/usr/bin/env bash
# The two-GPU evidence in one visit to a machine with two GPUs (docs/gpu-testing.md): run from
# the project's root on that machine, with the CUDA build in BUILD (default build-gpu).
#
#   tests/gpu/two-gpu.sh [suites] [sanitize] [apps] [sweep] [graphs]     (default: all)
#
#   suites  ctest -L gpu at 1-4 ranks (one GPU per rank where ranks <= GPUs, shared above), then
#           the NCCL suites on NCCL's network code path (NET/Socket over lo);
#   sanitize compute-sanitizer memcheck and racecheck on the CUDA graph replay test at 2 ranks
#           (racecheck replays RACECHECK_REPLAYS = 10 times);
#   apps    jacobi2d over CUDA IPC, NCCL (virtual nodes: HALOX_NODE_SIZE=1) and host staging, and
#           NVIDIA's NCCL Jacobi (nccl, nccl_overlap) where NVREF names the folder holding their
#           binaries (NVREF/nccl/jacobi, ...), under Open MPI's default binding (and NCCL and
#           NVIDIA's again under --bind-to none); heat3d --scaling over IPC and NCCL;
#   sweep   halo_bench --sweep --graph (halox over IPC, NCCL and host staging, blocking, in a
#           scheduled loop and replayed from a CUDA graph, next to raw NCCL, MPI on pinned host
#           memory and pinned copies) and the full 3-field exchanges over IPC and NCCL;
#   graphs  jacobi2d --graph and without at 2048^2, 4096^2 and SIZES over IPC and NCCL, next to
#           NVIDIA's nccl_graphs; heat3d --graph --scaling.
#
# Output: OUT (default ./two-gpu-out)/<stage>.txt, one file per stage, each command's lines
# prefixed by what ran. Knobs: SIZES (jacobi2d grid sides, default "16384 20480"), NITER (1000),
# HEAT_N (heat3d --n per GPU, "256 512"), HEAT_STEPS (200). Every command runs under a timeout.
set -uo pipefail
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-./two-gpu-out}
SIZES=${SIZES:-16384 20480}
NITER=${NITER:-1000}
HEAT_N=${HEAT_N:-256 512}
HEAT_STEPS=${HEAT_STEPS:-200}
mkdir -p "$OUT"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(suites sanitize apps sweep graphs)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0  # never NVLink multicast
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "two-gpu.sh: $(nvidia-smi -L 2>/dev/null | head -2 | tr '\n' ';') stages: ${stages[*]}"
[ "$gpus" -ge 2 ] || echo "two-gpu.sh: WARNING: $gpus GPU(s): the paths between GPUs do not run here"

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

mpi2() { mpirun -np 2 "$@"; }
mpi2_free() { mpirun -np 2 --bind-to none "$@"; }

stage_suites() {
  local f=$OUT/suites.txt
  run "$f" ctest-gpu 560 ctest --test-dir "$BUILD" -L gpu -j "${JOBS:-2}" --output-on-failure --timeout 240
  run "$f" ctest-nccl-net 300 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo \
    ctest --test-dir "$BUILD" -L nccl --output-on-failure --timeout 240
  grep -E 'tests passed|tests failed|Failed|Timeout|\*\*\*' "$f" | tail -40
}

jacobi() {  # FILE LABEL BINDING N ENV...
  local f=$1 label=$2 bind=$3 n=$4
  shift 4
  run "$f" "$label" 180 env "$@" mpirun -np 2 $bind "$BUILD/examples/jacobi2d" --device \
    --nx "$n" --ny "$n" --niter "$NITER" --progress 0
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
          [ -x "$NVREF/$v/jacobi" ] && run "$f" "nvidia-$v-$n$b" 180 \
            mpirun -np 2 $bind "$NVREF/$v/jacobi" -nx "$n" -ny "$n" -niter "$NITER"
        done
      fi
    done
  done
  for n in $HEAT_N; do
    for path in ipc nccl; do
      local node=0
      [ $path = nccl ] && node=1
      run "$f" "heat3d-$n-$path" 300 env HALOX_NODE_SIZE=$node mpirun -np 2 \
        "$BUILD/examples/heat3d" --device --scaling --n "$n" --steps "$HEAT_STEPS"
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
  run "$f" sweep 400 mpirun -np 2 "$BUILD/examples/halo_bench" --sweep --graph
  for path in ipc nccl; do
    local node=0
    [ $path = nccl ] && node=1
    run "$f" "full-$path" 200 env HALOX_NODE_SIZE=$node mpirun -np 2 \
      "$BUILD/examples/halo_bench" --device --sizes 64,256 --widths 1,2
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
        run "$f" "jacobi2d-$n-node$node${g:+-graph}" 180 env HALOX_NODE_SIZE=$node \
          mpirun -np 2 "$BUILD/examples/jacobi2d" --device $g --nx "$n" --ny "$n" \
          --niter "$NITER" --progress 0
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
    *) echo "two-gpu.sh: unknown stage '$s' (suites, sanitize, apps, sweep, graphs)"; exit 2 ;;
  esac
done
