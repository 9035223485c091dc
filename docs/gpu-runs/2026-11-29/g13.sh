#!/bin/bash
# GPU call 13 (issue 28, nvidia-h200-x2: two H200s): the rest of what two GPUs allow.
#  1. The profiler in its default sampled mode with OTLP export on, against no plugin: 2 GPUs
#     as 2 nodes, AllReduce 8 B-64 MiB (every power of 2), 5 interleaved repetitions;
#     ncclbpf as tuner (size_aware) and profiler (NCCLBPF_PROFILE=coll, adaptive sampling),
#     NCCLBPF_OTLP=on to a local OTLP/HTTP sink (obs1.sh's), agreement off (size_aware reads
#     no agreed map). Overhead = plugin / default per size.
#  2. 2 nodes x 2 GPUs on the two GPUs (--gpus 2 --gpus-per-node 2 --node-process: each node one process
#     driving both GPUs, NVLink inside the node, sockets between the nodes; the two nodes
#     share the GPUs through MPS): forced-pair sweep (AllReduce 4 KiB-4 MiB, 2 reps) -> oracle
#     and offline table, then the mixed AllReduce step, 500 steps, 5 interleaved repetitions:
#     default, oracle, offline table, bandit.
# Outputs to $OUT: g13-otlp.md, g13-sink.json, g13-sweep.md, g13-report.md, g13-decisions.md,
# g13-consistency.txt, g13-data.tgz.
#   usage (device; S = g4-stage.sh's staging of a Release build):
#     cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-29/g13.sh
G=g13
. "$(dirname "$0")/preamble.sh"
E1="$E --gpus 2 --no-mps"
# 1. OTLP: a sink, then default vs the sampled profiler exporting
PORT=$((20000 + $$ % 20000))
sed -n "/^cat > \"\$W\/sink.py\" <<'PY'$/,/^PY$/p" $D/obs1.sh | sed '1d;$d' > $W/sink.py
python3 $W/sink.py $PORT $OUT/$G-sink.json & SINK=$!
sleep 1
( export NCCLBPF_PROFILE=coll NCCLBPF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT \
    OTEL_BSP_SCHEDULE_DELAY=500 OTEL_METRIC_EXPORT_INTERVAL=10000 OTEL_RESOURCE_ATTRIBUTES=obs1.run=g13
  unset NCCLBPF_PROFILE_SAMPLE NCCLBPF_DECISION_LOG
  timeout 200 $E1 --out $W/otlp --nodes 2 --coll allreduce --min-bytes 8 --max-bytes 64M --step-factor 2 \
    --iters 100 --iter-bytes 1G --min-iters 20 --policy-warmup 20 --policy-min-warmup 5 --reps 5 \
    --configs default,policy+prof:size_aware~a0 > $W/otlp.txt 2>&1; echo "otlp rc=$? $(( $(date +%s) - t0 )) s" )
tail -1 $W/otlp.txt
python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$PORT/done').read()"
wait $SINK
python3 $S/scripts/emulate_report.py $W/otlp/samples.csv --bandit policy-prof-size_aware-a0 \
  --title "{nodes} nodes x 1 GPU (2 x H200), default vs size_aware + sampled profiler + OTLP export" > $OUT/$G-otlp.md 2>&1
python3 -c "import json; s=json.load(open('$OUT/$G-sink.json')); print('sink:', {k: s[k] for k in ('requests','traces_requests','metrics_requests','spans','bad_payloads')})" | tee -a $OUT/$G-otlp.md
grep -v '^$' $OUT/$G-otlp.md | head -40
# 2. 2 nodes x 2 GPUs
E="$E --gpus 2 --gpus-per-node 2 --node-process"
stage sweep 150 --nodes 2 --coll allreduce --min-bytes 4K --max-bytes 4M --step-factor 4 --reps 2 --iters 100 \
  --configs default,Tree/LL,Tree/Simple,Ring/LL,Ring/Simple
python3 $S/scripts/emulate_report.py $W/st/samples.csv --title "{nodes} nodes x 2 GPUs on 2 x H200" > $OUT/$G-sweep.md 2>&1
$B/ncclbpf tune --alpha 0.5 --min-delta -1 --gain-small 0 --gain-large 0 --min-samples 2 \
  -o $W/oracle.bpf.o --json $W/st/samples.csv > $W/oracle.json 2> $W/oracle.err || { echo "ORACLE FAILED"; cat $W/oracle.err; }
$B/ncclbpf tune -o $W/tuned.bpf.o --json $W/st/samples.csv > $W/tuned.json 2> $W/tuned.err || { echo "TUNE FAILED"; cat $W/tuned.err; }
O=policy:$W/oracle.bpf.o; T=policy:$W/tuned.bpf.o
stage mixed 200 --nodes 2 --reps 5 --steps 500 --step $MIXED --workload mixed --configs default,$O,$T,$N
cp $W/oracle.json $W/tuned.json $OUT/ 2>/dev/null
finish policy-prof-bandit
