#!/bin/bash
# GPU call 15 (issue 28, nvidia-h200-x2), after g12-g14:
#  1. The plugin's overhead on 2 GPUs as 2 nodes, split (g14: noop + sampled profiler + OTLP
#     1.03-1.15x the default at 8 B-64 MiB): default; noop as tuner only; + the profiler in its
#     default sampled mode (NCCLBPF_PROFILE=coll); + OTLP export (obs1.sh's sink). AllReduce
#     8 B-64 MiB every 4x, 5 repetitions, the four configs interleaved within each.
#  2. The oracles again: g12 and g14 swept AllReduce, AllGather and ReduceScatter in one run,
#     and NCCL refuses NCCL_ALGO=Tree for AllGather/ReduceScatter, so their Tree runs failed
#     and their oracles had no Tree pair. Here AllReduce with Tree and Ring pairs,
#     AllGather/ReduceScatter with Ring pairs, separately; then the mixed and FSDP steps
#     (500 steps, 5 reps: default, oracle, offline table, bandit), on 2 GPUs as 2 nodes and on
#     2 nodes x 2 GPUs (a process per GPU).
# Outputs to $OUT: g15-overhead.md, g15-sink.json, g15-{t1,t2}-sweep.md, g15-{t1,t2}-report.md,
# g15-{t1,t2}-decisions.md, g15-{t1,t2}-consistency.txt, g15-{t1,t2}-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g15.sh
G=g15
. "$(dirname "$0")/preamble.sh"
E0=$E
# 1. the overhead, split
PORT=$((20000 + $$ % 20000))
sed -n "/^cat > \"\$W\/sink.py\" <<'PY'$/,/^PY$/p" $D/obs1.sh | sed '1d;$d' > $W/sink.py
python3 $W/sink.py $PORT $OUT/$G-sink.json & SINK=$!
sleep 1
OV="--gpus 2 --no-mps --nodes 2 --coll allreduce --min-bytes 8 --max-bytes 64M --step-factor 4 --iters 100
    --iter-bytes 1G --min-iters 20 --policy-warmup 20 --policy-min-warmup 5 --reps 1"
(
  export NCCLBPF_PROFILE=coll; unset NCCLBPF_PROFILE_SAMPLE NCCLBPF_DECISION_LOG
  for r in 0 1 2 3 4; do
    one() { timeout 60 $E0 $OV --out $W/ov-$1-r$r --configs $2 > $W/ov-$1-r$r.txt 2>&1 || echo "ov $1 r$r failed"; }
    otlp() { NCCLBPF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT OTEL_BSP_SCHEDULE_DELAY=500 \
      OTEL_METRIC_EXPORT_INTERVAL=10000 OTEL_RESOURCE_ATTRIBUTES=obs1.run=g15-r$r one otlp policy+prof:noop~a0; }
    if [ $((r % 2)) = 0 ]; then one a default,policy:noop,policy+prof:noop~a0; otlp
    else otlp; one a policy+prof:noop~a0,policy:noop,default; fi
  done
)
python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$PORT/done').read()"
wait $SINK
{ head -1 $W/ov-a-r0/samples.csv
  for r in 0 1 2 3 4; do
    awk -F, -v OFS=, -v r=$r 'NR>1 {$11=r; print}' $W/ov-a-r$r/samples.csv
    awk -F, -v OFS=, -v r=$r 'NR>1 {$10="noop+prof+otlp"; $11=r; print}' $W/ov-otlp-r$r/samples.csv
  done; } > $W/overhead.csv
echo "overhead stage $(( $(date +%s) - t0 )) s"
{ echo "## g15: the plugin's overhead, split (2 x H200 as 2 nodes, AllReduce, 5 reps)"
  python3 $D/overhead_table.py $W/overhead.csv default policy-noop policy-prof-noop-a0 noop+prof+otlp
  python3 -c "import json; s=json.load(open('$OUT/$G-sink.json')); print('\nsink:', {k: s[k] for k in ('requests','traces_requests','metrics_requests','spans','bad_payloads')})"
} > $OUT/$G-overhead.md 2>&1; cat $OUT/$G-overhead.md
gzip -c $W/overhead.csv > $OUT/$G-overhead.csv.gz
# 2. sweeps (Tree only for AllReduce), oracle, offline table, steps; per topology
topo() { # NAME PLACEMENT...
  local t=$1; shift
  E="$E0 $*"
  rm -rf $W/st $W/declog; mkdir -p $W/declog
  stage $t-sweep-ar 120 --nodes 2 --coll allreduce --min-bytes 4K --max-bytes 4M --step-factor 4 --reps 2 \
    --iters 100 --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple
  stage $t-sweep-agrs 120 --nodes 2 --coll allgather,reducescatter --min-bytes 256K --max-bytes 4M --step-factor 4 \
    --reps 2 --iters 100 --configs default,Ring/LL,Ring/Simple
  python3 $S/scripts/emulate_report.py $W/st/samples.csv --title "{nodes} nodes, $t" > $OUT/$G-$t-sweep.md 2>&1
  $B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
    -o $W/oracle.bpf.o --json $W/st/samples.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; }
  $B/ncclbpf tune -o $W/tuned.bpf.o --json $W/st/samples.csv > $W/tuned.json 2> $W/tuned.err || { echo "TUNE FAILED"; cat $W/tuned.err; }
  O=policy:$W/oracle.bpf.o; T=policy:$W/tuned.bpf.o
  stage $t-mixed 200 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$T,$N
  stage $t-fsdp 200 --nodes 2 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$T,$N
  G=$G-$t finish policy-prof-bandit
  mkdir -p $W/keep-$t; mv $W/*.txt $W/oracle.json $W/tuned.json $W/keep-$t/ 2>/dev/null
}
topo t1 --gpus 2 --no-mps
topo t2 --gpus 2 --gpus-per-node 2
echo "g15 total $(( $(date +%s) - t0 )) s"
