#!/usr/bin/env bash
# Validates ncclbpf on real NCCL and real GPUs, and appends the tables to a results file.
#
#   scripts/gpu-validate.sh [--stages 0,1,2,3,4,5,6] [--results docs/results.md] [--out DIR]
#                           [--build DIR] [--reps N]
#
# Stages: 0 machine/NCCL facts; 1 no plugin vs noop policy (small-message latency, large
# bandwidth); 2 shipped policies (size_aware, nvlink_ring_mid, table_rules): what NCCL ran and
# the bandwidth effect; 3 bad_channels; 4 emulated 2 nodes x 2 GPUs: default vs every forced
# algorithm/protocol pair, and the multinode_fix policy; 5 profiler overhead in coll and full
# modes; 6 PyTorch torch.distributed all-reduce with the plugin.
#
# Builds the plugin (cmake; needs clang for the policies) unless --build points at an
# existing build tree, and the harness with nvcc against the NCCL that PyTorch's wheel ships
# (or NCCL_HOME). NVLink multicast stays off: NCCL_NVLS_ENABLE=0 in every run.
set -uo pipefail
export NCCL_NVLS_ENABLE=0

ROOT=$(cd "$(dirname "$0")/.." && pwd)
STAGES=0,1,2,3,4,5,6
RESULTS=$ROOT/docs/results.md
OUTDIR=${OUT:-/tmp/ncclbpf-gpu}
BUILD=$ROOT/build-gpu
REPS=5
while [ $# -gt 0 ]; do
  case $1 in
    --stages) STAGES=$2; shift 2 ;;
    --results) RESULTS=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    *) echo "usage: $0 [--stages 0,1,..] [--results FILE] [--out DIR] [--build DIR] [--reps N]" >&2; exit 1 ;;
  esac
done
mkdir -p "$OUTDIR"
has_stage() { [[ ",$STAGES," == *",$1,"* ]]; }
log() { echo "== $*" >&2; }

# ---------------------------------------------------------------- NCCL and builds
if [ -z "${NCCL_HOME:-}" ]; then
  NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__ if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0]))' 2>/dev/null)
  [ -n "$NCCL_HOME" ] && [ -d "$NCCL_HOME/nccl" ] && NCCL_HOME=$NCCL_HOME/nccl
fi
NCCL_INC=$NCCL_HOME/include
NCCL_LIB=$(ls "$NCCL_HOME"/lib/libnccl.so* 2>/dev/null | head -1)
if [ ! -f "$NCCL_INC/nccl.h" ] || [ -z "$NCCL_LIB" ]; then
  echo "gpu-validate: NCCL headers/library not found (NCCL_HOME=$NCCL_HOME)" >&2; exit 1
fi
export LD_LIBRARY_PATH=$(dirname "$NCCL_LIB")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

if [ ! -f "$BUILD/libncclbpf.so" ]; then
  log "building the plugin in $BUILD"
  if ! { cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNCCLBPF_GPU_BENCH=OFF >/dev/null &&
         cmake --build "$BUILD" -j8 >/dev/null; }; then
    # Stages 0 and 4's sweep need no plugin; every other stage does.
    if [[ ",$STAGES," =~ ,[12356], ]]; then
      echo "gpu-validate: plugin build failed (clang with the BPF target is needed for the policies;" \
           "or build elsewhere and pass --build DIR)" >&2
      exit 1
    fi
    echo "gpu-validate: no plugin build; running the plugin-free parts only" >&2
  fi
fi
PLUGIN=$BUILD/libncclbpf.so
POL=$BUILD/policies
BENCH=$OUTDIR/ncclbpf-gpubench
log "building the harness against $NCCL_INC"
nvcc -O2 -std=c++17 -arch=sm_90 -I"$NCCL_INC" -o "$BENCH" "$ROOT/bench/gpu/ncclbpf_gpubench.cu" \
  -L"$(dirname "$NCCL_LIB")" -l:"$(basename "$NCCL_LIB")" -Xlinker -rpath="$(dirname "$NCCL_LIB")" || { echo "gpu-validate: harness build failed" >&2; exit 1; }

