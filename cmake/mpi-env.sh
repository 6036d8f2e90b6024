# The environment Open MPI runs under in this project's scripts and tests, spelled once: it may
# run as root (CI, containers) and place more ranks than cores (Open MPI 4 reads
# rmaps_base_oversubscribe, Open MPI 5 PRRTE's mapping policy). The scripts source this file;
# cmake/HaloxMpiTestEnv.cmake reads its `export` lines into every ctest entry's environment.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
export PMIX_MCA_pcompress_base_silence_warning=1
# CUDA lives in /usr/local/cuda on these machines; put nvcc on PATH when it is there.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
