#!/usr/bin/env bash
# A communicator created while a reload activates across ranks (regression test for the
# review of issue 12; src/plugin/tuner/tuner_reload.c join_activation). 4 processes of the
# mock NCCL host run size_aware with NCCLBPF_RELOAD_AGREE=1 on communicator W; a tuner
# reload of multinode_fix (Tree) is staged and W switches at an agreed collective. Every
# rank creates a second communicator X at the same point of its program (as an SPMD job
# does), inside the activation. Each process ends the activation (its local commit) at its
# own moment: at the next control-thread poll (every 20 ms, ~80 collectives here), or later
# when the thread is busy. Before the fix, X kept the old chain until that local commit, so
# its ranks switched at different collectives.
#   1. after: the reload is requested on one process (the others adopt it through the
#      agreement layer); every rank creates X right after W's first collective decided by
#      the new policy, i.e. W has switched; rank 3 has not committed: its process does not
#      end the activation until every rank created X (NCCLBPF_CONTROL_TEST_HOLD_ACTIVATION
#      names the release file) - an explicit synchronization point, so that X is created
#      inside the activation on rank 3 however the threads are scheduled. Before, a stalled
#      control client held rank 3's control thread, but the client connected only after
#      the switch, and a control-thread tick in between ended the activation first ("nothing
#      tested" under two busy loops; NEWCOMM_SWITCH_DELAY_MS=200, a main thread descheduled
#      200 ms after the switch, fails that script every time). X must run the new
#      policy from its first collective on every rank (failed before the fix: 32 32 32 1299).
#   2. before: rank 3's file is missing when the reload is requested on rank 0, so ranks
#      0-2 stage it and W waits for rank 3 (at most 2,048 collectives: then it abandons);
#      every rank creates X at the same step of W, then rank 3 gets its file and is asked
#      itself. X is a participant on ranks 0-2 (it joined the activation) and staged by the
#      reload on rank 3: W and X each switch at one agreed collective. The ranks' main
#      threads run only up to a step the script sets (agree_rank --gate): held at step 64
#      while rank 0 is asked, moved 16 collectives (one epoch of the request map) at a time
#      until ranks 1 and 2 staged the request and rank 3 refused it, then one more step, in
#      which every rank creates X, and held there while rank 3 is asked. An explicit
#      synchronization: what the script does costs W no collectives of its window, however
#      slow the machine. Before, the ranks ran on while the script waited for the logs, a
#      second CLI process started and rank 3 was asked ("nothing tested" or W abandoned
#      under ASan at load 20; NEWCOMM_ASK_DELAY=3, a script 3 s slower before asking rank 3,
#      fails that script every time).
# Both: `ncclbpf decisions` must find every rank's log consistent on both communicators,
# and the first collective of X decided by the new policy must be the same on every rank.
# usage: run_reload_newcomm.sh AGREE_RANK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR
set -u
RANKBIN=$(realpath "$1") LIB=$(realpath "$2") CLI=$(realpath "$3") POLICIES=$(realpath "$4") RUN=$5
rm -rf "$RUN"; mkdir -p "$RUN"
fail=0
# a port band apart from run_agree.sh (20000..32000) and run_reload_agree.sh (12000..20000)
PORT=$(( 10000 + ($$ % 100) * 20 ))
W=c0ffee01 X=c0ffee02
die() { echo "FAIL [$SCEN]: $*"; fail=1; }

# wait_until SECONDS CMD...: until CMD succeeds, bounded by the clock, not by a count of
# polls (on a loaded machine each poll takes far longer than its sleep)
wait_until() { local end=$((SECONDS + $1)); shift
	while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 0.02; done; return 1; }
socks_everywhere() { [ "$(ls "$DIR/ctl" 2>/dev/null | grep -c '\.sock$')" -ge 4 ]; }
x_everywhere() { [ "$(grep -l "comm 0x$X nRanks" "$DIR"/err.* | wc -l)" -eq 4 ]; }
# before: the ranks' gate (agree_rank --gate): every rank runs up to step N, then holds
set_gate() { echo "$1" >"$DIR/gate.tmp" && mv "$DIR/gate.tmp" "$DIR/gate"; }
at_gate() { [ "$(grep -lx "gate $1" "$DIR"/out.* 2>/dev/null | wc -l)" -eq 4 ]; }
# before: ranks 1 and 2 staged rank 0's request, rank 3 refused it (its file is missing)
adopted() { grep -q "requested by another rank: staged" "$DIR/err.1" &&
	grep -q "requested by another rank: staged" "$DIR/err.2" &&
	grep -q "requested by another rank: not staged" "$DIR/err.3"; }

