#!/usr/bin/env bash
# Copies the GCC runtime that fortran_heat2d_acc needs beside it on a GPU machine without
# gfortran: libgfortran (and its libquadmath), libgomp and libgomp's NVIDIA offload plugin,
# which libgomp loads by name when the program first touches the GPU (so ldd does not list it;
# it must be the one of the same GCC as libgomp). Boost and fmt come from
# ../shared/device/prepare.sh; Open MPI and the CUDA runtime are the GPU machine's.
#   usage: examples/fortran_heat2d_acc/carry-libs.sh BINARY [DEST]   (DEST: .device/lib)
# then, there: LD_LIBRARY_PATH=DEST:$LD_LIBRARY_PATH mpirun -np 2 BINARY
set -euo pipefail
bin=${1:?usage: carry-libs.sh BINARY [DEST]}
dest=${2:-.device/lib}
mkdir -p "$dest"
libs=$(ldd "$bin" | awk '/=> \//{print $3}' | grep -E '/lib(gfortran|quadmath|gomp)\.so' || true)
plugin=$(dirname "$(ldd "$bin" | awk '/libgomp\.so/{print $3}')")/libgomp-plugin-nvptx.so.1
[ -e "$plugin" ] || { echo "carry-libs.sh: no $plugin (Debian: apt-get install gcc-12-offload-nvptx)" >&2; exit 1; }
for l in $libs "$plugin"; do
  cp -L "$l" "$dest/"
  echo "$l -> $dest/$(basename "$l")"
done
