#!/usr/bin/env bash
# The one-GPU multi-node testbed: N ranks on a single GPU, each rank its own emulated node
# (its own NCCL_HOSTID), so NCCL sees N nodes and uses its network transport (sockets over
# loopback) between them. Runs ncclbpf-gpubench --same-gpu for every (node count, config),
# repetitions interleaved, and appends one CSV row per timed collective to the samples file
# (the offline tuner's format, `ncclbpf tune` reads it directly).
#
#   scripts/emulate-nodes.sh [--nodes 2,4] [--coll allreduce] [--min-bytes 4K] [--max-bytes 64M]
#       [--step-factor 4] [--configs default,pairs,policy:multinode_fix,policy+prof:bandit]
#       [--iters 100] [--min-iters 10] [--iter-bytes 256M] [--warmup 5] [--policy-warmup 240]
#       [--policy-warmup-bytes 640M] [--policy-min-warmup 112] [--policy-warmup-sync 1]
#       [--reps 5] [--out DIR] [--samples FILE] [--bench BIN] [--build DIR] [--alt-build DIR] [--device N]
#       [--no-mps] [--dry-run] [--gpus D [--gpus-per-node K] [--node-process]]
#       [--step COLL:BYTES,... [--steps 200] [--step-warmup 2] [--gap-us G] [--overlap-us C]
#        [--overlap-blocks B] [--step-queued | --step-ahead K] [--workload NAME]]
#
# --gpus D: the nodes use the host's D GPUs instead of one (multi-GPU kinds): node n has K
# ranks (--gpus-per-node, default 1), one process per GPU as PyTorch runs them, its g-th on
# device (n*K + g) mod D - NVLink inside a node, sockets between nodes. E.g. --nodes 2 --gpus
# 2: 2 nodes x 1 GPU, each its own GPU; --nodes 2 --gpus 2 --gpus-per-node 2: 2 nodes x 2
# GPUs, both nodes on the same two GPUs (MPS shares them). --node-process: one process per
# node drives its K GPUs instead (nccl-tests' -g K; the agreement layer then falls back: it
# needs one rank of a communicator per process, docs/agreement.md).
#
# Training-step workloads (--step, instead of the size sweep): every run times --steps steps
# of the given collectives back to back (ar, ag, rs, bc; e.g. ar:16M,ar:4M,ag:1M,rs:1M), the
# host waiting for each step unless --step-queued (never waits: as far ahead as CUDA's
# launch queue allows) or --step-ahead K (waits for the step K back); --gap-us: GPU busy time before each
# collective (mixed -> gap); --overlap-us: compute on another stream per step (overlap).
# One row per step goes to OUT/steps.csv (workload,nnodes,nranks,config,policy,rep,step,
# time_us), named --workload. Policies learn inside the timed steps (no policy warm-up): the
# step times show what learning costs (emulate_report.py --steps).
#
# Configs (comma-separated):
#   default              NCCL's own choice, no plugin
#   ALGO/PROTO           NCCL_ALGO=ALGO NCCL_PROTO=PROTO, e.g. Tree/LL, Ring/Simple
#   pairs                every pair of {Tree,Ring} x {LL,LL128,Simple}
#   policy:NAME          ncclbpf as tuner plugin with BUILD/policies/NAME.bpf.o (or a path)
#   policy+prof:NAME     the same, also as profiler plugin (policies that learn from timings);
#                        the ranks' agreement layer meets at 127.0.0.1 (NCCLBPF_AGREE, a
#                        fresh port per run)
#   ALGO/PROTO@policy+prof:NAME   both: NCCL_ALGO/NCCL_PROTO forced and the policy loaded, so
#                        the policy can only run that pair (its own cost, measured against
#                        the forced pair alone)
#   any config~sK        the timed collectives wait for the GPU after every K-th (a training
#                        step of K collectives; default: never, all queued back to back)
#   any config~wK        policy+prof warm-up waits after every K-th collective instead of
#                        --policy-warmup-sync
#   any config~a0        policy+prof without the agreement layer (NCCLBPF_AGREE=off: agreed
#                        maps read zeros; measures what agreement costs)
#   policy+prof:..~n     NCCLBPF_PROFILE_NULL=1: NCCL's events requested, our callbacks return
#                        at once (what NCCL's instrumentation costs without ours)
#   policy+prof:..~mHEX  NCCLBPF_PROFILE_MASK=HEX, e.g. ~m0x2: Coll events only
#   any config~d0        no decision log or timeline for it, even with NCCLBPF_DECISION_LOG
#                        or NCCLBPF_TRACE set (what logging costs)
#   policy..~x           the library of --alt-build DIR instead of --build's (an A/B of two
#                        builds of libncclbpf.so in one interleaved run; labels end in -x)
# policy+prof configs get --policy-warmup untimed collectives per size, capped at
# --policy-warmup-bytes / size but at least --policy-min-warmup (0 bytes: no cap), each waited for
# (--warmup-sync: the policy learns from completed collectives, as in a training loop that
# synchronizes, rather than from a queue the host filled ahead of the GPU) (an online policy's
# exploration happens there: the bandit takes 1 + M samples per arm in turns of 8
# collectives whose first sample it drops, plus 2 epochs of agreement lag: with the 4 pairs
# NCCL 2.28.9 offers on this testbed (no LL128) 46 x 4 + 32 = 216 below 1 MiB (M = 32),
# 28 x 4 + 32 = 144 from 1 MiB (M = 16), 19 x 4 + 32 = 108 from 16 MiB (M = 8): the defaults
# give 240 up to 1 MiB, 160 at 4 MiB, 112 at 16 and 64 MiB), the others --warmup.
#
# With NCCLBPF_DECISION_LOG=DIR (or NCCLBPF_TRACE=DIR) in the environment, each policy run
# writes its decision logs (timelines) to DIR/n<nodes>-<label>-r<rep>/ (step workloads:
# DIR/<workload>-n<nodes>-<label>-r<rep>/).
#
# Interleaving: repetition r runs every node count, and within it every config, in an order
# rotated by r, so slow drift of the shared host hits all configs alike. Each run writes r
# into the samples' rep column (--rep-base), so `ncclbpf tune --reps` and emulate_report.py's
# held-out check see the repetitions. Each (rep, nodes,
# config) is a fresh set of processes and a fresh communicator (NCCL_ALGO is read at init).
#
# The CUDA MPS daemon is started first and stopped at the end (also on error or signal):
# without it the ranks' kernels time-slice the GPU and a 4 KiB AllReduce takes ~4.5 ms
# instead of ~0.1 ms. It needs the right to run nvidia-cuda-mps-control (root on the
# device); --no-mps skips it (results then measure time slicing, not the network path).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0), InfiniBand off, sockets on lo.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODES=2,4
COLL=allreduce
MIN_BYTES=4K
MAX_BYTES=64M
STEP=4
CONFIGS=default,pairs,policy:multinode_fix,policy+prof:bandit
ITERS=100
MIN_ITERS=10
ITER_BYTES=256M
WARMUP=5
POLICY_WARMUP=240
POLICY_WARMUP_BYTES=640M
POLICY_MIN_WARMUP=112
POLICY_WARMUP_SYNC=1
REPS=5
OUTDIR=${OUT:-/tmp/ncclbpf-emu}
SAMPLES=
BENCH=
BUILD=$ROOT/build
DEVICE=0
MPS=1
DRY=0
STEP_SPEC=
STEPS=200
STEP_WARMUP=2
GAP_US=0
OVERLAP_US=0
OVERLAP_BLOCKS=16
STEP_QUEUED=0
STEP_AHEAD=0
WORKLOAD=step
GPUS=0
GPUS_PER_NODE=1
NODE_PROCESS=0
usage() { sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) NODES=$2; shift 2 ;;
    --coll) COLL=$2; shift 2 ;;
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --step-factor) STEP=$2; shift 2 ;;
    --configs) CONFIGS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --min-iters) MIN_ITERS=$2; shift 2 ;;
    --iter-bytes) ITER_BYTES=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --policy-warmup) POLICY_WARMUP=$2; shift 2 ;;
    --policy-warmup-bytes) POLICY_WARMUP_BYTES=$2; shift 2 ;;
    --policy-min-warmup) POLICY_MIN_WARMUP=$2; shift 2 ;;
    --policy-warmup-sync) POLICY_WARMUP_SYNC=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --samples) SAMPLES=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --alt-build) ALT_BUILD=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --no-mps) MPS=0; shift ;;
    --dry-run) DRY=1; shift ;;
    --step) STEP_SPEC=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --step-warmup) STEP_WARMUP=$2; shift 2 ;;
    --gap-us) GAP_US=$2; shift 2 ;;
    --overlap-us) OVERLAP_US=$2; shift 2 ;;
    --overlap-blocks) OVERLAP_BLOCKS=$2; shift 2 ;;
    --step-queued) STEP_QUEUED=1; shift ;;
    --step-ahead) STEP_AHEAD=$2; shift 2 ;;
    --workload) WORKLOAD=$2; shift 2 ;;
    --gpus) GPUS=$2; shift 2 ;;
    --gpus-per-node) GPUS_PER_NODE=$2; shift 2 ;;
    --node-process) NODE_PROCESS=1; shift ;;
    -h|--help) usage ;;
    *) echo "emulate-nodes: unknown option '$1'" >&2; usage ;;
  esac
