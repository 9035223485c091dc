#!/usr/bin/env bash
# Reload across ranks (issue 12): 4 processes of the mock NCCL host (tuner + profiler
# through the real libncclbpf.so, agree_rank from tests/agree) run size_aware with
# NCCLBPF_RELOAD_AGREE=1; mid-run `ncclbpf ctl --all reload multinode_fix.bpf.o --hook tuner`
# stages the new policy on every rank. Checked with the decision logs:
#   1. all:   every rank switches at the same collective (ncclbpf decisions: all agree; the
#             first collective with multinode_fix's decision is the same on every rank);
#   2. one:   the reload is requested on ONE process only: the others learn the request
#             through the agreement layer, load the same path from their own files and
#             stage it: all 4 switch at the same collective;
#   3. three: 3 of 4 ranks get the reload, the 4th has no such file (per-process policy
#             directories: the path is /proc/self/cwd/..., each rank runs in its own
#             "node" directory): nobody switches, the 3 abandon the staged policy;
#   4. missing: requested on one process, the file is missing on another: nobody switches;
#   5. differ:  requested on one process, another's file has other content: nobody switches.
# The ranks run until the outcome is there (every process logged "activated" or the ones
# that staged "abandoned"), not a fixed number of collectives: the verdict does not depend
# on the machine's speed (issue 23); a 120 s timer catches a hang.
# usage: run_reload_agree.sh AGREE_RANK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR
set -u
RANKBIN=$(realpath "$1") LIB=$(realpath "$2") CLI=$(realpath "$3") POLICIES=$(realpath "$4") RUN=$5
rm -rf "$RUN"; mkdir -p "$RUN"
fail=0
# rendezvous ports below Linux's ephemeral range (32768+), skipping ports in use (as
# tests/agree/run_agree.sh does); a band apart from that script's 20000..32000
PORT=$(( 12000 + ($$ % 400) * 20 ))
die() { echo "FAIL [$SCEN]: $*"; fail=1; }

run() { # run NAME HOW_MANY_PROCESSES_TO_RELOAD [missing|differ: sabotage one other rank's file]
	SCEN=$1; shift
	local sabotage=${2:-}
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
	# each rank in its own "node" directory with its own copy of the policy files (no
	# shared file system): the reload path /proc/self/cwd/new.bpf.o is the same absolute
	# path on every rank and names each rank's own copy
	for r in 0 1 2 3; do
		mkdir -p "$DIR/node$r"
		cp "$POLICIES/multinode_fix.bpf.o" "$DIR/node$r/new.bpf.o"
		(cd "$DIR/node$r" && exec timeout -s KILL 120 "$RANKBIN" "$LIB" $r 4 100000000 \
			--sleep-us 150 --comm c0ffee01 --until "$DIR/stop" >"$DIR/out.$r" 2>"$DIR/err.$r") &
		pids[$r]=$!
	done
	# wait until every rank serves its socket and has run a few hundred collectives
	for _ in $(seq 100); do
		[ "$(ls "$DIR/ctl" 2>/dev/null | grep -c '\.sock$')" -ge 4 ] && break
		sleep 0.1
	done
	sleep 0.3
	local socks n=0
	socks=$(ls "$DIR/ctl" | grep '\.sock$')
	if [ -n "$sabotage" ]; then # the last process (never asked): its file missing/different
		local victim; victim=$(echo "$socks" | tail -n 1); victim=${victim%.sock}
		local vdir; vdir=$(readlink "/proc/$victim/cwd")
		case $sabotage in
		missing) rm -f "$vdir/new.bpf.o" ;;
		differ) cp "$POLICIES/size_aware.bpf.o" "$vdir/new.bpf.o" ;;
		esac
		echo "   $sabotage: policy file of process $victim ($vdir)"
	fi
	for sock in $(echo "$socks" | head -n "$1"); do
		local pid=${sock%.sock}
		n=$((n + 1))
		"$CLI" ctl "$pid" --dir "$DIR/ctl" reload /proc/self/cwd/new.bpf.o \
			--hook tuner >"$DIR/reload.$pid" 2>&1 || die "reload on $pid: $(cat "$DIR/reload.$pid")"
		grep -q "staged (activating across ranks" "$DIR/reload.$pid" ||
			die "process $pid: not staged: $(cat "$DIR/reload.$pid")"
	done
	[ $n -eq "$1" ] || die "reloaded $n processes, wanted $1"
	# the outcome: every process activated it, or the ones that staged it abandoned it
	# (explicit sync points; then 100 ms more of collectives on the outcome)
	for _ in $(seq 1800); do
		local act aba
		act=$(grep -l "across ranks" "$DIR"/err.* 2>/dev/null | xargs -r grep -l "version [0-9]* activated across ranks" | wc -l)
		aba=$(grep -l "abandoned (old policy kept)" "$DIR"/err.* 2>/dev/null | wc -l)
		[ "$act" -eq 4 ] && break
		[ -n "$sabotage" ] || [ "$1" -lt 4 ] && [ "$aba" -ge 3 ] && break
		group_failed && break
		sleep 0.05
	done
	sleep 0.1
	touch "$DIR/stop"
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

prev=$fail; run one 1
for _ in 1 2; do
	group_failed || break
	echo "   the agreement layer fell back (overloaded machine); retrying"; fail=$prev; run one 1
done
[ ${#SWITCH[@]} -eq 4 ] || die "expected 4 decision logs, got ${#SWITCH[@]}"
for s in "${SWITCH[@]}"; do
	[ -n "$s" ] || die "a rank never switched"
	[ "$s" = "${SWITCH[0]}" ] || die "ranks switched at different collectives: ${SWITCH[*]}"
done
[ "$(grep -l "requested by another rank: staged" "$DIR"/err.* | wc -l)" -eq 3 ] ||
	die "the 3 processes not asked did not stage the request"

# nobody switches; $1 processes staged and abandon
none_switched() {
	for s in "${SWITCH[@]}"; do
		[ -z "$s" ] || die "a rank switched although one never staged the reload: ${SWITCH[*]}"
	done
	[ "$(grep -l "abandoned (old policy kept)" "$DIR"/err.* | wc -l)" -eq "$1" ] ||
		die "the $1 processes that staged the reload did not all abandon it"
}
for scen in "three 3 missing 3" "missing 1 missing 3" "differ 1 differ 3"; do
	set -- $scen
	prev=$fail; run "$1" "$2" "$3"
	for _ in 1 2; do
		group_failed || break
		echo "   the agreement layer fell back (overloaded machine); retrying"; fail=$prev; run "$1" "$2" "$3"
	done
	none_switched "$4"
done
grep -q "local files differ from the requester's" "$DIR"/err.* ||
	die "the process with the different file did not say why it did not stage"

[ $fail = 0 ] && echo "run_reload_agree: all scenarios passed"
exit $fail
