#!/bin/bash
# GPU call 27 (issues 27/28, nvidia-h200-x2): g15's overhead split again (results 20.4: on 2
# GPUs the sampled profiler with OTLP export was not shown to be free - up to 5 %, and g14
# and g15 disagreed), with 10 interleaved repetitions instead of 5, on this session's build:
# default; the noop policy as tuner only; + the profiler in its default sampled mode
# (NCCLBPF_PROFILE=coll); + OTLP export (obs1.sh's sink). 2 GPUs as 2 nodes, AllReduce
# 8 B-64 MiB every 4x, 100 iterations per size.
# Outputs to $OUT: g27-overhead.md, g27-overhead.csv.gz, g27-sink.json.
#   usage (device; S = g4-stage.sh's staging of a Release build, this directory copied to
#   S/docs/gpu-runs/2026-11-30):  cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g27.sh
G=g27
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "g27: needs 2 GPUs"; exit 1; }
REPS=${REPS:-10}
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
    otlp() { NCCLBPF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT OTEL_BSP_SCHEDULE_DELAY=500 \
      OTEL_METRIC_EXPORT_INTERVAL=10000 OTEL_RESOURCE_ATTRIBUTES=obs1.run=g27-r$r one otlp policy+prof:noop~a0; }
    if [ $((r % 2)) = 0 ]; then one a default,policy:noop,policy+prof:noop~a0; otlp
    else otlp; one a policy+prof:noop~a0,policy:noop,default; fi
  done
)
python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$PORT/done').read()"
wait $SINK
{ head -1 $W/ov-a-r0/samples.csv
  for r in $(seq 0 $((REPS - 1))); do
    awk -F, -v OFS=, -v r=$r 'NR>1 {$11=r; print}' $W/ov-a-r$r/samples.csv
    awk -F, -v OFS=, -v r=$r 'NR>1 {$10="noop+prof+otlp"; $11=r; print}' $W/ov-otlp-r$r/samples.csv
  done; } > $W/overhead.csv
{ echo "## g27: the plugin's overhead, split (2 x H200 as 2 nodes, AllReduce, $REPS reps)"
  python3 $D/overhead_table.py $W/overhead.csv default policy-noop policy-prof-noop-a0 noop+prof+otlp
  python3 -c "import json; s=json.load(open('$OUT/$G-sink.json')); print('\nsink:', {k: s[k] for k in ('requests','traces_requests','metrics_requests','spans','bad_payloads')})"
} > $OUT/$G-overhead.md 2>&1; cat $OUT/$G-overhead.md
gzip -c $W/overhead.csv > $OUT/$G-overhead.csv.gz
echo "total $(( $(date +%s) - t0 )) s"