done
for v in "$REPS" "$ITERS" "$MIN_ITERS" "$WARMUP" "$POLICY_WARMUP" "$POLICY_MIN_WARMUP" "$STEP" "$DEVICE" \
         "$STEPS" "$STEP_WARMUP" "$OVERLAP_BLOCKS" "$STEP_AHEAD" "$GPUS" "$GPUS_PER_NODE"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "emulate-nodes: '$v' is not a number" >&2; exit 1; }
done
for v in "$GAP_US" "$OVERLAP_US"; do
  [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "emulate-nodes: '$v' is not a number of microseconds" >&2; exit 1; }
done
[ "$STEP_QUEUED" = 1 ] && [ "$STEP_AHEAD" != 0 ] &&
  { echo "emulate-nodes: --step-queued and --step-ahead exclude each other" >&2; exit 1; }
[[ -z $STEP_SPEC || $STEP_SPEC =~ ^[a-zA-Z]+:[0-9]+[KkMmGg]?(,[a-zA-Z]+:[0-9]+[KkMmGg]?)*$ ]] ||
  { echo "emulate-nodes: --step '$STEP_SPEC' is not COLL:BYTES,... (e.g. ar:16M,ag:4M)" >&2; exit 1; }
[[ $WORKLOAD =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "emulate-nodes: --workload '$WORKLOAD': letters, digits, _ . - only" >&2; exit 1; }
{ [ "$GPUS_PER_NODE" -ge 1 ] && { [ "$GPUS" = 0 ] && [ "$GPUS_PER_NODE" = 1 ] || [ "$GPUS_PER_NODE" -le "$GPUS" ]; }; } ||
  { echo "emulate-nodes: --gpus-per-node K needs --gpus D with 1 <= K <= D" >&2; exit 1; }
[ "$NODE_PROCESS" = 0 ] || [ "$GPUS" -gt 0 ] || { echo "emulate-nodes: --node-process needs --gpus D" >&2; exit 1; }
mkdir -p "$OUTDIR" || exit 1
SAMPLES=${SAMPLES:-$OUTDIR/samples.csv}
LOG=$OUTDIR/emulate-nodes.log
log() { echo "== $*" | tee -a "$LOG" >&2; }

# ---------------------------------------------------------------- configs
expanded=()
IFS=, read -r -a cfg_in <<< "$CONFIGS"
for c in "${cfg_in[@]}"; do
  case $c in
    pairs) for a in Tree Ring; do for p in LL LL128 Simple; do expanded+=("$a/$p"); done; done ;;
    *) expanded+=("$c") ;;
  esac
