# Sourced by the scripts: lets Open MPI run as root and oversubscribe the cores (CI, containers).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 PMIX_MCA_pcompress_base_silence_warning=1
# CUDA lives in /usr/local/cuda on these machines; put nvcc on PATH when it is there.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
