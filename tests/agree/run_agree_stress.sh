#!/usr/bin/env bash
# Agreement under random faults (the stress target: CTest stress_agree, label stress; it
# runs only with NCCLBPF_STRESS=1, else it is skipped - docs/agreement.md "Testing").
# RUNS jobs of 4 ranks (flat) or 6 (fan-out 3: rank 3 relays for 4 and 5) of the mock NCCL
# host, adaptive_channels in strict mode, NCCLBPF_AGREE_WAIT_MS=800. In each, one fault at
# a random moment on a random rank - the leader, a relay, a leaf:
#   kill   SIGKILL
#   stop   SIGSTOP for 0.1, 1, 3 or 10 times the bound, then SIGCONT
#   block  its agreement sockets blocked (nothing read or sent) for as long
#          (NCCLBPF_AGREE_TEST_FAULT block_after_ms / block_ms)
# Counted: runs whose decision logs disagree (`ncclbpf decisions` exit 3) and their
# divergent collectives, ranks that did not exit (the kill timer), the longest wait of a
# rank that was not stopped. Exit 0 only with no divergence and no hang.
#
# usage: run_agree_stress.sh AGREE_RANK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR [RUNS]
# STRESS_SEED=N: another sequence of faults (default 1). STRESS_KIND=kill|stop|block and
# STRESS_TARGET=R: every run injects that kind / hits that rank (the stopped leader:
# STRESS_KIND=stop STRESS_TARGET=0); the random draws stay the same otherwise.
set -u
RANKBIN=$1 LIB=$2 CLI=$3 POLICIES=$4 RUN=$5 RUNS=${6:-100}
case "${STRESS_KIND:-kill}" in kill|stop|block) ;; *) echo "STRESS_KIND: kill, stop or block" >&2; exit 2;; esac
if [ "${NCCLBPF_STRESS:-0}" != 1 ]; then
	echo "stress_agree: skipped (set NCCLBPF_STRESS=1 to run it: about 10 minutes)"
	exit 77
fi
W=800
SLACK_MS=${AGREE_SLACK_MS:-5000}
RANDOM=${STRESS_SEED:-1}
rm -rf "$RUN"
mkdir -p "$RUN"
BASEPORT=$(( 24000 + ($$ % 300) * 20 ))
divergent_runs=0 divergent_colls=0 hangs=0 maxwait=0 fellback=0 injected=0
summary=$RUN/summary.txt
: >"$summary"

for i in $(seq "$RUNS"); do
	DIR=$RUN/run$i
	mkdir -p "$DIR/log"
	PORT=$((BASEPORT + i % 200))
	while (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done
	if [ $((RANDOM % 2)) = 0 ]; then N=4 FAN=flat; else N=6 FAN=3; fi
	KINDS=(kill stop block)
	KIND=${KINDS[$((RANDOM % 3))]}
	TARGET=$((RANDOM % N))
	KIND=${STRESS_KIND:-$KIND}
	TARGET=${STRESS_TARGET:-$TARGET}
	AT_MS=$((200 + RANDOM % 1200))
	MULTS=(1 10 30 100)
	DUR_MS=$(( W * ${MULTS[$((RANDOM % 4))]} / 10 ))
	FAULT=""
	[ "$KIND" = block ] && FAULT="block_after_ms=$AT_MS,block_ms=$DUR_MS" && injected=$((injected + 1))
	pids=()
	for r in $(seq 0 $((N - 1))); do
		f=""
		[ "$r" = "$TARGET" ] && f=$FAULT
		NCCLBPF_POLICY=$POLICIES/adaptive_channels.bpf.o NCCLBPF_DECISION_LOG=$DIR/log \
		NCCLBPF_AGREE=127.0.0.1:$PORT NCCLBPF_AGREE_WAIT_MS=$W NCCLBPF_AGREE_FANOUT=$FAN \
		NCCLBPF_AGREE_TEST_FAULT=$f NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \
			timeout -s KILL 180 "$RANKBIN" "$LIB" "$r" "$N" 4000 --sleep-us 150 --seed "$i" \
			>"$DIR/out.$r" 2>"$DIR/err.$r" &
		pids[$r]=$!
	done
	# the fault, from outside, at its moment (after the target started its group)
	if [ "$KIND" != block ]; then
		sleep "$(awk "BEGIN{print $AT_MS/1000}")"
		# the rank's own pid from its log lines (pgrep -P on the timeout parent found
		# nothing at times under ctest); a rank not started yet is not faulted (counted)
		child=$(sed -n 's/^mockhost:\([0-9]*\) .*/\1/p' "$DIR/err.$TARGET" 2>/dev/null | head -1)
		if [ -n "$child" ]; then
			injected=$((injected + 1))
			if [ "$KIND" = kill ]; then
				kill -9 "$child" 2>/dev/null
			else
				kill -STOP "$child" 2>/dev/null
				sleep "$(awk "BEGIN{print $DUR_MS/1000}")"
				kill -CONT "$child" 2>/dev/null
			fi
		fi
	fi
	hung=0
	for r in $(seq 0 $((N - 1))); do
		wait "${pids[$r]}"
		rc=$?
		[ "$KIND" = kill ] && [ "$r" = "$TARGET" ] && continue
		[ $rc -eq 137 ] && hung=$((hung + 1))
		[ $rc -ne 0 ] && [ $rc -ne 137 ] && echo "run $i: rank $r exited with $rc"
	done
	hangs=$((hangs + hung))
	"$CLI" decisions --json "$DIR/log" >"$DIR/decisions.json" 2>"$DIR/decisions.err"
	rc=$?
	div=0
	if [ $rc -eq 3 ]; then
		divergent_runs=$((divergent_runs + 1))
		div=$("$CLI" decisions "$DIR/log" 2>&1 | sed -n 's/.* \([0-9]*\) divergent.*/\1/p' | head -1)
		div=${div:-1}
		divergent_colls=$((divergent_colls + div))
	elif [ $rc -ne 0 ]; then
		echo "run $i: ncclbpf decisions exit $rc: $(head -2 "$DIR/decisions.err")"
		divergent_runs=$((divergent_runs + 1))
	fi
	for r in $(seq 0 $((N - 1))); do
		[ "$r" = "$TARGET" ] && [ "$KIND" != block ] && continue
		w=$(sed -n 's/.* waits (longest \([0-9]*\) us).*/\1/p' "$DIR/err.$r" | tail -1)
		[ -n "$w" ] && [ "$w" -gt "$maxwait" ] && maxwait=$w
		grep -q "fallback at [0-9]" "$DIR/err.$r" && fellback=$((fellback + 1))
	done
	line="run $i: $N ranks ($FAN), $KIND rank $TARGET at ${AT_MS} ms"
	[ "$KIND" != kill ] && line="$line for ${DUR_MS} ms"
	line="$line: decisions exit $rc"
	[ $hung -gt 0 ] && line="$line, $hung hung"
	echo "$line" | tee -a "$summary"
	[ $rc -eq 0 ] && [ $hung -eq 0 ] && rm -rf "$DIR" # keep only what failed
done
echo "stress: $RUNS runs ($injected faults injected), $divergent_runs divergent ($divergent_colls divergent collectives), $hangs hangs, longest wait of a rank not stopped ${maxwait} us (bound ${W} ms + ${SLACK_MS} ms slack), $fellback rank fallbacks" | tee -a "$summary"
[ "$maxwait" -le $(( (W + SLACK_MS) * 1000 )) ] || { echo "a wait exceeded the bound"; exit 1; }
[ $divergent_runs -eq 0 ] && [ $hangs -eq 0 ]