done
IFS=, read -r -a node_counts <<< "$NODES"
for n in "${node_counts[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] ||
    { echo "emulate-nodes: bad node count '$n'" >&2; exit 1; }
done

PLUGIN=$BUILD/libncclbpf.so
ALT_PLUGIN=${ALT_BUILD:-}/libncclbpf.so
# split_config CFG: sets c_pair (ALGO/PROTO or ""), c_pol (policy:NAME / policy+prof:NAME or ""),
# c_sync (K of ~sK, "" if none), c_wsync (K of ~wK, "" if none)
split_config() {
  local base=${1%%~*} mods=${1#"${1%%~*}"} m
  c_pair= c_pol= c_sync= c_wsync= c_noagree= c_pnull= c_pmask= c_nolog= c_alt=
  case $base in
    *@policy:*|*@policy+prof:*) c_pair=${base%%@*}; c_pol=${base#*@} ;;
    policy:*|policy+prof:*) c_pol=$base ;;
    default) ;;
    */*) c_pair=$base ;;
    *) return 1 ;;
  esac
  IFS='~' read -r -a ms <<< "${mods#\~}"
  for m in "${ms[@]}"; do
    case $m in
      s[0-9]*) c_sync=${m#s} ;;
      w[0-9]*) c_wsync=${m#w} ;;
      a0) c_noagree=1 ;;
      n) c_pnull=1 ;;
      d0) c_nolog=1 ;;
      x) c_alt=1 ;;
      m0x[0-9a-fA-F]*) c_pmask=${m#m} ;;
      "") ;;
      *) return 1 ;;
    esac
  done
  [[ -z $c_sync || $c_sync =~ ^[0-9]+$ ]] && [[ -z $c_wsync || $c_wsync =~ ^[0-9]+$ ]] &&
    [[ -z $c_pmask || $c_pmask =~ ^0x[0-9a-fA-F]+$ ]] &&
    { [[ -z $c_pnull$c_pmask ]] || [[ $c_pol == policy+prof:* ]]; } &&
    { [[ -z $c_alt ]] || [[ -n $c_pol ]]; }
}
policy_path() { # NAME or path -> object path
  case $1 in */*|*.o) echo "$1" ;; *) echo "$BUILD/policies/$1.bpf.o" ;; esac
}
need_plugin=0
for c in "${expanded[@]}"; do
  split_config "$c" || { echo "emulate-nodes: unknown config '$c'" >&2; exit 1; }
  if [ -n "$c_pol" ]; then
    need_plugin=1
    obj=$(policy_path "${c_pol#*:}")
    [ $DRY = 1 ] || [ -f "$obj" ] || { echo "emulate-nodes: $obj missing (build the policies with clang first)" >&2; exit 1; }
    [ -z "$c_alt" ] || { [ -n "${ALT_BUILD:-}" ] && { [ $DRY = 1 ] || [ -f "$ALT_PLUGIN" ]; }; } ||
      { echo "emulate-nodes: config '$c' needs --alt-build DIR with libncclbpf.so" >&2; exit 1; }
  fi
