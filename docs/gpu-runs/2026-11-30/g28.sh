#!/bin/bash
# GPU call 28 (issue 28, nvidia-h200-x2): where OTLP export's cost on 2 GPUs comes from
# (results 20.7: 4-8 % at 128 B-512 KiB). g27's split with the exporter at two schedules:
# default; the noop tuner + the sampled profiler (NCCLBPF_PROFILE=coll); + OTLP export every
# 500 ms (OTEL_BSP_SCHEDULE_DELAY=500, as g27); + OTLP export every 5 s (5000). If the cost
# falls with the schedule it is the exporter's work, not the per-collective path. 2 GPUs as 2
# nodes, AllReduce 8 B-64 MiB every 4x, 100 iterations per size, 8 interleaved repetitions.
# Outputs to $OUT: g28-overhead.md, g28-overhead.csv.gz, g28-sink.json.
#   usage (device; S = g4-stage.sh's staging of a Release build, this directory copied to
#   S/docs/gpu-runs/2026-11-30):  cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g28.sh
G=g28
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "g28: needs 2 GPUs"; exit 1; }
REPS=${REPS:-8}
PORT=$((20000 + $$ % 20000))
sed -n "/^cat > \"\$W\/sink.py\" <<'PY'$/,/^PY$/p" $D/obs1.sh | sed '1d;$d' > $W/sink.py
python3 $W/sink.py $PORT $OUT/$G-sink.json & SINK=$!
sleep 1
OV="--gpus 2 --no-mps --nodes 2 --coll allreduce --min-bytes 8 --max-bytes 64M --step-factor 4 --iters 100
    --iter-bytes 1G --min-iters 20 --policy-warmup 20 --policy-min-warmup 5 --reps 1"
(
  export NCCLBPF_PROFILE=coll; unset NCCLBPF_PROFILE_SAMPLE NCCLBPF_DECISION_LOG
  for r in $(seq 0 $((REPS - 1))); do
    one() { timeout 60 $E $OV --out $W/ov-$1-r$r --configs $2 > $W/ov-$1-r$r.txt 2>&1 || echo "ov $1 r$r failed"; }
    otlp() { NCCLBPF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT OTEL_BSP_SCHEDULE_DELAY=$2 \
      OTEL_METRIC_EXPORT_INTERVAL=10000 OTEL_RESOURCE_ATTRIBUTES=obs1.run=g28-r$r one $1 policy+prof:noop~a0; }
    if [ $((r % 2)) = 0 ]; then one a default,policy+prof:noop~a0; otlp otlp 500; otlp otlp5s 5000
    else otlp otlp5s 5000; otlp otlp 500; one a policy+prof:noop~a0,default; fi
  done
)
python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$PORT/done').read()"
wait $SINK
{ head -1 $W/ov-a-r0/samples.csv
  for r in $(seq 0 $((REPS - 1))); do
    awk -F, -v OFS=, -v r=$r 'NR>1 {$11=r; print}' $W/ov-a-r$r/samples.csv
    awk -F, -v OFS=, -v r=$r 'NR>1 {$10="noop+prof+otlp"; $11=r; print}' $W/ov-otlp-r$r/samples.csv
    awk -F, -v OFS=, -v r=$r 'NR>1 {$10="noop+prof+otlp5s"; $11=r; print}' $W/ov-otlp5s-r$r/samples.csv
  done; } > $W/overhead.csv
{ echo "## g28: OTLP export at two schedules (2 x H200 as 2 nodes, AllReduce, $REPS reps)"
  python3 $D/overhead_table.py $W/overhead.csv default policy-prof-noop-a0 noop+prof+otlp noop+prof+otlp5s
  python3 -c "import json; s=json.load(open('$OUT/$G-sink.json')); print('\nsink:', {k: s[k] for k in ('requests','traces_requests','metrics_requests','spans','bad_payloads')})"
} > $OUT/$G-overhead.md 2>&1; cat $OUT/$G-overhead.md
gzip -c $W/overhead.csv > $OUT/$G-overhead.csv.gz
echo "total $(( $(date +%s) - t0 )) s"
