#!/usr/bin/env bash
# Net plugin on the one-GPU multi-node testbed (scripts/emulate-nodes.sh: every rank its own
# emulated node, NCCL_HOSTID per rank, sockets on lo, IB and NVLS off, MPS), so all traffic
# of an AllReduce goes through the net transport under test. Repetitions are interleaved:
# repetition r runs every config in an order rotated by r, each a fresh set of processes.
#
#   bench/gpu/net-emulate.sh [--configs socket,ncclbpf] [--nodes 2,4] [--reps 5]
#       [--min-bytes 4K] [--max-bytes 256M] [--step-factor 4] [--iters 20] [--warmup 5]
#       [--out DIR] [--build DIR] [--bench BIN] [--only-net] [--dry-run]
#
# Configs:
#   socket       NCCL's internal socket transport (no net plugin)
#   ncclbpf      NCCL_NET_PLUGIN=BUILD/libnccl-net-ncclbpf.so (own TCP transport)
#   standalone   NCCL_NET_PLUGIN=BUILD/libnccl-net-ncclbpf-tcp.so (the same transport built
#                alone: no runtime, no hooks, no wrapper)
#   wrap         NCCL_NET_PLUGIN=BUILD/libnccl-net-ncclbpf.so with
#                NCCLBPF_NET_INNER=BUILD/libnccl-net-ncclbpf-tcp.so (wrap mode around it)
# --only-net: NCCL_TUNER_PLUGIN=none NCCL_PROFILER_PLUGIN=none in every config (through
#   NCCL_CONF_FILE=OUT/only-net.conf, as emulate-nodes.sh unsets both). Without it,
#   NCCL 2.28+ also takes the tuner and profiler from the net plugin's library when it finds
#   none of its own, so ncclbpf/wrap run ncclbpf's tuner and profiler too (no policy: they
#   pass through) while socket/standalone run none; with it, only the net path differs.
# Then bench/gpu/net_report.py OUT prints the busbw tables (medians, ratios) and the paired
# ratios per repetition with bootstrap intervals and a verdict against the 0.99 budget.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CONFIGS=socket,ncclbpf
NODES=2,4
REPS=5
MIN_BYTES=4K
MAX_BYTES=256M
STEP=4
ITERS=20
WARMUP=5
OUT=/tmp/ncclbpf-net-emu
BUILD=$ROOT/build
BENCH=
DRY=()
ONLY_NET=0
while [ $# -gt 0 ]; do
  case $1 in
    --configs) CONFIGS=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --step-factor) STEP=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    --only-net) ONLY_NET=1; shift ;;
    --dry-run) DRY=(--dry-run); shift ;;
    *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1 ;;
  esac
done
IFS=, read -r -a cfgs <<< "$CONFIGS"
for c in "${cfgs[@]}"; do
  case $c in socket|ncclbpf|standalone|wrap) ;; *) echo "net-emulate: unknown config '$c'" >&2; exit 1 ;; esac
  case $c in
    ncclbpf|wrap) [ ${#DRY[@]} = 1 ] || [ -f "$BUILD/libnccl-net-ncclbpf.so" ] ||
      { echo "net-emulate: $BUILD/libnccl-net-ncclbpf.so missing" >&2; exit 1; } ;;
  esac
  case $c in
    standalone|wrap) [ ${#DRY[@]} = 1 ] || [ -f "$BUILD/libnccl-net-ncclbpf-tcp.so" ] ||
      { echo "net-emulate: $BUILD/libnccl-net-ncclbpf-tcp.so missing (make ncclbpf_net_tcp)" >&2; exit 1; } ;;
  esac
done
mkdir -p "$OUT"
ONLY_NET_CONF=$(cd "$OUT" && pwd)/only-net.conf
[ $ONLY_NET = 1 ] && printf 'NCCL_TUNER_PLUGIN=none\nNCCL_PROFILER_PLUGIN=none\n' > "$ONLY_NET_CONF"
# one harness for every invocation (emulate-nodes.sh would build one per output directory)
if [ -z "$BENCH" ]; then
  BENCH=$OUT/ncclbpf-gpubench
  if [ ${#DRY[@]} = 0 ] && [ ! -x "$BENCH" ]; then
    if [ -z "${NCCL_HOME:-}" ]; then
      NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
      [ -n "$NCCL_HOME" ] || NCCL_HOME=/usr/local/cuda
    fi
    NCCL_LIB=$(ls "$NCCL_HOME"/lib/libnccl.so* 2>/dev/null | head -1)
    [ -n "$NCCL_LIB" ] || { echo "net-emulate: no libnccl under $NCCL_HOME/lib" >&2; exit 1; }
    echo "== building the harness against $NCCL_HOME" >&2
    nvcc -O2 -std=c++17 -arch=sm_90 -I"$NCCL_HOME/include" -o "$BENCH" "$ROOT/bench/gpu/ncclbpf_gpubench.cu" \
      -L"$(dirname "$NCCL_LIB")" -l:"$(basename "$NCCL_LIB")" -Xlinker -rpath="$(dirname "$NCCL_LIB")" ||
      { echo "net-emulate: harness build failed" >&2; exit 1; }
  fi
fi
unset NCCL_NET_PLUGIN NCCLBPF_NET_INNER NCCL_NET
start=$(date +%s)
fail=0
for rep in $(seq 0 $((REPS - 1))); do
  n=${#cfgs[@]}
  for k in $(seq 0 $((n - 1))); do
    cfg=${cfgs[$(((k + rep) % n))]}
    envs=(NCCL_DEBUG="${NCCL_DEBUG:-WARN}")
    # through nccl.conf: emulate-nodes.sh unsets NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN, and
    # NCCL copies NCCL_CONF_FILE's lines into the environment where a variable is unset
    [ $ONLY_NET = 1 ] && envs+=(NCCL_CONF_FILE="$ONLY_NET_CONF")
    case $cfg in
      socket) envs+=(NCCL_NET=Socket) ;;
      ncclbpf) envs+=(NCCL_NET_PLUGIN="$BUILD/libnccl-net-ncclbpf.so" NCCL_NET=ncclbpf) ;;
      standalone) envs+=(NCCL_NET_PLUGIN="$BUILD/libnccl-net-ncclbpf-tcp.so" NCCL_NET=ncclbpf-tcp) ;;
      wrap) envs+=(NCCL_NET_PLUGIN="$BUILD/libnccl-net-ncclbpf.so" NCCL_NET=ncclbpf
                   NCCLBPF_NET_INNER="$BUILD/libnccl-net-ncclbpf-tcp.so") ;;
    esac
    echo "== rep $rep config $cfg: ${envs[*]}" >&2
    env "${envs[@]}" "$ROOT/scripts/emulate-nodes.sh" "${DRY[@]}" --nodes "$NODES" --configs default \
      --reps 1 --min-bytes "$MIN_BYTES" --max-bytes "$MAX_BYTES" --step-factor "$STEP" \
      --iters "$ITERS" --min-iters 5 --warmup "$WARMUP" --build "$BUILD" --bench "$BENCH" \
      --out "$OUT/$cfg/r$rep" || fail=$((fail + 1))
  done
  echo "== rep $rep done after $(( $(date +%s) - start ))s" >&2
done
echo "== net-emulate: $fail failed invocations, $(( $(date +%s) - start ))s; report: python3 $ROOT/bench/gpu/net_report.py $OUT" >&2
[ $fail -eq 0 ]
