#!/usr/bin/env bash
# Real-NCCL check of the profiler shim on a 2-GPU machine (run from the repo root, $OUT set):
# full-mode timeline through NCCL's real profiler ABI, then the adaptive_channels loop.
set -x
export NCCL_NVLS_ENABLE=0
# adaptive_channels_local (the rank-local predecessor of policies/adaptive_channels, now a
# test program) decides from rank-local latency, so the verifier rejects it by default
# (E-RANK-LOCAL); this script reproduces the multi-rank hang that motivated that check
# (docs/results.md 1.7), so it opts in.
export NCCLBPF_RANK_LOCAL=allow
NCCL_HOME=$(python3 -c 'import nvidia.nccl,os;print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1); echo "NCCL lib $NL"
export LD_LIBRARY_PATH=$(dirname $NL)
strings $NL | grep -m1 'NCCL version'
# The GPU machine may have no clang (the CMake build needs it for policies): build the
# library directly; the policy object comes from a local build (POLICY_DIR, carried).
mkdir -p build-dev
gcc -O2 -g -fPIC -shared -fvisibility=hidden -std=gnu11 -Wall -Iinclude -Isrc \
  src/isa/*.c src/loader/*.c src/maps/*.c src/verifier/*.c src/vm/*.c src/runtime/*.c \
  src/agree/*.c src/plugin/*.c src/plugin/*/*.c -o build-dev/libncclbpf.so -lpthread -ldl -Wl,--no-undefined -Wl,-z,nodelete || exit 1
POLICY_DIR=${POLICY_DIR:-build-profiler/tests/profiler/progs}
ls -la build-dev/libncclbpf.so $POLICY_DIR/adaptive_channels_local.bpf.o
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o /tmp/gb bench/gpu/ncclbpf_gpubench.cu -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || exit 1
P=$PWD/build-dev/libncclbpf.so
mkdir -p $OUT/tr $OUT/tl
[ -n "$SKIP_GB" ] || NCCL_PROFILER_PLUGIN=$P NCCLBPF_TRACE=$OUT/tr NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE /tmp/gb --procs 2 --min-bytes 1K --max-bytes 1M --step-factor 32 --warmup 2 --iters 10 > $OUT/full.log 2>&1; echo rc=$?
grep -E 'ncclbpf|rror|correct' $OUT/full.log | head -20
for f in $OUT/tr/*.jsonl; do echo "$f: $(wc -l < $f) lines, $(grep -c coll_done $f) coll_done, $(grep coll_done $f | grep -vc '"gpu_ns":0,') with gpu_ns"; grep -m2 coll_done $f; grep -o '"type":"[A-Za-z]*"' $f | sort | uniq -c; done
[ -n "$SKIP_GB" ] || NCCL_TUNER_PLUGIN=$P NCCL_PROFILER_PLUGIN=$P NCCLBPF_POLICY=$PWD/$POLICY_DIR/adaptive_channels_local.bpf.o NCCLBPF_PROFILE=coll NCCLBPF_TRACE=$OUT/tl NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,PROFILE /tmp/gb --procs 2 --min-bytes 64M --max-bytes 64M --warmup 2 --iters 120 > $OUT/loop.log 2>&1; echo rc=$?
grep -E 'ncclbpf' $OUT/loop.log | head -12
for f in $OUT/tl/*.jsonl; do grep coll_done $f | grep -o '"nch":[0-9]*' | uniq -c | head -30; grep coll_done $f | awk -F'"gpu_ns":' 'NR%10==0{split($2,a,",");print a[1]}' | tr '\n' ' '; echo; done
# Real closed loop: torch all_reduce with a synchronize per step (feedback before the next
# decision); prints the channel count NCCL ran, every 10 collectives, and GPU time.
mkdir -p $OUT/tt
NCCL_TUNER_PLUGIN=$P NCCL_PROFILER_PLUGIN=$P NCCLBPF_POLICY=$PWD/$POLICY_DIR/adaptive_channels_local.bpf.o \
  NCCLBPF_PROFILE=coll NCCLBPF_TRACE=$OUT/tt NCCL_DEBUG=WARN \
  python3 tests/profiler/gpu_loop.py 200 $((64<<20)) > $OUT/torch.log 2>&1; echo torch rc=$?
tail -3 $OUT/torch.log
for f in $OUT/tt/*.jsonl; do
  echo "$f: $(grep -c coll_done $f) collectives; nch / gpu_us every 10 (64 MiB only):"
  grep coll_done $f | grep '"bytes":67108864' | awk -F'"nch":' 'NR%10==1{split($2,a,","); n=a[1]; split($0,b,"\"gpu_ns\":"); split(b[2],c,","); printf "%s/%.0f ", n, c[1]/1000}'; echo
done
