#!/usr/bin/env bash
# Validates ncclbpf on real NCCL and real GPUs, and appends the tables to a results file.
#
#   scripts/gpu-validate.sh [--stages 0,1,2,3,4,5,6] [--results docs/results.md] [--out DIR]
#                           [--build DIR] [--reps N]
#
# Stages: 0 machine/NCCL facts; 1 no plugin vs noop policy (small-message latency, large
# bandwidth); 2 shipped policies (size_aware, nvlink_ring_mid, table_rules): what NCCL ran and
# the bandwidth effect; 3 bad_channels; 4 the one-GPU testbed (scripts/emulate-nodes.sh): 2 and 4
# emulated nodes, default vs every forced pair vs multinode_fix vs bandit; 5 profiler overhead in coll and full
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
    # Stage 0 needs no plugin; every other stage does (stage 4 for its policy configs).
    if [[ ",$STAGES," =~ ,[123456], ]]; then
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
# The one-GPU multi-node testbed (scripts/emulate-nodes.sh): 2 and 4 emulated nodes, each rank
# its own node on GPU 0 under MPS, AllReduce 4 KiB..64 MiB: NCCL's default vs every forced
# algorithm/protocol pair vs multinode_fix vs the bandit, $REPS interleaved repetitions. The
# offline tuner is trained on the even repetitions and checked on the odd ones.
if has_stage 4; then
  log "stage 4: testbed, 2 and 4 emulated nodes on one GPU ($REPS interleaved repetitions)"
  EMU=$OUTDIR/emu
  mkdir -p "$EMU"
  # The bandit with its defaults: M = 32 samples per arm below 1 MiB, 16 up to 16 MiB, 8 from
  # there; emulate-nodes.sh's default warm-up (240 per size, capped at 640 MiB / size, at
  # least 100) covers its exploration and keeps the 64 MiB runs short.
  bandit=bandit
  cfgs=${MN_CONFIGS:-default,pairs,policy:multinode_fix,policy+prof:$bandit}
  "$ROOT/scripts/emulate-nodes.sh" --nodes "${MN_NODES:-2,4}" --reps "$REPS" --configs "$cfgs" \
    --warmup 3 --iter-bytes 128M --min-iters 8 --out "$EMU" --build "$BUILD" --bench "$BENCH" ||
    echo "gpu-validate: some testbed runs failed (see $EMU/emulate-nodes.log)" >&2
  tuned=()
  if [ -x "$BUILD/ncclbpf" ] && [ -s "$EMU/samples.csv" ]; then
    # training set: even repetitions only (the tuner reads the rep column through --reps)
    if "$BUILD/ncclbpf" tune "$EMU/samples.csv" --reps even --json > "$EMU/tune.json" 2> "$EMU/tune.err"; then
      tuned=(--tuned "$EMU/tune.json" --check-reps "$(seq -s, 1 2 $((REPS - 1)))")
    else
      echo "gpu-validate: ncclbpf tune failed: $(head -3 "$EMU/tune.err")" >&2
    fi
  fi
  {
    echo
    echo "Testbed: \`scripts/emulate-nodes.sh --nodes ${MN_NODES:-2,4} --reps $REPS --configs $cfgs\`" \
         "(samples: $EMU/samples.csv; per-run times: $EMU/timing.txt)"
    python3 "$ROOT/scripts/emulate_report.py" "$EMU/samples.csv" \
      --bandit "policy-prof-$(basename "$bandit" .bpf.o)" "${tuned[@]}"
  } >> "$REPORT"
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
