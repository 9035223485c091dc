#!/usr/bin/env bash
# Reload across ranks (issue 12): 4 processes of the mock NCCL host (tuner + profiler
# through the real libncclbpf.so, agree_rank from tests/agree) run size_aware with
# NCCLBPF_RELOAD_AGREE=1; mid-run `ncclbpf ctl --all reload multinode_fix.bpf.o --hook tuner`
# stages the new policy on every rank. Checked with the decision logs:
#   1. all:   every rank switches at the same collective (ncclbpf decisions: all agree; the
#             first collective with multinode_fix's decision is the same on every rank);
#   2. three: only 3 of 4 ranks get the reload: nobody switches (all keep size_aware), the
#             staged chain is abandoned on the 3 (status), the logs agree.
# usage: run_reload_agree.sh AGREE_RANK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR
set -u
RANKBIN=$1 LIB=$2 CLI=$3 POLICIES=$4 RUN=$5
rm -rf "$RUN"; mkdir -p "$RUN"
fail=0
# rendezvous ports below Linux's ephemeral range (32768+), skipping ports in use (as
# tests/agree/run_agree.sh does); a band apart from that script's 20000..32000
PORT=$(( 12000 + ($$ % 400) * 20 ))
die() { echo "FAIL [$SCEN]: $*"; fail=1; }

run() { # run NAME HOW_MANY_PROCESSES_TO_RELOAD
	SCEN=$1; shift
	DIR=$RUN/$SCEN; rm -rf "$DIR"; mkdir -p "$DIR/log" "$DIR/ctl"
	PORT=$((PORT + 1))
	while (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done
	export NCCLBPF_POLICY=$POLICIES/size_aware.bpf.o NCCLBPF_DECISION_LOG=$DIR/log
	export NCCLBPF_AGREE=127.0.0.1:$PORT NCCLBPF_RELOAD_AGREE=1 NCCLBPF_CONTROL_DIR=$DIR/ctl
	export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING
	# a generous wait bound: this test is about reloads, not about agreement timeouts on a
	# machine shared with parallel builds (tests/agree covers those)
	export NCCLBPF_AGREE_WAIT_MS=30000
	echo "== $SCEN"
	local pids=()
	for r in 0 1 2 3; do
		timeout -s KILL 120 "$RANKBIN" "$LIB" $r 4 6000 --sleep-us 150 --comm c0ffee01 \
			>"$DIR/out.$r" 2>"$DIR/err.$r" &
		pids[$r]=$!
	done
	# wait until every rank serves its socket and has run a few hundred collectives
	for _ in $(seq 100); do
		[ "$(ls "$DIR/ctl" 2>/dev/null | grep -c '\.sock$')" -ge 4 ] && break
		sleep 0.1
	done
	sleep 0.3
	local n=0
	for sock in $(ls "$DIR/ctl" | grep '\.sock$' | head -n "$1"); do
		local pid=${sock%.sock}
		n=$((n + 1))
		"$CLI" ctl "$pid" --dir "$DIR/ctl" reload "$POLICIES/multinode_fix.bpf.o" \
			--hook tuner >"$DIR/reload.$pid" 2>&1 || die "reload on $pid: $(cat "$DIR/reload.$pid")"
		grep -q "staged (activating across ranks" "$DIR/reload.$pid" ||
			die "process $pid: not staged: $(cat "$DIR/reload.$pid")"
	done
	[ $n -eq "$1" ] || die "reloaded $n processes, wanted $1"
	for r in 0 1 2 3; do
		wait "${pids[$r]}" || die "rank $r exited with $?"
	done
	"$CLI" decisions "$DIR/log" >"$DIR/decisions.txt" 2>&1 || die "decision logs disagree: $(head -5 "$DIR/decisions.txt")"
	# first collective decided by multinode_fix (Tree, channels unchanged) per rank
	SWITCH=()
	for f in "$DIR"/log/*.jsonl; do
		SWITCH+=("$(grep -m1 '"algo":"Tree"' "$f" | sed 's/.*"seq":\([0-9]*\).*/\1/')")
	done
	echo "   switch seq per rank: ${SWITCH[*]:-none}"
}

# The agreement layer itself can fall back on an overloaded machine (a rank's wait for a
# version exceeds its bound; tests/agree covers that behaviour): such a run says nothing
# about reloads and is retried, up to twice, on another port.
group_failed() { grep -q "fallback at [0-9]" "$DIR"/err.* 2>/dev/null; }
prev=$fail; run all 4
for _ in 1 2; do
	group_failed || break
	echo "   the agreement layer fell back (overloaded machine); retrying"; fail=$prev; run all 4
done
[ ${#SWITCH[@]} -eq 4 ] || die "expected 4 decision logs, got ${#SWITCH[@]}"
for s in "${SWITCH[@]}"; do
	[ -n "$s" ] || die "a rank never switched"
	[ "$s" = "${SWITCH[0]}" ] || die "ranks switched at different collectives: ${SWITCH[*]}"
done

prev=$fail; run three 3
for _ in 1 2; do
	group_failed || break
	echo "   the agreement layer fell back (overloaded machine); retrying"; fail=$prev; run three 3
done
for s in "${SWITCH[@]}"; do
	[ -z "$s" ] || die "a rank switched although rank 3 never staged the reload: ${SWITCH[*]}"
done
[ "$(grep -l "abandoned (old policy kept)" "$DIR"/err.* | wc -l)" -eq 3 ] ||
	die "the 3 processes that staged the reload did not all abandon it"

[ $fail = 0 ] && echo "run_reload_agree: all scenarios passed"
exit $fail
