#!/usr/bin/env bash
# Makes a carryable copy of a CUDA build for a GPU machine (../shared/device/README.md): BUILD is
# copied to DEST without object files, static libraries and CMakeFiles/ folders, its executables
# stripped, so that ctest --test-dir DEST still runs there and the copy stays far under the
# device tool's 64 MiB. Then fills .device/ (../shared/device/prepare.sh) for DEST.
#   usage: tools/device-pack.sh [BUILD=build-gpu] [DEST=build-dev]
set -euo pipefail
src=${1:-build-gpu}
dest=${2:-build-dev}
root=$(git rev-parse --show-toplevel)
cd "$root"
rm -rf "$dest"
cp -a "$src" "$dest"
find "$dest" \( -name '*.o' -o -name '*.a' -o -name '*.d' \) -type f -delete
find "$dest" -name CMakeFiles -type d -prune -exec rm -rf {} +
find "$dest" -type f -executable -size +100k -exec strip --strip-unneeded {} + 2>/dev/null || true
# Test programs no GPU test runs (the CPU suite) stay behind: the device tool carries 64 MiB.
keep=$(ctest --test-dir "$src" -L 'gpu|nccl' --show-only=json-v1 |
  python3 -c 'import json,sys,os; print("\n".join(sorted({os.path.basename(a) for t in json.load(sys.stdin)["tests"] for a in t.get("command", []) if "/tests/" in a})))')
for f in "$dest"/tests/test_*; do
  [ -f "$f" ] && [ -x "$f" ] || continue
  grep -qxF "$(basename "$f")" <<<"$keep" || rm -f "$f"
done
# ctest files name the original folder: point them at the copy.
grep -rl --include=CTestTestfile.cmake "$root/$src" "$dest" | xargs -r sed -i "s|$root/$src|$root/$dest|g"
bash "$root/../shared/device/prepare.sh" "$dest" >/dev/null
du -sh "$dest" .device
