# Sourced by the GPU call scripts from g11 on (the steps g5-g10 each repeated): checks the
# staging (g4-stage.sh), builds the harness, builds the static oracle from g1's forced-pair
# sweep, and defines E (emulate-nodes.sh with the harness), O (the oracle), N (the bandit),
# MIXED, FSDP, stage() and finish(). Needs G (the call's name) set; outputs under $OUT.
set -u
export NCCL_NVLS_ENABLE=0
S=$PWD; B=$S/build; W=/tmp/$G; rm -rf $W; mkdir -p $W ${OUT:=/tmp/$G-out}; D=$S/docs/gpu-runs/2026-11-29
[ -f $B/libncclbpf.so ] && [ -x $B/ncclbpf ] && [ -f $B/policies/bandit.bpf.o ] || { echo "$G: no Release build in $B"; exit 1; }
nvidia-smi -L; date -u
export NCCL_HOME=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')
NL=$(ls $NCCL_HOME/lib/libnccl.so* | head -1)
t0=$(date +%s)
nvcc -O2 -std=c++17 -arch=sm_90 -I$NCCL_HOME/include -o $W/gb $S/bench/gpu/ncclbpf_gpubench.cu \
  -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || { echo "HARNESS BUILD FAILED"; exit 1; }
gzip -dc $D/g1-sweep.csv.gz > $W/sweep.csv
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/sweep.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; exit 1; }
export NCCLBPF_DECISION_LOG=$W/declog; mkdir -p $W/declog
E="$S/scripts/emulate-nodes.sh --bench $W/gb --build $B --out $W/st"
O=policy:$W/oracle.bpf.o; N=policy+prof:$B/policies/bandit.bpf.o
MIXED="ar:4M,ar:1M,ar:256K,ar:64K,ar:16K,ar:4K"
FSDP="ag:4M,ag:1M,ag:256K,ag:256K,rs:256K,ag:1M,rs:1M,ag:4M,rs:4M"
stage() { # NAME TIMEOUT ARGS...: one emulate-nodes.sh run
  local name=$1 to=$2; shift 2
  timeout $to $E "$@" > $W/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 )) s"; tail -1 $W/$name.txt
}
finish() { # BANDIT_LABEL: reports, decision-log consistency, the data
  python3 $S/scripts/emulate_report.py --steps $W/st/steps.csv --bandit $1 \
    --oracle policy-oracle > $OUT/$G-report.md 2>&1
  python3 $D/band_decisions.py $W/declog --max-explore 80 > $OUT/$G-decisions.md 2>&1; echo "band_decisions rc=$?"
  for d in $W/declog/*/; do d=${d%/}; echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -1)"; done > $OUT/$G-consistency.txt
  echo "consistent: $(grep -c 'consistent$' $OUT/$G-consistency.txt) of $(wc -l < $OUT/$G-consistency.txt)"
  grep -v ': .*consistent$' $OUT/$G-consistency.txt | head
  grep -v '^Per repetition\|^Cost of learning\|^$' $OUT/$G-report.md
  grep -h 'FAILED' $W/*.txt | head
  tar czf $OUT/$G-data.tgz -C $W st/steps.csv st/timing.txt declog oracle.json $(cd $W && ls *.txt) 2>/dev/null
  ls -la $OUT; echo "total $(( $(date +%s) - t0 )) s"
}