NGPU=$(nvidia-smi -L | wc -l)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
NCCLV=$(python3 -c 'import torch; v=torch.cuda.nccl.version(); print(".".join(map(str,v)))' 2>/dev/null || echo "?")
DATE=$(date -u +%Y-%m-%d)
CMDLINE="scripts/gpu-validate.sh --stages $STAGES"
REPORT=$OUTDIR/report.md
{
  echo
  echo "## GPU validation on ${NGPU}x ${GPU}, NCCL ${NCCLV} (${DATE})"
  echo
  echo "Command: \`$CMDLINE\` (NCCL_NVLS_ENABLE=0 throughout). Raw CSV under the run's output folder."
} >> "$REPORT"

# run LABEL CSV [ENV...] -- HARNESS-ARGS...: one harness run with extra environment.
run() {
  local label=$1 csv=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$BENCH" --label "$label" --csv "$csv" "$@" > "$OUTDIR/run-$label.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] || ! grep -q "all results correct" "$OUTDIR/run-$label.log"; then
    echo "gpu-validate: run $label failed (rc $rc); tail of its log:" >&2
    tail -20 "$OUTDIR/run-$label.log" >&2
    return 1
  fi
  return 0
}
TUNER=(NCCL_TUNER_PLUGIN="$PLUGIN")

# ---------------------------------------------------------------- stage 0
if has_stage 0; then
  log "stage 0: machine"
  {
    nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -8
    echo "NCCL_HOME=$NCCL_HOME"; echo "NCCL version $NCCLV"
    ip -o link 2>/dev/null | awk '{print $2}' | tr '\n' ' '; echo
    echo "clang: $(command -v clang || echo none)"
    echo "--- NCCL's own TUNING lines for one 1 MiB AllReduce:"
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING "$BENCH" --procs "$NGPU" --min-bytes 1M --max-bytes 1M \
      --warmup 1 --iters 2 2>&1 | grep -i -E "tun|algo|proto" | sort | uniq -c | sort -rn | head -15
  } > "$OUTDIR/stage0.txt" 2>&1
  cat "$OUTDIR/stage0.txt" >&2
fi

# ---------------------------------------------------------------- stage 1
if has_stage 1; then
  log "stage 1: no plugin vs noop ($REPS repetitions, interleaved)"
  for r in $(seq 1 "$REPS"); do
    run base-small-$r "$OUTDIR/s1.csv" -- --procs "$NGPU" --min-bytes 8 --max-bytes 1M --warmup 50 --iters 500
    run noop-small-$r "$OUTDIR/s1.csv" "${TUNER[@]}" NCCLBPF_POLICY="$POL/noop.bpf.o" -- \
      --procs "$NGPU" --min-bytes 8 --max-bytes 1M --warmup 50 --iters 500
    run base-large-$r "$OUTDIR/s1.csv" -- --procs "$NGPU" --min-bytes 64M --max-bytes 256M --warmup 5 --iters 50
    run noop-large-$r "$OUTDIR/s1.csv" "${TUNER[@]}" NCCLBPF_POLICY="$POL/noop.bpf.o" -- \
      --procs "$NGPU" --min-bytes 64M --max-bytes 256M --warmup 5 --iters 50
  done
  python3 "$ROOT/scripts/gpu_tables.py" overhead "$OUTDIR/s1.csv" base noop >> "$REPORT"
fi

