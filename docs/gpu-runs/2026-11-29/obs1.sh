#!/usr/bin/env bash
# GPU run OBS1 (issue 27): OTLP export on real NCCL, one H200, 2 emulated nodes
# (scripts/emulate-nodes.sh: 2 ranks on GPU 0, each its own NCCL_HOSTID, sockets between
# them), ncclbpf as tuner (size_aware: the decisions are the policy's) and profiler in its
# default sampled mode (NCCLBPF_PROFILE=coll, NCCLBPF_PROFILE_SAMPLE unset = adaptive), with
# OTLP export off and on, 5 interleaved repetitions (the order alternates), AllReduce 8 KiB -
# 2 MiB. An OTLP sink on 127.0.0.1 (python3, below) receives the JSON payloads, counts the
# spans and checks the joins: every trace id must hold spans of one collective only (same
# communicator, collective, sequence, bytes, algorithm, protocol, channels, decision source)
# and at most one per rank; under per-rank sampling a trace holds the spans of the ranks that
# sampled that collective, so one more run instruments every collective
# (NCCLBPF_PROFILE_SAMPLE=1) where every collective's trace must hold both ranks' spans.
# Prints the overhead table (export on vs off, median of 5, per size) and the sink's summary.
# About 3 minutes (11 runs of 2 processes; NCCL init dominates).
#
#   usage (device, repository root, Release build carried in gpuwork/build):
#     bash docs/gpu-runs/2026-11-29/obs1.sh gpuwork/build [OUT_DIR]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
B=$(cd "${1:-$ROOT/gpuwork/build}" && pwd)
OUT=${2:-/tmp/obs1}
W=/tmp/obs1-work
rm -rf "$W"; mkdir -p "$W" "$OUT"; date -u
[ -f "$B/libncclbpf.so" ] && [ -f "$B/policies/size_aware.bpf.o" ] || { echo "obs1: no $B/libncclbpf.so or policies" >&2; exit 1; }
BENCH=${BENCH:-$(ls "$B"/ncclbpf-gpubench "$B"/bench/gpu/ncclbpf-gpubench 2>/dev/null | head -1)}
if [ -z "$BENCH" ]; then # build the harness once, as emulate-nodes.sh would per run
  NCCL_HOME=${NCCL_HOME:-$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)}
  NCCL_LIB=$(ls "$NCCL_HOME"/lib/libnccl.so* 2>/dev/null | head -1)
  BENCH=$W/ncclbpf-gpubench
  nvcc -O2 -std=c++17 -arch=sm_90 -I"$NCCL_HOME/include" -o "$BENCH" "$ROOT/bench/gpu/ncclbpf_gpubench.cu" \
    -L"$(dirname "$NCCL_LIB")" -l:"$(basename "$NCCL_LIB")" -Xlinker -rpath="$(dirname "$NCCL_LIB")" ||
    { echo "obs1: harness build failed (NCCL_HOME=$NCCL_HOME)" >&2; exit 1; }
fi

PORT=$((20000 + $$ % 20000))
cat > "$W/sink.py" <<'PY'
# A minimal OTLP/HTTP JSON sink: counts spans and checks that trace ids join correctly.
import json, sys, threading
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
port, out = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
st = {"requests": 0, "traces_requests": 0, "metrics_requests": 0, "spans": 0, "bad_payloads": 0,
      "histogram_points": 0, "by_run": {}}
traces = {}  # (run, trace id) -> list of span keys
def attrs(lst):
    return {kv["key"]: kv["value"].get("stringValue", kv["value"].get("intValue")) for kv in lst or []}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        with lock:
            st["requests"] += 1
            try:
                d = json.loads(body)
                if self.path.endswith("/v1/traces"):
                    st["traces_requests"] += 1
                    for rs in d.get("resourceSpans", []):
                        run = attrs(rs["resource"]["attributes"]).get("obs1.run", "?")
                        for ss in rs["scopeSpans"]:
                            for s in ss["spans"]:
                                a = attrs(s["attributes"])
                                st["spans"] += 1
                                r = st["by_run"].setdefault(run, {"spans": 0, "sources": {}})
                                r["spans"] += 1
                                src = a.get("ncclbpf.decision.source")
                                r["sources"][src] = r["sources"].get(src, 0) + 1
                                key = (a["nccl.comm.hash"], a["nccl.collective"], a["nccl.seq"], a["nccl.bytes"],
                                       a["nccl.algorithm"], a["nccl.protocol"], a["nccl.channels"], src)
                                traces.setdefault((run, s["traceId"]), []).append((key, a["nccl.rank"]))
                elif self.path.endswith("/v1/metrics"):
                    st["metrics_requests"] += 1
                    for rm in d.get("resourceMetrics", []):
                        for sm in rm["scopeMetrics"]:
                            for m in sm["metrics"]:
                                if "histogram" in m:
                                    st["histogram_points"] += len(m["histogram"]["dataPoints"])
            except Exception as e:
                st["bad_payloads"] += 1
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
def done(*_):
    with lock:
        runs = {}
        for (run, tid), spans in traces.items():
            r = runs.setdefault(run, {"traces": 0, "both_ranks": 0, "one_rank": 0, "mismatched": 0})
            r["traces"] += 1
            keys = {k for k, _ in spans}; ranks = [rk for _, rk in spans]
            if len(keys) != 1 or len(ranks) != len(set(ranks)):
                r["mismatched"] += 1
            elif len(set(ranks)) == 2:
                r["both_ranks"] += 1
            else:
                r["one_rank"] += 1
        st["joins"] = runs
        json.dump(st, open(out, "w"), indent=1)
    threading.Thread(target=srv.shutdown).start()
