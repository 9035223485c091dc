#!/usr/bin/env bash
# Back-to-back reloads across ranks (issue 23): 4 processes of the mock NCCL host run
# size_aware with NCCLBPF_RELOAD_AGREE=1 while RELOADS tuner reloads follow each other as
# fast as they are accepted - multinode_fix, size_aware, multinode_fix, ... - each asked on
# every process (`ncclbpf ctl PID reload`, retried while the previous one still activates
# there: -EBUSY). Before the activation generations, 3 of 3 runs of ~1,000 reloads diverged
# (312-2,672 collectives): a rank that staged while the agreed view still held the previous
# reload's stage abandoned on that stale deadline, yet counted towards "all staged", and the
# others switched without it. Checked: `ncclbpf decisions` finds every rank's log
# consistent, every process ended every activation (activated or abandoned), nobody hung.
#
# usage: run_reload_churn.sh AGREE_RANK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR [RELOADS]
# (CTest test_reload_churn: 40 reloads; the stress target stress_reload_churn: 1,000)
set -u
RANKBIN=$(realpath "$1") LIB=$(realpath "$2") CLI=$(realpath "$3") POLICIES=$(realpath "$4") RUN=$5
RELOADS=${6:-40}
rm -rf "$RUN"; mkdir -p "$RUN/log" "$RUN/ctl"
fail=0
die() { echo "FAIL: $*"; fail=1; }
PORT=$(( 14000 + ($$ % 100) * 10 ))
while (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done
export NCCLBPF_POLICY=$POLICIES/size_aware.bpf.o NCCLBPF_DECISION_LOG=$RUN/log
export NCCLBPF_AGREE=127.0.0.1:$PORT NCCLBPF_RELOAD_AGREE=1 NCCLBPF_CONTROL_DIR=$RUN/ctl
export NCCLBPF_AGREE_WAIT_MS=30000 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING
pids=()
for r in 0 1 2 3; do
	timeout -s KILL 3000 "$RANKBIN" "$LIB" $r 4 "${CHURN_STEPS:-1000000000}" --sleep-us "${CHURN_SLEEP_US:-50}" --comm c0ffee01 \
		--until "$RUN/stop" >"$RUN/out.$r" 2>"$RUN/err.$r" &
	pids[$r]=$!
done
for _ in $(seq 600); do
	[ "$(ls "$RUN/ctl" 2>/dev/null | grep -c '\.sock$')" -ge 4 ] && break
	sleep 0.1
done
socks=$(ls "$RUN/ctl" | grep '\.sock$' | sed 's/\.sock$//')
[ "$(echo "$socks" | wc -w)" -eq 4 ] || die "not 4 control sockets: $socks"
staged=0 refused=0
t0=$(date +%s)
for i in $(seq "$RELOADS"); do
	obj=$POLICIES/multinode_fix.bpf.o
	[ $((i % 2)) = 0 ] && obj=$POLICIES/size_aware.bpf.o
	all=1
	for pid in $socks; do
		ok=0
		for _ in $(seq 3000); do # until this process accepts it (its previous one ended)
			out=$("$CLI" ctl "$pid" --dir "$RUN/ctl" reload "$obj" --hook tuner 2>&1)
			if echo "$out" | grep -q "staged (activating across ranks"; then ok=1; break; fi
			echo "$out" | grep -qi "busy\|still activating" || break
			sleep 0.01
		done
		[ $ok = 1 ] || { all=0; refused=$((refused + 1)); echo "   reload $i on $pid: $out" | head -2; }
	done
	staged=$((staged + all))
done
t1=$(date +%s)
# every process ends its last activation (the outcome is there), then the job stops
for _ in $(seq 1200); do
	n=0
	for pid in $socks; do
		"$CLI" ctl "$pid" --dir "$RUN/ctl" status --json 2>/dev/null |
			grep -q '"reload_pending": *0' && n=$((n + 1))
	done
	[ $n -eq 4 ] && break
	sleep 0.05
done
touch "$RUN/stop"
for r in 0 1 2 3; do wait "${pids[$r]}" || die "rank $r exited with $?"; done
act=$(grep -h "activated across ranks" "$RUN"/err.* | wc -l)
aba=$(grep -h "abandoned (old policy kept)" "$RUN"/err.* | wc -l)
echo "   $RELOADS reloads in $((t1 - t0)) s: $staged staged on all 4 processes, $refused requests refused; activations ended: $act activated, $aba abandoned (over the 4 processes)"
"$CLI" decisions "$RUN/log" >"$RUN/decisions.txt" 2>&1 ||
	die "decision logs disagree: $(grep -m3 'DIVERGENT\|rank' "$RUN/decisions.txt")"
sed 's/^/   /' "$RUN/decisions.txt" | tail -2
[ "$staged" -ge $((RELOADS * 9 / 10)) ] || die "only $staged of $RELOADS reloads were staged everywhere"
grep -q "WARN.*agreement impossible" "$RUN"/err.* && die "the agreement layer fell back: $(grep -h -m1 'WARN.*agreement impossible' "$RUN"/err.*)"
[ $fail = 0 ] && echo "run_reload_churn: $staged staged reloads, every rank decided alike"
exit $fail