# ---------------------------------------------------------------- stage 2 and 3
policy_stage() {
  local title=$1; shift
  local csv=$OUTDIR/$title.csv
  run default-$title "$csv" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING -- --procs "$NGPU" --min-bytes 4K --max-bytes 256M --warmup 20 --iters 100
  for pol in "$@"; do
    [ -f "$POL/$pol.bpf.o" ] || { echo "gpu-validate: missing $POL/$pol.bpf.o" >&2; continue; }
    run "$pol" "$csv" "${TUNER[@]}" NCCLBPF_POLICY="$POL/$pol.bpf.o" \
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,INIT -- \
      --procs "$NGPU" --min-bytes 4K --max-bytes 256M --warmup 20 --iters 100
  done
  python3 "$ROOT/scripts/gpu_tables.py" policies "$csv" "$OUTDIR" default-$title "$@" >> "$REPORT"
}
if has_stage 2; then
  log "stage 2: shipped policies"
  policy_stage s2 size_aware nvlink_ring_mid table_rules
fi
if has_stage 3; then
  log "stage 3: bad_channels"
  policy_stage s3 bad_channels
fi

# ---------------------------------------------------------------- stage 4
if has_stage 4; then
  log "stage 4: emulated 2 nodes x $((NGPU / 2)) GPUs, default vs forced algo/proto"
  NET=(NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
  ARGS=(--procs "$NGPU" --nodes 2 --min-bytes 4K --max-bytes 64M --step-factor 4 --warmup 10 --iters 50)
  csv=$OUTDIR/s4.csv
  run mn-default "$csv" "${NET[@]}" -- "${ARGS[@]}"
  # MN_FORCED=0 skips the forced sweep (e.g. to re-check only default vs policy).
  [ "${MN_FORCED:-1}" = 0 ] || for algo in Tree Ring; do
    for proto in LL LL128 Simple; do
      run "mn-$algo-$proto" "$csv" "${NET[@]}" NCCL_ALGO=$algo NCCL_PROTO=$proto -- "${ARGS[@]}" ||
        echo "gpu-validate: $algo/$proto not usable here" >&2
    done
  done
  if [ -f "$POL/multinode_fix.bpf.o" ]; then
    run mn-policy "$csv" "${NET[@]}" "${TUNER[@]}" NCCLBPF_POLICY="$POL/multinode_fix.bpf.o" -- "${ARGS[@]}"
  fi
  python3 "$ROOT/scripts/gpu_tables.py" sweep "$csv" >> "$REPORT"
fi

# ---------------------------------------------------------------- stage 5
if has_stage 5; then
  log "stage 5: profiler overhead"
  for r in $(seq 1 "$REPS"); do
    run prof-base-$r "$OUTDIR/s5.csv" -- --procs "$NGPU" --min-bytes 8 --max-bytes 64K --step-factor 8 --warmup 50 --iters 500
    for mode in coll full; do
      run prof-$mode-$r "$OUTDIR/s5.csv" NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLBPF_PROFILE=$mode -- \
        --procs "$NGPU" --min-bytes 8 --max-bytes 64K --step-factor 8 --warmup 50 --iters 500
    done
  done
  python3 "$ROOT/scripts/gpu_tables.py" overhead "$OUTDIR/s5.csv" prof-base prof-coll prof-full >> "$REPORT"
fi

# ---------------------------------------------------------------- stage 6
if has_stage 6; then
  log "stage 6: PyTorch torch.distributed with the plugin"
  NCCL_TUNER_PLUGIN="$PLUGIN" NCCLBPF_POLICY="$POL/size_aware.bpf.o" NCCL_DEBUG=INFO \
    NCCL_DEBUG_SUBSYS=INIT,TUNING PYTHONUNBUFFERED=1 \
    python3 "$ROOT/scripts/gpu_torch_allreduce.py" "$NGPU" > "$OUTDIR/torch.log" 2>&1
  rc=$?
  {
    echo
    echo "### PyTorch torch.distributed all-reduce, $NGPU processes, NCCL_TUNER_PLUGIN=libncclbpf.so, size_aware"
    echo
    echo '```'
    grep -m3 "ncclbpf:" "$OUTDIR/torch.log"
    grep "^torch all_reduce" "$OUTDIR/torch.log"
    echo '```'
    echo "exit status $rc"
  } >> "$REPORT"
fi

cat "$REPORT" >> "$RESULTS"
log "appended to $RESULTS"
cat "$REPORT"
