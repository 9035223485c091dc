#!/usr/bin/env bash
# Profiler overhead with KernelCh sampling on real GPUs (issue 15). Needs a prebuilt plugin
# (the device has no clang; pass the build tree with --build) and builds the harness with nvcc
# against the NCCL that PyTorch ships, as scripts/gpu-validate.sh does.
#
#   bench/gpu/profiler_sampling.sh --build gpu-carry [--reps 5] [--out /tmp/ncclbpf-prof]
#   (PART_A_ONLY=1: only part A, on a one-GPU machine)
#
# Part A (GPU 0 only, the one-GPU testbed: 2 ranks as 2 emulated nodes under MPS -- a
#   1-rank communicator runs no kernels, so it has nothing to sample): the metrics file of a
#   default (sampled) run and of an every-collective run: per size band, collectives vs GPU-timed collectives and the mean
#   GPU time. Shows that sampling removes most KernelCh instrumentation and that every band
#   still gets GPU time.
# Part B (all GPUs of the machine, NVLink; run it on nvidia-h200-x2 / h100-x2): AllReduce
#   8 B-64 KiB, 500 iterations, REPS interleaved repetitions of
#     base      no profiler plugin
#     sampled   NCCL_PROFILER_PLUGIN=ncclbpf, NCCLBPF_PROFILE=coll (default: adaptive sampling)
#     collonly  ... NCCLBPF_PROFILE_MASK=0x2 (Coll events only, no GPU time)
#     every     ... NCCLBPF_PROFILE_SAMPLE=1 (KernelCh on every collective: the old default)
#     null      ... NCCLBPF_PROFILE_SAMPLE=1 NCCLBPF_PROFILE_NULL=1 (NCCL's KernelCh
#               instrumentation with callbacks that return at once: NCCL's share vs ncclbpf's)
#   then the overhead table of scripts/gpu_tables.py (median, spread, % vs base).
set -uo pipefail
export NCCL_NVLS_ENABLE=0
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/gpu-carry
REPS=5
OUT=/tmp/ncclbpf-prof
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--reps N] [--out DIR]" >&2; exit 1 ;;
  esac
done
PLUGIN=$BUILD/libncclbpf.so
[ -f "$PLUGIN" ] || { echo "profiler_sampling: no $PLUGIN (build it where clang is, carry it)" >&2; exit 1; }
mkdir -p "$OUT"
if [ -z "${NCCL_HOME:-}" ]; then
  NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__ if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0]))' 2>/dev/null)
  [ -n "$NCCL_HOME" ] && [ -d "$NCCL_HOME/nccl" ] && NCCL_HOME=$NCCL_HOME/nccl
fi
NCCL_LIB=$(ls "$NCCL_HOME"/lib/libnccl.so* 2>/dev/null | head -1)
[ -n "$NCCL_LIB" ] || { echo "profiler_sampling: NCCL not found (NCCL_HOME=$NCCL_HOME)" >&2; exit 1; }
export LD_LIBRARY_PATH=$(dirname "$NCCL_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BENCH=$OUT/ncclbpf-gpubench
nvcc -O2 -std=c++17 -arch=sm_90 -I"$NCCL_HOME/include" -o "$BENCH" "$ROOT/bench/gpu/ncclbpf_gpubench.cu" \
  -L"$(dirname "$NCCL_LIB")" -l:"$(basename "$NCCL_LIB")" -Xlinker -rpath="$(dirname "$NCCL_LIB")" ||
  { echo "profiler_sampling: harness build failed" >&2; exit 1; }
NGPU=$(nvidia-smi -L | wc -l)
ARGS=(--min-bytes 8 --max-bytes 64K --step-factor 8 --warmup 50 --iters 500)
P=(NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLBPF_PROFILE=coll)

run() { # LABEL CSV [ENV...] -- ARGS...
  local label=$1 csv=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$BENCH" --label "$label" --csv "$csv" "$@" > "$OUT/run-$label.log" 2>&1 ||
    { echo "run $label failed:" >&2; tail -5 "$OUT/run-$label.log" >&2; }
}

echo "## Part A: one GPU, 2 ranks as 2 emulated nodes (MPS), metrics per size band"
MPS_DIR=$(mktemp -d /tmp/ncclbpf-mps.XXXXXX); mkdir -p "$MPS_DIR/pipe" "$MPS_DIR/log"
export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe CUDA_MPS_LOG_DIRECTORY=$MPS_DIR/log
nvidia-cuda-mps-control -d || echo "profiler_sampling: no MPS daemon (ranks time-slice)" >&2
for s in auto 1; do
  rm -rf "$OUT/metrics-$s"; mkdir -p "$OUT/metrics-$s"
  run a-$s "$OUT/a.csv" "${P[@]}" NCCLBPF_PROFILE_SAMPLE=$s NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo \
    NCCLBPF_METRICS_FILE="$OUT/metrics-$s/" NCCLBPF_METRICS_INTERVAL=0 -- --procs 2 --same-gpu 0 "${ARGS[@]}"
  echo "### NCCLBPF_PROFILE_SAMPLE=$s"
  python3 - "$OUT/metrics-$s" <<'PY'
import glob, re, sys
tot, cnt, sm = {}, {}, {}
pat = re.compile(r'^(ncclbpf_collectives_total|ncclbpf_collective_latency_seconds_count|ncclbpf_collective_latency_seconds_sum)\{(.*)\} (\S+)$')
for f in glob.glob(sys.argv[1] + "/*.prom"):
    for line in open(f):
        m = pat.match(line.strip())
        if not m or 'coll="AllReduce"' not in m.group(2):
            continue
        band = re.search(r'size_band="([^"]+)"', m.group(2)).group(1)
        d = {"ncclbpf_collectives_total": tot, "ncclbpf_collective_latency_seconds_count": cnt,
             "ncclbpf_collective_latency_seconds_sum": sm}[m.group(1)]
        d[band] = d.get(band, 0) + float(m.group(3))
print("| size band | collectives | GPU-timed | fraction | mean GPU time µs |")
print("|---|---|---|---|---|")
for b in sorted(tot, key=lambda x: (len(x), x)):
    c = cnt.get(b, 0)
    print(f"| {b} | {tot[b]:.0f} | {c:.0f} | {100*c/tot[b]:.2f} % | {1e6*sm.get(b,0)/c if c else float('nan'):.2f} |")
PY
done

echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; rm -rf "$MPS_DIR"
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
[ "${PART_A_ONLY:-0}" = 1 ] && exit 0
echo "## Part B: $NGPU GPUs, AllReduce 8 B-64 KiB, $REPS interleaved repetitions"
rm -f "$OUT/b.csv"
for r in $(seq 1 "$REPS"); do
  run base-$r "$OUT/b.csv" -- --procs "$NGPU" "${ARGS[@]}"
  run sampled-$r "$OUT/b.csv" "${P[@]}" -- --procs "$NGPU" "${ARGS[@]}"
  run collonly-$r "$OUT/b.csv" "${P[@]}" NCCLBPF_PROFILE_MASK=0x2 -- --procs "$NGPU" "${ARGS[@]}"
  run every-$r "$OUT/b.csv" "${P[@]}" NCCLBPF_PROFILE_SAMPLE=1 -- --procs "$NGPU" "${ARGS[@]}"
  run null-$r "$OUT/b.csv" "${P[@]}" NCCLBPF_PROFILE_SAMPLE=1 NCCLBPF_PROFILE_NULL=1 -- --procs "$NGPU" "${ARGS[@]}"
done
python3 "$ROOT/scripts/gpu_tables.py" overhead "$OUT/b.csv" base sampled collonly every null
