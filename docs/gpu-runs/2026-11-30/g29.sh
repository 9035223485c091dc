#!/bin/bash
# GPU call 29 (issue 28, nvidia-h200-x2): OTLP export's cost with every configuration in a
# harness process of its own (results 20.7: g27/g28 ran the default and the profiler in one
# process and each OTLP configuration in another; a separate process alone moved sizes by
# ~10 % either way). Per repetition, in an order rotated by the repetition: default; the
# noop tuner + the sampled profiler (NCCLBPF_PROFILE=coll); + OTLP export every 500 ms.
# 2 GPUs as 2 nodes, AllReduce 8 B-64 MiB every 4x, 100 iterations per size, 10 repetitions.
# Outputs to $OUT: g29-overhead.md, g29-overhead.csv.gz, g29-sink.json.
#   usage (device; S = g4-stage.sh's staging of a Release build, this directory copied to
#   S/docs/gpu-runs/2026-11-30):  cd S && OUT=/some/dir bash docs/gpu-runs/2026-11-30/g29.sh
G=g29
. "$(dirname "$0")/../2026-11-29/preamble.sh"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "g29: needs 2 GPUs"; exit 1; }
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
      OTEL_METRIC_EXPORT_INTERVAL=10000 OTEL_RESOURCE_ATTRIBUTES=obs1.run=g29-r$r one otlp policy+prof:noop~a0; }
    case $((r % 3)) in
    0) one d default; one p policy+prof:noop~a0; otlp ;;
    1) one p policy+prof:noop~a0; otlp; one d default ;;
    2) otlp; one d default; one p policy+prof:noop~a0 ;;
    esac
  done
)
python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$PORT/done').read()"
wait $SINK
{ head -1 $W/ov-d-r0/samples.csv
  for r in $(seq 0 $((REPS - 1))); do
    awk -F, -v OFS=, -v r=$r 'NR>1 {$11=r; print}' $W/ov-d-r$r/samples.csv
    awk -F, -v OFS=, -v r=$r 'NR>1 {$11=r; print}' $W/ov-p-r$r/samples.csv
    awk -F, -v OFS=, -v r=$r 'NR>1 {$10="noop+prof+otlp"; $11=r; print}' $W/ov-otlp-r$r/samples.csv
  done; } > $W/overhead.csv
{ echo "## g29: every configuration in its own process (2 x H200 as 2 nodes, AllReduce, $REPS reps)"
  python3 $D/overhead_table.py $W/overhead.csv default policy-prof-noop-a0 noop+prof+otlp
  python3 -c "import json; s=json.load(open('$OUT/$G-sink.json')); print('\nsink:', {k: s[k] for k in ('requests','traces_requests','metrics_requests','spans','bad_payloads')})"
} > $OUT/$G-overhead.md 2>&1; cat $OUT/$G-overhead.md
gzip -c $W/overhead.csv > $OUT/$G-overhead.csv.gz
echo "total $(( $(date +%s) - t0 )) s"