class HD(H):
    def do_GET(self):  # GET /done: write the summary, stop
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
        if self.path == "/done":
            done()
srv = ThreadingHTTPServer(("127.0.0.1", port), HD)
srv.serve_forever()
PY
python3 "$W/sink.py" $PORT "$OUT/obs1-sink.json" & SINK=$!
python3 - $PORT <<'PY' || { echo "obs1: the sink did not start" >&2; exit 1; }
import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close(); sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY

COMMON=(--nodes 2 --coll allreduce --min-bytes 8K --max-bytes 2M --step-factor 4 --iters 200
        --policy-warmup 20 --policy-min-warmup 5 --build "$B" --bench "$BENCH")
export NCCLBPF_PROFILE=coll
unset NCCLBPF_PROFILE_SAMPLE
run() { # REP MODE [extra env]
  local rep=$1 mode=$2; shift 2
  local envs=(OTEL_RESOURCE_ATTRIBUTES=obs1.run=$mode-r$rep)
  [ "$mode" = off ] || envs+=(NCCLBPF_OTLP=on OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$PORT
                              OTEL_BSP_SCHEDULE_DELAY=500 OTEL_METRIC_EXPORT_INTERVAL=10000)
  env "${envs[@]}" "$@" bash "$ROOT/scripts/emulate-nodes.sh" "${COMMON[@]}" --configs "policy+prof:size_aware~a0" \
    --reps 1 --out "$W/$mode-r$rep" --samples "$W/$mode-r$rep/samples.csv" > "$W/$mode-r$rep.log" 2>&1 ||
    { echo "run $mode r$rep failed:"; tail -5 "$W/$mode-r$rep.log"; }
}
for rep in 0 1 2 3 4; do
  if [ $((rep % 2)) = 0 ]; then run $rep off; run $rep on; else run $rep on; run $rep off; fi
done
run 0 every NCCLBPF_PROFILE_SAMPLE=1
sleep 1
python3 -c "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:$PORT/done').read()"; wait $SINK

python3 - "$W" "$OUT/obs1-sink.json" <<'PY' | tee "$OUT/obs1-report.md"
import csv, glob, json, os, statistics, sys
w, sinkf = sys.argv[1], sys.argv[2]
rows = {}
for f in glob.glob(os.path.join(w, "*-r*", "samples.csv")):
    mode = os.path.basename(os.path.dirname(f)).split("-r")[0]
    per = {}
    for r in csv.DictReader(open(f)):
        per.setdefault(int(r["bytes"]), []).append(float(r["time_us"]))
    for b, v in per.items():
        rows.setdefault((mode, b), []).append(statistics.median(v))
sizes = sorted({b for (_, b) in rows})
print("## OBS1: OTLP export off vs on (one H200, 2 emulated nodes, size_aware, profiler sampled)")
print("| size | off µs (median of reps) | on µs | on vs off |")
print("|---|---|---|---|")
for b in sizes:
    off, on = rows.get(("off", b), []), rows.get(("on", b), [])
    if off and on:
        mo, mn = statistics.median(off), statistics.median(on)
        print(f"| {b} | {mo:.2f} ± {max(off)-min(off):.2f} ({len(off)}) | {mn:.2f} ± {max(on)-min(on):.2f} ({len(on)}) | {100*(mn/mo-1):+.1f} % |")
s = json.load(open(sinkf))
print("\nsink:", {k: s[k] for k in ("requests", "traces_requests", "metrics_requests", "spans", "bad_payloads", "histogram_points")})
for run, j in sorted(s.get("joins", {}).items()):
    src = s["by_run"].get(run, {}).get("sources")
    print(f"run {run}: {j['traces']} traces, {j['both_ranks']} with both ranks' spans, {j['one_rank']} with one, {j['mismatched']} MISMATCHED; sources {src}")
bad = sum(j["mismatched"] for j in s.get("joins", {}).values())
every = s.get("joins", {}).get("every-r0", {})
ok = bad == 0 and s["bad_payloads"] == 0 and every.get("traces", 0) > 0 and every.get("one_rank", 1) == 0
print("\nverdict:", "joins OK" if ok else "JOIN CHECK FAILED")
PY
date -u
