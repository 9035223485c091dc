#!/bin/bash
# Stages g4.sh's inputs (CPU side): a copy of the checkout's scripts/, bench/gpu/ and
# docs/gpu-runs/2026-11-29/ plus its Release build's libncclbpf.so, ncclbpf and policies,
# into STAGE (default /work/main/.gpustage, ignored through .git/info/exclude), then checks
# that the staged bandit verifies with the staged CLI.
#   usage: g4-stage.sh RELEASE_BUILD_DIR [STAGE]
set -eu
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
B=$(cd "$1" && pwd); ST=${2:-/work/main/.gpustage}
grep -q 'CMAKE_BUILD_TYPE:STRING=Release' "$B/CMakeCache.txt" || { echo "g4-stage: $B is not a Release build" >&2; exit 1; }
rm -rf "$ST"; mkdir -p "$ST/build/policies" "$ST/bench" "$ST/docs/gpu-runs"
cp -r "$SRC/scripts" "$ST/"; cp -r "$SRC/bench/gpu" "$ST/bench/"
cp -r "$SRC/docs/gpu-runs/2026-11-29" "$ST/docs/gpu-runs/"
cp "$B/libncclbpf.so" "$B/ncclbpf" "$ST/build/"; cp "$B"/policies/*.bpf.o "$ST/build/policies/"
"$ST/build/ncclbpf" verify "$ST/build/policies/bandit.bpf.o" >/dev/null
echo "staged $(du -sh "$ST" | cut -f1) in $ST from $(git -C "$SRC" rev-parse --short HEAD)"
