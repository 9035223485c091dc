#!/usr/bin/env bash
# A real Prometheus reads our metrics (issue 27): a mock-host job (test_provenance --job)
# writes ncclbpf_<pid>.prom into a textfile directory, prometheus-node-exporter's textfile
# collector serves it, a Prometheus server started here scrapes that exporter, and the test
# queries Prometheus's HTTP API for our series: the per-collective counters with the
# decision source and policy labels, the latency histogram through histogram_quantile, the
# decisions by source. Everything listens on 127.0.0.1 only, on free ports, and is stopped
# at the end. Skips (exit 77) when the Debian packages prometheus / prometheus-node-exporter
# are missing (.ci/run installs them).
# usage: run_prometheus.sh TEST_PROVENANCE PROV_SPLIT.bpf.o WORKDIR
set -uo pipefail
JOB=$1 OBJ=$2 W=$3
PROM=$(command -v prometheus) || { echo "SKIP: prometheus not installed (apt-get install prometheus)"; exit 77; }
NODEX=$(command -v prometheus-node-exporter || command -v node_exporter) ||
	{ echo "SKIP: prometheus-node-exporter not installed"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
rm -rf "$W"
mkdir -p "$W/textfile" "$W/data"
fail=0
die() { echo "FAIL: $*"; fail=1; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT

"$JOB" "$OBJ" --job "$W/textfile" >"$W/job.log" 2>&1 || { cat "$W/job.log"; die "the job failed"; exit 1; }
ls "$W"/textfile/ncclbpf_*.prom >/dev/null 2>&1 || { die "no metrics file written"; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NP=$(free_port) PP=$(free_port)
"$NODEX" --web.listen-address=127.0.0.1:$NP --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$W/textfile" >"$W/node-exporter.log" 2>&1 &
pids+=($!)
cat >"$W/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: ncclbpf
    static_configs:
      - targets: ['127.0.0.1:$NP']
YML
"$PROM" --config.file="$W/prometheus.yml" --storage.tsdb.path="$W/data" \
	--web.listen-address=127.0.0.1:$PP >"$W/prometheus.log" 2>&1 &
pids+=($!)

q() { curl -sf --max-time 5 -G "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
# the series appear after the first scrapes: wait for them (bounded, not timed)
ok=0
for _ in $(seq 1 120); do
	if q 'ncclbpf_collectives_total' 2>/dev/null | grep -q '"__name__":"ncclbpf_collectives_total"'; then
		ok=1
		break
	fi
	sleep 0.5
done
[ $ok = 1 ] || { tail -5 "$W/prometheus.log" "$W/node-exporter.log"; die "Prometheus never returned ncclbpf_collectives_total"; exit 1; }

check() { # DESCRIPTION QUERY EXPECTED-SUBSTRING
	local out
	out=$(q "$2") || { die "$1: query failed: $2"; return; }
	echo "$out" | grep -q "$3" || die "$1: $2 -> $out (expected $3)"
	echo "   ok: $1"
}
check "4 MiB decided by the first program" \
	'ncclbpf_collectives_total{comm="0x70b",size_band="4MiB",source="policy"}' '"policy":"prov_split.bpf.o:first@'
check "50 of them" 'sum(ncclbpf_collectives_total{comm="0x70b",size_band="4MiB"})' '"50"\]'
check "256 KiB by the second" \
	'ncclbpf_collectives_total{comm="0x70b",size_band="256KiB",source="policy"}' 'second@'
check "16 KiB kept (pinned)" 'sum(ncclbpf_collectives_total{comm="0x70b",source="pinned"})' '"50"\]'
check "latency histogram quantile" \
	'histogram_quantile(0.5, sum by (le) (ncclbpf_collective_latency_seconds_bucket{comm="0x70b"}))' '"resultType":"vector","result":\[{'
check "busbw histogram" 'sum(ncclbpf_collective_busbw_bytes_per_second_count{comm="0x70b"})' '"150"\]'
check "decisions by source" 'ncclbpf_tuner_decisions_by_source_total{comm="0x70b",source="policy"}' '"100"\]'
# docs/grafana/ncclbpf.json: every panel's query runs on this Prometheus (variables as "All")
DASH=$(dirname "$0")/../../docs/grafana/ncclbpf.json
if [ -f "$DASH" ]; then
	n=0
	while IFS= read -r expr; do
		out=$(q "$expr") && echo "$out" | grep -q '"status":"success"' ||
			die "dashboard query failed: $expr -> $out"
		n=$((n + 1))
	done < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
for p in panels(d["panels"]):
    for t in p.get("targets", []):
        print(t["expr"].replace("$comm", ".*").replace("$coll", ".*").replace("$__rate_interval", "1m"))
' "$DASH")
	[ "$n" -gt 0 ] || die "no query in $DASH"
	echo "   ok: $n dashboard queries accepted by Prometheus"
fi
[ $fail = 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
