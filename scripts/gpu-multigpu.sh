#!/usr/bin/env bash
# Multi-GPU validation on one host (issue 17): emulated 2 nodes x 2 GPUs (NVLink inside a
# node, sockets over loopback between the two), and the agreement + hot reload check with
# 4 processes. Needs a prebuilt plugin (--build: libncclbpf.so, policies/*.bpf.o, ncclbpf;
# the device has no clang) and builds the harness with nvcc unless --bench is given.
#
#   scripts/gpu-multigpu.sh --build DIR [--parts sweep,net,agree] [--reps 5] [--out DIR]
#                           [--bench BIN]
#
# sweep  AllReduce 4 KiB..256 MiB, 4 ranks as 2 nodes x 2 GPUs (NCCL_HOSTID per node):
#        NCCL's default vs every Tree/Ring x LL/LL128/Simple pair vs multinode_fix vs the
#        bandit (tuner + profiler + agreement), REPS repetitions interleaved (order rotated
#        per repetition); one CSV row per timed collective (samples.csv, the offline tuner's
#        format) -> scripts/emulate_report.py.
# net    the same topology, NCCL's socket transport vs NCCL_NET_PLUGIN=ncclbpf (own TCP),
#        REPS interleaved repetitions (summary.csv: busbw per size).
# agree  4 processes, one per GPU: adaptive_channels in strict mode with decision logs (one
#        NVLink node), then `ncclbpf ctl reload --all` size_aware -> multinode_fix in a running
#        job (4 emulated nodes, so multinode_fix decides); `ncclbpf decisions` must find every rank agreeing, and every rank's
#        first multinode_fix decision must carry the same seq.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=
PARTS=sweep,net,agree
REPS=5
OUTDIR=/tmp/ncclbpf-multigpu
BENCH=
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$(cd "$2" && pwd); shift 2 ;;
    --parts) PARTS=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    *) sed -n '2,22p' "$0" >&2; exit 2 ;;
  esac
done
[ -n "$BUILD" ] && [ -f "$BUILD/libncclbpf.so" ] || { echo "gpu-multigpu: --build DIR with libncclbpf.so" >&2; exit 2; }
[[ $REPS =~ ^[0-9]+$ ]] && [ "$REPS" -ge 1 ] || { echo "gpu-multigpu: bad --reps" >&2; exit 2; }
has() { [[ ",$PARTS," == *",$1,"* ]]; }
log() { echo "== $*" >&2; }
mkdir -p "$OUTDIR"
PLUGIN=$BUILD/libncclbpf.so
POL=$BUILD/policies
NH=${NCCL_HOME:-$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)}
NL=$(ls "$NH"/lib/libnccl.so* 2>/dev/null | head -1)
[ -n "$NL" ] || { echo "gpu-multigpu: NCCL not found (NCCL_HOME)" >&2; exit 1; }
export LD_LIBRARY_PATH=$BUILD:$(dirname "$NL")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -z "$BENCH" ]; then
  BENCH=$OUTDIR/ncclbpf-gpubench
  nvcc -O2 -std=c++17 -arch=sm_90 -I"$NH/include" -o "$BENCH" "$ROOT/bench/gpu/ncclbpf_gpubench.cu" \
    -L"$(dirname "$NL")" -l:"$(basename "$NL")" -Xlinker -rpath="$(dirname "$NL")" || exit 1
fi
NGPU=$(nvidia-smi -L | wc -l)
[ "$NGPU" -ge 4 ] || { echo "gpu-multigpu: needs 4 GPUs, found $NGPU" >&2; exit 1; }
fails=0

# one run: LABEL REP CSVDIR ENV... -- HARNESS-ARGS...
run() {
  local label=$1 rep=$2 dir=$3; shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local lg=$dir/logs/$label-r$rep.log
  mkdir -p "$dir/logs"
  env "${envs[@]}" timeout 300 "$BENCH" --label "$label" --rep-base "$rep" --samples "$dir/samples.csv" \
    --csv "$dir/summary.csv" "$@" > "$lg" 2>&1
  local rc=$?
  if [ $rc -ne 0 ] || ! grep -q "all results correct" "$lg"; then
    log "FAILED: $label rep $rep (rc $rc)"; tail -5 "$lg" >&2; fails=$((fails + 1))
  fi
}

TOPO=(--procs 4 --gpus-per-proc 1 --nodes 2 --coll allreduce --min-bytes 4K --max-bytes 256M
      --step-factor 4 --iters 100 --iter-bytes 128M --min-iters 8)
AGREE_PORT=$((24000 + $$ % 4000))