done
if [ $need_plugin = 1 ] && [ $DRY = 0 ] && [ ! -f "$PLUGIN" ]; then
  echo "emulate-nodes: $PLUGIN missing (--build DIR)" >&2; exit 1
fi

# ---------------------------------------------------------------- harness
if [ -z "$BENCH" ]; then
  BENCH=$OUTDIR/ncclbpf-gpubench
  if [ $DRY = 0 ] && [ ! -x "$BENCH" ]; then
    if [ -z "${NCCL_HOME:-}" ]; then
      NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
      [ -n "$NCCL_HOME" ] || NCCL_HOME=/usr/local/cuda
    fi
    NCCL_LIB=$(ls "$NCCL_HOME"/lib/libnccl.so* 2>/dev/null | head -1)
    [ -f "$NCCL_HOME/include/nccl.h" ] && [ -n "$NCCL_LIB" ] ||
      { echo "emulate-nodes: NCCL headers/library not found (NCCL_HOME=$NCCL_HOME)" >&2; exit 1; }
    log "building the harness against $NCCL_HOME"
    nvcc -O2 -std=c++17 -arch=sm_90 -I"$NCCL_HOME/include" -o "$BENCH" "$ROOT/bench/gpu/ncclbpf_gpubench.cu" \
      -L"$(dirname "$NCCL_LIB")" -l:"$(basename "$NCCL_LIB")" -Xlinker -rpath="$(dirname "$NCCL_LIB")" ||
      { echo "emulate-nodes: harness build failed" >&2; exit 1; }
  fi
fi

