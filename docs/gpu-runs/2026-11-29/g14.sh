#!/bin/bash
# GPU call 14 (issue 28, nvidia-h200-x2), after g13:
#  1. OTLP overhead against no plugin, done right: g13 ran size_aware as the tuner, whose own
#     decisions differ from NCCL's (1.5-2x at 256-512 KiB, 0.7x at 16 KiB): that measured the
#     policy, not the profiler. Here the tuner is noop (keeps NCCL's choice), profiler in its
#     default sampled mode, OTLP export on to obs1.sh's sink: 2 GPUs as 2 nodes, AllReduce
#     8 B-64 MiB (every power of 2), 5 interleaved repetitions, vs default (no plugin).
#  2. 2 nodes x 2 GPUs, one process per GPU (as PyTorch runs them: 4 processes, node n's on
#     GPUs 0 and 1, MPS shares each GPU between the nodes): forced-pair sweep (AllReduce
#     4 KiB-4 MiB, AllGather/ReduceScatter 256 KiB-4 MiB, 2 reps) -> oracle and offline
#     table; the mixed AllReduce step and the FSDP step, 500 steps, 5 interleaved reps:
#     default, oracle, offline table, bandit.
#  3. What a process driving two GPUs of one communicator sees (g13: every rank fell back at
#     collective 0): the bandit, 2 nodes x 2 GPUs, --node-process, 50 steps, NCCL_DEBUG=WARN.
# Outputs to $OUT: g14-otlp.md, g14-sink.json, g14-sweep.md, g14-report.md,
# g14-decisions.md, g14-consistency.txt, g14-nodeproc.txt, g14-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g14.sh
G=g14
. "$(dirname "$0")/preamble.sh"
E0=$E
# 1. OTLP
PORT=$((20000 + $$ % 20000))
sed -n "/^cat > \"\$W\/sink.py\" <<'PY'$/,/^PY$/p" $D/obs1.sh | sed '1d;$d' > $W/sink.py
python3 $W/sink.py $PORT $OUT/$G-sink.json & SINK=$!
sleep 1
( export NCCLBPF_PROFILE=coll NCCLBPF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT \
    OTEL_BSP_SCHEDULE_DELAY=500 OTEL_METRIC_EXPORT_INTERVAL=10000 OTEL_RESOURCE_ATTRIBUTES=obs1.run=g14
  unset NCCLBPF_PROFILE_SAMPLE NCCLBPF_DECISION_LOG
  timeout 200 $E0 --gpus 2 --no-mps --out $W/otlp --nodes 2 --coll allreduce --min-bytes 8 --max-bytes 64M \
    --step-factor 2 --iters 100 --iter-bytes 1G --min-iters 20 --policy-warmup 20 --policy-min-warmup 5 \
    --reps 5 --configs default,policy+prof:noop~a0 > $W/otlp.txt 2>&1; echo "otlp rc=$? $(( $(date +%s) - t0 )) s" )
tail -1 $W/otlp.txt
python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$PORT/done').read()"
wait $SINK
python3 $S/scripts/emulate_report.py $W/otlp/samples.csv --bandit policy-prof-noop-a0 \
  --title "{nodes} nodes x 1 GPU (2 x H200), default vs noop + sampled profiler + OTLP export" > $OUT/$G-otlp.md 2>&1
python3 -c "import json; s=json.load(open('$OUT/$G-sink.json')); print('sink:', {k: s[k] for k in ('requests','traces_requests','metrics_requests','spans','bad_payloads')})" | tee -a $OUT/$G-otlp.md
grep -v '^$' $OUT/$G-otlp.md | head -40
# 3. (short, before the long stage) a process driving two GPUs of one communicator
NCCL_DEBUG=WARN NCCLBPF_DECISION_LOG=$W/npdeclog timeout 60 $E0 --gpus 2 --gpus-per-node 2 --node-process \
  --out $W/np --nodes 2 --reps 1 --steps 50 --step $MIXED --workload nodeproc --configs $N > $W/np.txt 2>&1
echo "nodeproc rc=$?"
{ tail -3 $W/np.txt; grep -h "ncclbpf\|agree" $W/np/logs/*.log | sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -30
  for d in $W/npdeclog/*/; do echo "$(basename $d): $($B/ncclbpf decisions $d 2>&1 | tail -2 | tr '\n' ' ')"; done
  head -c 600 $W/npdeclog/*/*.jsonl; } > $OUT/$G-nodeproc.txt 2>&1
head -40 $OUT/$G-nodeproc.txt
# 2. 2 nodes x 2 GPUs, one process per GPU
E="$E0 --gpus 2 --gpus-per-node 2"
stage sweep 200 --nodes 2 --coll allreduce,allgather,reducescatter --min-bytes 4K --max-bytes 4M --step-factor 4 \
  --reps 2 --iters 100 --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple
python3 $S/scripts/emulate_report.py $W/st/samples.csv --title "{nodes} nodes x 2 GPUs on 2 x H200, a process per GPU" > $OUT/$G-sweep.md 2>&1
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/st/samples.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; }
$B/ncclbpf tune -o $W/tuned.bpf.o --json $W/st/samples.csv > $W/tuned.json 2> $W/tuned.err || { echo "TUNE FAILED"; cat $W/tuned.err; }
O=policy:$W/oracle.bpf.o; T=policy:$W/tuned.bpf.o
stage mixed 200 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$T,$N
stage fsdp 200 --nodes 2 --reps 5 --steps 500 --step $FSDP --workload fsdp --configs default,$O,$T,$N
cp $W/oracle.json $OUT/$G-oracle.json; cp $W/tuned.json $OUT/$G-tuned.json
finish policy-prof-bandit