group_failed() { grep -q "WARN.*agreement impossible" "$DIR"/err.* 2>/dev/null; }

first_tree() { # first_tree LOG COMM: seq of COMM's first Tree decision in LOG
	grep "\"comm\":\"0x$2\"" "$1" | grep -m1 '"algo":"Tree"' | sed 's/.*"seq":\([0-9]*\).*/\1/'
}

run() { # run after|before
	SCEN=$1
	DIR=$RUN/$SCEN; rm -rf "$DIR"; mkdir -p "$DIR/log" "$DIR/ctl"
	PORT=$((PORT + 1))
	while (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done
	export NCCLBPF_POLICY=$POLICIES/size_aware.bpf.o NCCLBPF_DECISION_LOG=$DIR/log
	export NCCLBPF_AGREE=127.0.0.1:$PORT NCCLBPF_RELOAD_AGREE=1 NCCLBPF_CONTROL_DIR=$DIR/ctl
	export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCLBPF_AGREE_WAIT_MS=30000
	echo "== $SCEN"
	local pids=() r
	[ "$SCEN" = before ] && set_gate 64
	for r in 0 1 2 3; do
		mkdir -p "$DIR/node$r"
		cp "$POLICIES/multinode_fix.bpf.o" "$DIR/node$r/new.bpf.o"
		local extra="" steps=100000000 us=200 hold=""
		# rank 3's process ends the activation (its local commit) only at the release,
		# after every rank created X; held from the start: staging and the switch do not
		# wait for it, so there is no moment at which the hold must begin
		[ "$SCEN" = after ] && [ $r = 3 ] && hold=$DIR/release
		[ "$SCEN" = before ] && extra="--comm2-at $DIR/create_at --gate $DIR/gate" us=500
		(cd "$DIR/node$r" && NCCLBPF_CONTROL_TEST_HOLD_ACTIVATION=$hold exec timeout -s KILL 300 "$RANKBIN" "$LIB" $r 4 $steps --until "$DIR/stop" \
			--sleep-us $us --comm $W --comm2 $X $extra >"$DIR/out.$r" 2>"$DIR/err.$r") &
		pids[$r]=$!
	done
	wait_until 120 socks_everywhere
	sleep 0.3
	# the process of rank R: the one whose working directory is nodeR
	pid_of() { local s p; for s in "$DIR"/ctl/*.sock; do p=$(basename "$s" .sock)
		[ "$(readlink "/proc/$p/cwd")" = "$DIR/node$1" ] && { echo "$p"; return; }; done; }
	local p0 p3; p0=$(pid_of 0) p3=$(pid_of 3)
	[ -n "$p0" ] && [ -n "$p3" ] || die "cannot find the processes of ranks 0 and 3"
	if [ "$SCEN" = before ]; then
		wait_until 120 at_gate 64 || die "the ranks did not all reach step 64"
		rm -f "$DIR/node3/new.bpf.o"
	fi
	# with `--all`, the requests of all 4 processes would mix in the agreed request map and
	# kick every control thread at the epoch where W switches, hiding the race in case 1
	"$CLI" ctl "$p0" --dir "$DIR/ctl" reload /proc/self/cwd/new.bpf.o --hook tuner \
		>"$DIR/reload.0" 2>&1 || die "reload: $(cat "$DIR/reload.0")"
	grep -q "staged (activating across ranks" "$DIR/reload.0" ||
		die "not staged: $(cat "$DIR/reload.0")"
	if [ "$SCEN" = before ]; then
		# the request travels through the agreed request map (read at epoch boundaries) and
		# each control thread: one epoch more at a time, until ranks 1-3 handled it (each
		# epoch gives the control threads a second, which costs W no collectives)
		local g=64
		until adopted || wait_until 1 adopted; do
			[ $g -lt 1088 ] || { die "the request did not reach ranks 1-3 in 1,024 collectives"; break; }
			g=$((g + 16))
			set_gate $g
			wait_until 120 at_gate $g || { die "the ranks did not all reach step $g"; break; }
		done
		# X at step g on every rank (agree_rank reads create_at at each step until then),
		# then every rank holds at g + 1 while rank 3 is asked
		echo $g >"$DIR/create_at.tmp" && mv "$DIR/create_at.tmp" "$DIR/create_at"
		set_gate $((g + 1))
		wait_until 120 at_gate $((g + 1)) || die "the ranks did not all reach step $((g + 1))"
		x_everywhere || die "X was not created on every rank at step $g"
		# NEWCOMM_ASK_DELAY=S: a script S seconds slower here (checks this test itself: the
		# gate must make it irrelevant)
		sleep "${NEWCOMM_ASK_DELAY:-0}"
		cp "$POLICIES/multinode_fix.bpf.o" "$DIR/node3/new.bpf.o"
		"$CLI" ctl "$p3" --dir "$DIR/ctl" reload /proc/self/cwd/new.bpf.o --hook tuner \
			>"$DIR/reload.3" 2>&1 || die "reload on rank 3: $(cat "$DIR/reload.3")"
		set_gate 1000000000000
		echo "   X created at step $g of W (request handled by ranks 1-3 by then); rank 3: $(head -1 "$DIR/reload.3")"
	fi
	if [ "$SCEN" = after ]; then # release rank 3's control thread once X exists everywhere
		wait_until 200 x_everywhere
		touch "$DIR/release"
	fi
	# run until X has decided with the new policy on every rank (or the group fell back),
	# then a little more: the outcome, not a number of collectives
	local end=$((SECONDS + 200))
	while [ $SECONDS -lt $end ]; do
		local n=0 f
		for f in "$DIR"/log/*.jsonl; do
			[ -f "$f" ] && [ -n "$(first_tree "$f" $X)" ] && n=$((n + 1))
		done
		[ $n -ge 4 ] && break
		group_failed && break
		sleep 0.05
	done
	sleep 0.2
	touch "$DIR/stop"
	for r in 0 1 2 3; do
		wait "${pids[$r]}" || die "rank $r exited with $?"
	done
	SWITCH_W=() SWITCH_X=()
	for r in 0 1 2 3; do
		local f; f=$(ls "$DIR"/log/*.jsonl | xargs grep -l "\"rank\":$r," | head -1)
		SWITCH_W+=("$(first_tree "$f" $W)") SWITCH_X+=("$(first_tree "$f" $X)")
	done
	echo "   rank 0..3: W switched at seq ${SWITCH_W[*]}; X first decided by the new policy at seq ${SWITCH_X[*]}"
	echo "   X created inside the activation on ranks: $(grep -l "0x$X created while reload" "$DIR"/err.* | sed 's/.*err\.//' | tr '\n' ' ')"
}

check() { # check JOINED_RANKS: ranks whose X must have joined the activation (not vacuous)
	local i
	for i in $1; do
		grep -q "0x$X created while reload version [0-9]* activates" "$DIR/err.$i" ||
			die "rank $i did not create X inside the activation: nothing tested"
	done
	for i in 0 1 2 3; do
		[ -n "${SWITCH_W[$i]}" ] || die "W never switched on rank $i"
		[ "${SWITCH_W[$i]}" = "${SWITCH_W[0]}" ] || die "W switched at different collectives: ${SWITCH_W[*]}"
		[ -n "${SWITCH_X[$i]}" ] || die "X was not created on rank $i, or never ran the new policy"
		[ "${SWITCH_X[$i]}" = "${SWITCH_X[0]}" ] ||
			die "X switched at different collectives on different ranks: ${SWITCH_X[*]}"
	done
	# W's ranks all staged within its window: the activation X joined was not abandoned (a
	# later reload, e.g. rank 3's own request adopted by the others, would switch W and X
	# consistently and hide that the scenario never happened)
	local ab; ab=$(grep -l "reload version [0-9]* abandoned" "$DIR"/err.* | sed 's/.*err\.//' | tr '\n' ' ')
	[ -z "$ab" ] || die "the reload was abandoned on ranks $ab(not staged everywhere within W's window): nothing tested"
	"$CLI" decisions "$DIR/log" >"$DIR/decisions.txt" 2>&1 ||
		die "decision logs disagree: $(grep -v 'all ranks agree' "$DIR/decisions.txt" | head -5)"
}

for scen in after before; do
	prev=$fail
	for _ in 1 2 3; do
		fail=$prev; run $scen
		group_failed || break
		echo "   the agreement layer fell back (overloaded machine); retrying"
	done
	if [ $scen = after ]; then
		check 3
		[ "${SWITCH_X[0]}" = 0 ] || die "X did not run the new policy from its first collective"
	else
		check "0 1 2"
		grep -q "0x$X created while" "$DIR/err.3" && die "rank 3 had no activation when X was created"
	fi
done
[ $fail = 0 ] && echo "run_reload_newcomm: all scenarios passed"
exit $fail
