#!/usr/bin/env bash
# Run here (Debian 12), after building the Python module of a CUDA build, before carrying that
# build to a GPU machine:
#
#   cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALOX_ENABLE_CUDA=ON \
#         -DCMAKE_CUDA_ARCHITECTURES=90 -DHALOX_BUILD_TESTS=OFF -DHALOX_BUILD_EXAMPLES=OFF \
#         -DPython_EXECUTABLE=/usr/bin/python3
#   cmake --build build-gpu --target halox_python
#   python/tests/gpu/prepare.sh build-gpu [--no-numpy]
#
# The module is built for this interpreter (CPython 3.11, Debian's) and cannot be imported by
# another minor version: the GPU machines run Ubuntu 24.04 with Python 3.12, without mpi4py,
# pytest or NumPy. So this puts, under BUILD/python-runtime, the interpreter the module was
# built for with its standard library (zipped), pytest, mpi4py (it runs on the GPU machine's
# Open MPI 4.1, same library ABI) and NumPy with its BLAS/LAPACK (unless --no-numpy), and the
# Boost/fmt libraries the module links that a stock CUDA image lacks. It deletes the build's
# object files and static libraries (the module is linked), so that BUILD stays small enough to
# carry (64 MiB). python/tests/gpu/run-gpu.sh finds the runtime there.
set -euo pipefail
build=${1:?usage: prepare.sh BUILD_DIR [--no-numpy]}
numpy=1
[ "${2:-}" = "--no-numpy" ] && numpy=0
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=$(cd "$build" && pwd)
module=$(ls "$build"/python/halox/_halox*.so 2>/dev/null | head -n 1 || true)
[ -n "$module" ] || { echo "prepare.sh: no $build/python/halox/_halox*.so: build the target halox_python first" >&2; exit 1; }
grep -q '^HALOX_ENABLE_CUDA:BOOL=ON' "$build/CMakeCache.txt" ||
  echo "prepare.sh: warning: $build is not a CUDA build (HALOX_ENABLE_CUDA=OFF): device tests will skip" >&2
py=$(sed -n 's/^Python_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
py=$(readlink -f "${py:-/usr/bin/python3}")
rt="$build/python-runtime"
rm -rf "$rt"
mkdir -p "$rt/bin" "$rt/lib"
ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
nodot=${ver/./}
stdlib=$("$py" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
site="$rt/lib/python3/dist-packages"
mkdir -p "$rt/lib/python$ver/lib-dynload" "$site"
cp -L "$py" "$rt/bin/python3"

# The standard library's Python files, zipped (sys.path has PREFIX/lib/pythonXY.zip), without
# its tests and GUI; its extension modules as files.
"$py" - "$stdlib" "$rt/lib/python$nodot.zip" <<'EOF'
import os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
skip = {"test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "pydoc_data",
        "lib-dynload", "site-packages", "dist-packages", "__pycache__", "venv"}
with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, files in os.walk(src):
        rel = os.path.relpath(d, src)
        dirs[:] = [x for x in dirs if x not in skip and not x.startswith("config-")]
        for f in files:
            if f.endswith(".py"):
                z.write(os.path.join(d, f), os.path.normpath(os.path.join(rel, f)))
EOF
for so in "$stdlib"/lib-dynload/*.so; do
  case $(basename "$so") in _test*|_tkinter*|xx*|_ctypes_test*) ;; *) cp "$so" "$rt/lib/python$ver/lib-dynload/" ;; esac
done

# Third-party packages the tests and examples import: whatever pytest, mpi4py (and NumPy)
# bring in from outside the standard library, found by importing them.
want="pytest, mpi4py.MPI"
[ $numpy = 1 ] && want="$want, numpy"
PYTHONPATH="$build/python" "$py" - "$site" "$root/python/tests/gpu" <<EOF
import os, shutil, sys
import $want
import pytest
pytest.main(["-q", "--collect-only", "-p", "no:cacheprovider", sys.argv[2]])  # what collection imports
copied = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None) or ""
    for mark in ("/dist-packages/", "/site-packages/"):
        if mark in f:  # not the standard library, halox or the tests themselves
            base, rel = f.split(mark, 1)
            top = rel.split("/")[0]  # the package directory, or a module file
            src, dst = os.path.join(base + mark, top), os.path.join(sys.argv[1], top)
            if top not in copied and not os.path.exists(dst):
                (shutil.copytree(src, dst, ignore=shutil.ignore_patterns(
                    "tests", "__pycache__", "*.pyi", "f2py", "distutils", "*.a", "*.h", "_simd.*"))
                 if os.path.isdir(src) else shutil.copy(src, dst))
                copied.add(top)
print("prepare.sh: packages:", ", ".join(sorted(copied)))
EOF

# Shared libraries a stock CUDA image lacks: Boost and fmt (the module), BLAS/LAPACK and the
# Fortran runtime (NumPy).
{
  ldd "$module"
  find "$site" -name '*.so' -exec ldd {} \; 2>/dev/null
} | awk '/=> \//{print $3}' | sort -u |
  grep -E 'libboost|libfmt|libblas|liblapack|libgfortran|libquadmath' |
  while read -r l; do cp -L "$l" "$rt/lib/"; done

# What the module does not need any more (it links halox statically), to keep the build small.
find "$build" \( -name '*.o' -o -name '*.a' \) -delete
echo "$py" > "$rt/origin"
du -sh "$rt" "$build" | sed 's/^/prepare.sh: /'
echo "prepare.sh: carry \"$(basename "$build")\"; on the GPU machine: python/tests/gpu/run-gpu.sh $(basename "$build")"