# ---------------------------------------------------------------- MPS
MPS_DIR=
stop_mps() {
  [ -n "$MPS_DIR" ] || return 0
  echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe nvidia-cuda-mps-control >/dev/null 2>&1
  for _ in $(seq 50); do [ -e "$MPS_DIR/pipe/control" ] || break; sleep 0.1; done
  cp "$MPS_DIR/log/control.log" "$OUTDIR/mps-control.log" 2>/dev/null
  rm -rf "$MPS_DIR"
  MPS_DIR=
}
trap 'stop_mps' EXIT
trap 'stop_mps; exit 130' INT TERM
if [ $MPS = 1 ] && [ $DRY = 0 ]; then
  command -v nvidia-cuda-mps-control >/dev/null ||
    { echo "emulate-nodes: nvidia-cuda-mps-control not found (or pass --no-mps)" >&2; exit 1; }
  MPS_DIR=$(mktemp -d /tmp/ncclbpf-mps.XXXXXX)
  mkdir -p "$MPS_DIR/pipe" "$MPS_DIR/log"
  export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe CUDA_MPS_LOG_DIRECTORY=$MPS_DIR/log
  if ! nvidia-cuda-mps-control -d; then
    echo "emulate-nodes: could not start the MPS daemon (needs root; or pass --no-mps)" >&2
    rm -rf "$MPS_DIR"; MPS_DIR=; exit 1
  fi
  log "MPS daemon started (pipes in $MPS_DIR/pipe)"
fi

export NCCL_NVLS_ENABLE=0 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
unset NCCL_ALGO NCCL_PROTO NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCLBPF_POLICY

