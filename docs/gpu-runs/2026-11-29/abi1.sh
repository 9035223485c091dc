#!/bin/bash
# GPU call ABI1 (issue 25; one H200, 2 ranks as 2 emulated nodes, PyTorch + NCCL 2.28.9): the
# NCCL call paths PyTorch drives, under ncclbpf as tuner + profiler with rank agreement -
# eager, grouped mixed types (one NCCL group: 3 all_reduce, all_gather_into_tensor,
# reduce_scatter_tensor), uneven all_gather (a group of ncclBroadcast), a CUDA graph
# (captured once, replayed, eager collectives between) - with adaptive_channels and with the
# bandit, then the bandit under NCCL_ALGO=Ring (a forced choice it must not override). Every
# result element is checked by scripts/gpu_torch_paths.py; decision logs by `ncclbpf
# decisions` (exit 0: every rank tuned the same collectives in the same order, identically).
#
# usage (repository root, device): docs/gpu-runs/2026-11-29/abi1.sh [BUILD_DIR]
#   BUILD_DIR: a build of this tree with the policies (.bpf.o: built where clang is; the
#   device has none), default gpuwork/build. Writes $OUT/abi1*.txt ($OUT: /tmp/abi1 unless
#   set). About 2 minutes (each run at most 75 s).
set -u
B=${1:-$PWD/gpuwork/build}; B=$(cd "$B" && pwd)
OUT=${OUT:-/tmp/abi1}; mkdir -p "$OUT"
W=/tmp/abi1-work; rm -rf "$W"; mkdir -p "$W"
date -u | tee "$OUT/abi1.txt"
for f in libncclbpf.so ncclbpf policies/adaptive_channels.bpf.o policies/bandit.bpf.o; do
  [ -e "$B/$f" ] || { echo "missing $B/$f" | tee -a "$OUT/abi1.txt"; exit 1; }
done
python3 -c "import torch; print('torch', torch.__version__, 'NCCL', torch.cuda.nccl.version())" 2>&1 | tee -a "$OUT/abi1.txt"
export NCCL_NVLS_ENABLE=0 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo

# MPS: the two ranks' kernels run concurrently on the one GPU (without it they time-slice)
MPS_DIR=
# shellcheck disable=SC2317  # called by the EXIT trap
stop_mps() {
  [ -n "$MPS_DIR" ] || return 0
  echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe nvidia-cuda-mps-control >/dev/null 2>&1
  sleep 1; rm -rf "$MPS_DIR"; MPS_DIR=
}
trap stop_mps EXIT
# (no pipe here: the exports must stay in this shell)
if command -v nvidia-cuda-mps-control >/dev/null; then
  MPS_DIR=$(mktemp -d /tmp/abi1-mps.XXXXXX); mkdir -p "$MPS_DIR/pipe" "$MPS_DIR/log"
  export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe CUDA_MPS_LOG_DIRECTORY=$MPS_DIR/log
  if nvidia-cuda-mps-control -d >>"$OUT/abi1.txt" 2>&1; then echo "MPS on"
  else echo "MPS not started: time-sliced"; MPS_DIR=; unset CUDA_MPS_PIPE_DIRECTORY; fi
else
  echo "no nvidia-cuda-mps-control: time-sliced"
fi >>"$OUT/abi1.txt"
tail -1 "$OUT/abi1.txt"

fail=0
# run NAME POLICY [VAR=VALUE ...]
run() {
  local name=$1 pol=$2; shift 2
  local L=$W/$name; mkdir -p "$L/log"
  local port=$((29760 + RANDOM % 200)) pport=$((29960 + RANDOM % 30))
  echo "== $name: $(basename "$pol") $*" | tee -a "$OUT/abi1.txt"
  env "$@" NCCL_TUNER_PLUGIN="$B/libncclbpf.so" NCCL_PROFILER_PLUGIN="$B/libncclbpf.so" \
    NCCLBPF_POLICY="$pol" NCCLBPF_DECISION_LOG="$L/log" NCCLBPF_AGREE="127.0.0.1:$port" \
    PATHS_PORT=$pport NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
    timeout 75 python3 scripts/gpu_torch_paths.py 2 30 60 > "$L/out.txt" 2>&1
  local rc=$?
  cp "$L/out.txt" "$OUT/abi1-$name.log"
  {
    echo "python rc=$rc"
    grep -E "^rank [0-9] path|paths correct|path\(s\) FAILED" "$L/out.txt"
    grep -o "ncclbpf: tuner: ncclTunerPlugin_v[0-9] ([^)]*)" "$L/out.txt" | sort | uniq -c
    grep -o "ncclbpf: attached [^ ]*" "$L/out.txt" | sort | uniq -c
    grep -E "agree: comm .* closed at" "$L/out.txt" | sed 's/^.*agree: /agree: /' | sort | uniq -c
    grep -c "agreement impossible" "$L/out.txt" | sed 's/^/"agreement impossible" lines: /'
    grep -o "was not applied: [^;]*" "$L/out.txt" | sort | uniq -c
    grep -o "channel count [a-z ]*" "$L/out.txt" | sort | uniq -c
    "$B/ncclbpf" decisions "$L/log"; echo "decisions rc=$?"
    echo "decision sources: $(cat "$L"/log/*.jsonl 2>/dev/null | grep -o '"src":"[a-z]*"' | sort | uniq -c | tr -s ' \n' ' ')"
  } 2>&1 | tee -a "$OUT/abi1.txt"
  [ $rc -eq 0 ] || fail=1
  "$B/ncclbpf" decisions -q "$L/log" >/dev/null 2>&1 || fail=1
  # NCCL_ALGO forced: no decision may name another algorithm (a policy never overrides it)
  case " $* " in *" NCCL_ALGO=Ring "*)
    local other
    other=$(cat "$L"/log/*.jsonl | grep -o '"algo":"[^"]*"' | grep -vc '"algo":"Ring"')
    echo "decisions naming an algorithm other than Ring under NCCL_ALGO=Ring: $other" | tee -a "$OUT/abi1.txt"
    [ "$other" = 0 ] || fail=1
    # (src env: NCCL's choice kept among Ring's; a bandit that picks a Ring protocol
    # itself logs src policy - so this count is reported, not required)
    echo "decisions with src env: $(cat "$L"/log/*.jsonl | grep -c '"src":"env"')" | tee -a "$OUT/abi1.txt"
  esac
}
run adaptive "$B/policies/adaptive_channels.bpf.o"
run bandit "$B/policies/bandit.bpf.o"
run bandit-ring "$B/policies/bandit.bpf.o" NCCL_ALGO=Ring PATHS=eager,grouped,graph
echo "abi1: $([ $fail = 0 ] && echo 'all runs correct and consistent' || echo FAILED)" | tee -a "$OUT/abi1.txt"
exit $fail