if has sweep; then
  log "sweep: 2 nodes x 2 GPUs, $REPS interleaved repetitions"
  D=$OUTDIR/sweep
  cfgs=(default Tree/LL Tree/LL128 Tree/Simple Ring/LL Ring/LL128 Ring/Simple policy:multinode_fix policy+prof:bandit)
  for r in $(seq 0 $((REPS - 1))); do
    n=${#cfgs[@]}
    for i in $(seq 0 $((n - 1))); do
      c=${cfgs[$(((i + r) % n))]}
      case $c in
        default) run default "$r" "$D" -- "${TOPO[@]}" --warmup 3 ;;
        policy:*) p=${c#policy:}
          run "policy-$p" "$r" "$D" NCCL_TUNER_PLUGIN="$PLUGIN" NCCLBPF_POLICY="$POL/$p.bpf.o" -- \
            "${TOPO[@]}" --warmup 3 --policy "$p" ;;
        policy+prof:*) p=${c#policy+prof:}; AGREE_PORT=$((AGREE_PORT + 1))
          run "policy-prof-$p" "$r" "$D" NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_PROFILER_PLUGIN="$PLUGIN" \
            NCCLBPF_POLICY="$POL/$p.bpf.o" NCCLBPF_AGREE=127.0.0.1:$AGREE_PORT -- \
            "${TOPO[@]}" --warmup-sync --warmup 240 --warmup-bytes 640M --min-warmup 100 --policy "$p" ;;
        */*) run "${c%/*}-${c#*/}" "$r" "$D" NCCL_ALGO="${c%/*}" NCCL_PROTO="${c#*/}" -- "${TOPO[@]}" --warmup 3 ;;
      esac
    done
  done
  python3 "$ROOT/scripts/emulate_report.py" "$D/samples.csv" --bandit policy-prof-bandit \
    --title "{nodes} emulated nodes x 2 GPUs (4 GPUs of one host)" > "$D/report.md" 2>&1
  cat "$D/report.md"
fi

if has net; then
  log "net: socket vs ncclbpf's own TCP transport, 2 nodes x 2 GPUs"
  D=$OUTDIR/net
  for r in $(seq 0 $((REPS - 1))); do
    if [ $((r % 2)) = 0 ]; then order="socket ncclbpf"; else order="ncclbpf socket"; fi
    for c in $order; do
      if [ "$c" = socket ]; then
        run socket "$r" "$D" NCCL_NET=Socket -- "${TOPO[@]}" --warmup 3
      else
        run ncclbpf "$r" "$D" NCCL_NET_PLUGIN="$BUILD/libnccl-net-ncclbpf.so" NCCL_NET=ncclbpf -- "${TOPO[@]}" --warmup 3
      fi
    done
  done
  python3 - "$D/summary.csv" <<'EOF' | tee "$D/report.md"
import csv, statistics, sys
from collections import defaultdict
bw = defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    bw[(row["label"], int(row["bytes"]))].append(float(row["busbw_GBs"]))
sizes = sorted({b for _, b in bw})
print("| size | socket busbw GB/s | ncclbpf busbw GB/s | ncclbpf/socket |\n|---|---|---|---|")
for s in sizes:
    a = statistics.median(bw[("socket", s)]); b = statistics.median(bw[("ncclbpf", s)])
    print(f"| {s} | {a:.3f} | {b:.3f} | {b / a:.3f} |")
EOF
fi

if has agree; then
  log "agree: 4 processes, adaptive_channels strict with decision logs; then ctl reload --all"
  D=$OUTDIR/agree
  mkdir -p "$D/log1" "$D/log2" "$D/ctl"
  ENV=(NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_PROFILER_PLUGIN="$PLUGIN" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING)
  env "${ENV[@]}" NCCLBPF_POLICY="$POL/adaptive_channels.bpf.o" NCCLBPF_AGREE=127.0.0.1:$((AGREE_PORT + 100)) \
    NCCLBPF_DECISION_LOG="$D/log1" timeout 200 "$BENCH" --procs 4 --coll allreduce \
    --min-bytes 1K --max-bytes 64M --iters 200 --warmup 20 > "$D/adaptive.log" 2>&1
  echo "adaptive_channels: exit $?, $(grep -c 'all results correct' "$D/adaptive.log") checked," \
       "E-RANK-LOCAL lines: $(grep -c E-RANK-LOCAL "$D/adaptive.log")"
  grep -h "agree: comm .* closed at" "$D/adaptive.log"
  "$BUILD/ncclbpf" decisions "$D/log1"; echo "decisions exit $?"
  env "${ENV[@]}" NCCLBPF_POLICY="$POL/size_aware.bpf.o" NCCLBPF_RELOAD_AGREE=1 \
    NCCLBPF_AGREE=127.0.0.1:$((AGREE_PORT + 101)) NCCLBPF_DECISION_LOG="$D/log2" NCCLBPF_CONTROL_DIR="$D/ctl" \
    timeout 200 "$BENCH" --procs 4 --nodes 4 --coll allreduce --min-bytes 4K --max-bytes 4M \
    --step-factor 4 --iters 3000 --warmup 20 > "$D/reload.log" 2>&1 &
  B=$!
  for _ in $(seq 300); do [ "$(ls "$D/ctl" 2>/dev/null | grep -c '\.sock$')" -ge 4 ] && break; sleep 0.2; done
  sleep 3
  "$BUILD/ncclbpf" ctl --all --dir "$D/ctl" reload "$POL/multinode_fix.bpf.o" --hook tuner
  wait $B; echo "reload run: exit $?, $(grep -c 'all results correct' "$D/reload.log") checked"
  grep -h "reload version .* across ranks" "$D/reload.log"
  "$BUILD/ncclbpf" decisions "$D/log2"; echo "decisions exit $?"
  echo "first multinode_fix decision (channels 0) per rank:"
  for f in "$D"/log2/*.jsonl; do grep -m1 '"channels":0' "$f" | grep -o '"rank":[0-9]*,"seq":[0-9]*'; done
fi
log "done: $fails failed runs"
exit $((fails > 0))