# ---------------------------------------------------------------- runs
# run_one REP NODES CONFIG: one harness invocation; 0 on success.
run_one() {
  local rep=$1 nodes=$2 cfg=$3 envs=() policy="" warm=$WARMUP
  split_config "$cfg"
  if [ -n "$c_pair" ]; then
    envs+=(NCCL_ALGO="${c_pair%/*}" NCCL_PROTO="${c_pair#*/}")
  fi
  if [ -n "$c_pol" ]; then
    local obj; obj=$(policy_path "${c_pol#*:}")
    policy=$(basename "$obj" .bpf.o)
    local plug=$PLUGIN
    [ -n "$c_alt" ] && plug=$ALT_PLUGIN
    envs+=(NCCL_TUNER_PLUGIN="$plug" NCCLBPF_POLICY="$obj")
    if [[ $c_pol == policy+prof:* ]]; then
      AGREE_PORT=$((AGREE_PORT + 1))
      if [ -n "$c_noagree" ]; then
        envs+=(NCCL_PROFILER_PLUGIN="$plug" NCCLBPF_AGREE=off)
      else
        envs+=(NCCL_PROFILER_PLUGIN="$plug" NCCLBPF_AGREE=127.0.0.1:$AGREE_PORT)
      fi
      [ -n "$c_pnull" ] && envs+=(NCCLBPF_PROFILE_NULL=1)
      [ -n "$c_pmask" ] && envs+=(NCCLBPF_PROFILE_MASK="$c_pmask")
      warm=$POLICY_WARMUP
    fi
  fi
  # label: the config with ':', '/', '+', '@', '~' as '-'; a policy by its name without path
  local shown=$cfg
  if [ -n "$c_pol" ]; then
    local pname=${c_pol#*:}
    shown=${cfg/"$pname"/$policy}
  fi
  local label=${shown//[:\/+@~]/-}
  local sync=()
  if [[ $c_pol == policy+prof:* ]]; then
    # learning needs completions, not a queue the host filled far ahead of the GPU
    sync=(--warmup-sync-every "${c_wsync:-$POLICY_WARMUP_SYNC}")
    [ "$POLICY_WARMUP_BYTES" = 0 ] || sync+=(--warmup-bytes "$POLICY_WARMUP_BYTES" --min-warmup "$POLICY_MIN_WARMUP")
  fi
  [ -n "$c_sync" ] && sync+=(--sync-every "$c_sync")
  # where the ranks run: all on one GPU (every rank its own node), or the nodes on D GPUs
  local place=(--same-gpu "$DEVICE" --procs "$nodes")
  if [ "$GPUS" -gt 0 ] && [ "$NODE_PROCESS" = 1 ]; then
    place=(--procs "$nodes" --nodes "$nodes" --gpus-per-proc "$GPUS_PER_NODE" --device-count "$GPUS")
  elif [ "$GPUS" -gt 0 ]; then # one process per GPU: node n = processes n*K .. n*K+K-1
    place=(--procs "$((nodes * GPUS_PER_NODE))" --nodes "$nodes" --gpus-per-proc 1 --device-count "$GPUS")
  fi
  local args=("${sync[@]}" "${place[@]}" --coll "$COLL" --min-bytes "$MIN_BYTES"
              --max-bytes "$MAX_BYTES" --step-factor "$STEP" --warmup "$warm" --iters "$ITERS"
              --min-iters "$MIN_ITERS" --iter-bytes "$ITER_BYTES" --label "$label" --rep-base "$rep"
              --samples "$SAMPLES" --csv "$OUTDIR/summary.csv" --policy "$policy")
  if [ -n "$STEP_SPEC" ]; then
    # a training step instead of the sweep; policies learn in the timed steps themselves
    args=("${place[@]}" --step "$STEP_SPEC" --steps "$STEPS"
          --step-warmup "$STEP_WARMUP" --gap-us "$GAP_US" --overlap-us "$OVERLAP_US"
          --overlap-blocks "$OVERLAP_BLOCKS" --workload "$WORKLOAD" --label "$label" --rep-base "$rep"
          --steps-out "$OUTDIR/steps.csv" --csv "$OUTDIR/summary.csv" --policy "$policy")
    [ "$STEP_QUEUED" = 1 ] && args+=(--step-queued)
    [ "$STEP_AHEAD" != 0 ] && args+=(--step-ahead "$STEP_AHEAD")
  fi
  local runlog=$OUTDIR/logs/n$nodes-$label-r$rep.log
  # decision logs and timelines (NCCLBPF_DECISION_LOG / NCCLBPF_TRACE = DIR set by the
  # caller): one subdirectory per run
  # (a run that gets no subdirectory must not inherit the caller's DIR either: env -u)
  local var dir sub=n$nodes-$label-r$rep unsets=()
  [ -n "$STEP_SPEC" ] && sub=$WORKLOAD-$sub
  for var in NCCLBPF_DECISION_LOG NCCLBPF_TRACE; do
    dir=${!var:-}
    if [ -n "$dir" ] && [ -n "$c_pol" ] && [ -z "$c_nolog" ]; then
      [ $DRY = 1 ] || mkdir -p "$dir/$sub"
      envs+=("$var=$dir/$sub")
    elif [ -n "$dir" ]; then
      unsets+=(-u "$var")
    fi
  done
  if [ $DRY = 1 ]; then echo "env ${unsets[*]} ${envs[*]} $BENCH ${args[*]}"; return 0; fi
  mkdir -p "$OUTDIR/logs"
  local t0; t0=$(date +%s%N)
  env "${unsets[@]}" "${envs[@]}" "$BENCH" "${args[@]}" > "$runlog" 2>&1
  local rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "rep=$rep nodes=$nodes config=$cfg rc=$rc ms=$ms" >> "$OUTDIR/timing.txt"
  if [ $rc -ne 0 ] || ! grep -q "all results correct" "$runlog"; then
    log "FAILED: rep $rep, $nodes nodes, $cfg (rc $rc); tail of $runlog:"
    tail -5 "$runlog" | tee -a "$LOG" >&2
    return 1
  fi
  return 0
}

start=$(date +%s)
failures=0
AGREE_PORT=$((24000 + $$ % 16000)) # rendezvous ports of the agreement layer, one per run
if [ -n "$STEP_SPEC" ]; then
  log "testbed: nodes ${NODES}, workload $WORKLOAD: step $STEP_SPEC, $STEPS steps, gap ${GAP_US} us, overlap ${OVERLAP_US} us, ${#expanded[@]} configs, $REPS reps -> $OUTDIR/steps.csv"
else
  log "testbed: nodes ${NODES}, $COLL $MIN_BYTES..$MAX_BYTES x$STEP, ${#expanded[@]} configs, $REPS reps -> $SAMPLES"
fi
for rep in $(seq 0 $((REPS - 1))); do
  for nodes in "${node_counts[@]}"; do
    n=${#expanded[@]}
    for k in $(seq 0 $((n - 1))); do
      cfg=${expanded[$(((k + rep) % n))]}
      run_one "$rep" "$nodes" "$cfg" || failures=$((failures + 1))
    done
  done
  if [ $DRY = 0 ]; then
    el=$(( $(date +%s) - start ))
    log "rep $rep done after ${el}s (about $((el * REPS / (rep + 1)))s for all $REPS)"
  fi
done
log "done: $failures failed runs, $(( $(date +%s) - start ))s; samples in $SAMPLES"
[ $failures -eq 0 ]
