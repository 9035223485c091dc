#!/usr/bin/env bash
# Strangers on the rendezvous port while a job agrees (issue 23, docs/agreement.md "Threat
# model"). 4 ranks of the mock NCCL host run adaptive_channels; rank 0 holds the port (the
# hub) and runs with a low descriptor limit (ulimit -n 64). Meanwhile tests/agree/
# agree_attack, which knows the port and the communicator but not the job's secret:
#   flood   100 connections each streaming a frame that announces a 4 MiB payload
#   slow    60 connections sending a byte every 500 ms (slowloris)
#   idle    100 connections that send nothing
#   forge   HELLO(rank NONE) for the job's communicator (it ended agreement for everyone),
#           4096 REGISTERs (they filled the hub's directory), LOOKUP - unauthenticated
#   forge1  the same in protocol version 1 with the token computed from the commHash
#   fill    300 connections held: the hub process reaches its descriptor limit
# Checked: the job keeps deciding (no rank falls back, `ncclbpf decisions` consistent);
# the hub's resident memory grows less than 32 MiB and its descriptors stay within its
# limit; every flooding, slow, idle and forging connection is closed by the hub; during
# fill the hub's service thread does not spin (passes of its loop, `ctl status`) and the
# job still agrees afterwards. Before: RSS +410 MB for 100 floods, idle and slow sockets
# kept for ever, a forged HELLO ended agreement, the service thread spun at the limit.
#
# usage: run_agree_attack.sh AGREE_RANK AGREE_ATTACK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR
set -u
RANKBIN=$1 ATTACK=$2 LIB=$3 CLI=$4 POLICIES=$5 RUN=$6
rm -rf "$RUN"
mkdir -p "$RUN/log" "$RUN/ctl"
fail=0
die() { echo "FAIL: $*"; fail=1; }
PORT=$(( 16000 + ($$ % 200) * 10 ))
while (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done
export NCCLBPF_POLICY=$POLICIES/adaptive_channels.bpf.o NCCLBPF_DECISION_LOG=$RUN/log
export NCCLBPF_AGREE=127.0.0.1:$PORT NCCLBPF_AGREE_WAIT_MS=30000 NCCLBPF_CONTROL_DIR=$RUN/ctl
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING
pids=()
# rank 0 first (it binds the port: the hub), with few descriptors. In a sanitizer build its
# freed memory goes to ASan's quarantine (256 MB by default), so the resident size grows
# with the job's own work whatever the attack does (+36 MB once under ASan at load 30):
# a 1 MB quarantine keeps the memory bound below about the hub's buffers
(ulimit -n 64; export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1; exec timeout -s KILL 240 "$RANKBIN" "$LIB" 0 4 1000000 --sleep-us 100 \
	--until "$RUN/stop" >"$RUN/out.0" 2>"$RUN/err.0") &
pids[0]=$!
for _ in $(seq 400); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
for r in 1 2 3; do
	timeout -s KILL 240 "$RANKBIN" "$LIB" $r 4 1000000 --sleep-us 100 --until "$RUN/stop" \
		>"$RUN/out.$r" 2>"$RUN/err.$r" &
	pids[$r]=$!
done
for _ in $(seq 600); do grep -q "fan-out\|versions activated\|listening on port" "$RUN/err.0" && break; sleep 0.05; done
# the hub's pid from its log lines (pgrep -P on its timeout parent found nothing at times)
hub=$(sed -n 's/^mockhost:\([0-9]*\) .*/\1/p' "$RUN/err.0" | head -1)
[ -n "$hub" ] || { echo "FAIL: the hub never started"; exit 1; }
sleep 1 # the group formed, versions activate
rss() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$hub/status"; }
fds() { ls "/proc/$hub/fd" 2>/dev/null | wc -l; }
passes() { # the hub's service passes, through its control socket (after an attack)
	"$CLI" ctl "$hub" --dir "$RUN/ctl" status --json 2>/dev/null |
		sed -n 's/.*"service_passes": *\([0-9]*\).*/\1/p' | head -1
}
rss0=$(rss)
# descriptors the launching shell passed down above the limit (not counted against it)
inherited=$(ls "/proc/$hub/fd" | awk '$1 >= 64' | wc -l)
maxrss=$rss0 maxfds=0
watch() { # sample the hub while an attack runs
	while kill -0 "$1" 2>/dev/null; do
		local r f; r=$(rss); f=$(fds)
		[ -n "$r" ] && [ "$r" -gt "$maxrss" ] && maxrss=$r
		[ "$f" -gt "$maxfds" ] && maxfds=$f
		sleep 0.1
	done
}
closed_all() { # MODE OUTPUT: the hub closed every connection it was sent
	local opened closed
	opened=$(sed -n 's/.*: \([0-9]*\) connections, .*/\1/p' "$2")
	closed=$(sed -n 's/.* \([0-9]*\) closed by the target.*/\1/p' "$2")
	echo "   $1: $(cat "$2")"
	[ -n "$opened" ] && [ "$opened" -gt 0 ] || die "$1: no connection opened"
	[ "${closed:-0}" = "$opened" ] || die "$1: the hub kept $((opened - ${closed:-0})) of $opened connections"
}
for mode in flood slow idle forge forge1; do
	n=100; secs=5
	[ $mode = slow ] && n=60
	[ "${mode#forge}" != "$mode" ] && n=10 secs=4
	"$ATTACK" $mode $PORT $n $secs a9ee0001 >"$RUN/attack.$mode" 2>&1 &
	ap=$!
	watch $ap
	wait $ap || die "$mode: the attacker failed: $(cat "$RUN/attack.$mode")"
	closed_all $mode "$RUN/attack.$mode"
done
echo "   resident memory of the hub: $rss0 kB before, at most $maxrss kB under attack; descriptors at most $maxfds"
[ $((maxrss - rss0)) -lt 32768 ] || die "the hub's memory grew by $((maxrss - rss0)) kB"
p0=$(passes)
t0=$(date +%s%N)
"$ATTACK" fill $PORT 300 4 >"$RUN/attack.fill" 2>&1 &
ap=$!
watch $ap
wait $ap
t1=$(date +%s%N)
p1=$(passes)
echo "   fill: $(cat "$RUN/attack.fill"); service passes ${p0:-?} -> ${p1:-?} in $(( (t1 - t0) / 1000000 )) ms; descriptors at most $maxfds (limit 64, $inherited inherited above it)"
[ "$maxfds" -le $((64 + inherited)) ] || die "the hub held $maxfds descriptors (limit 64)"
nowfds=$(fds)
[ "$nowfds" -lt 40 ] || die "the hub still holds $nowfds descriptors after the attacks"
if [ -n "$p0" ] && [ -n "$p1" ]; then
	# a poll loop that spins at the limit makes hundreds of thousands of passes a second; the
	# service thread makes at most a few thousand (a 2 ms timer, its peers' messages)
	rate=$(( (p1 - p0) * 1000 / ( (t1 - t0) / 1000000 + 1 ) ))
	echo "   $rate passes/s during fill"
	[ "$rate" -lt 20000 ] || die "the service thread spun at the descriptor limit ($rate passes/s)"
else
	die "the hub's control socket did not answer after the fill attack"
fi
grep -q "out of file descriptors" "$RUN/err.0" || die "the hub did not say it ran out of descriptors"
sleep 1 # versions still activate after the attacks
# every rank stops at the same collective (an orderly end: "fallback at none"): 4096 past
# the furthest any rank has logged (a bare `touch` let each stop wherever it saw the file,
# and the others fell back where the first destroyed its communicator)
far=0
for f in "$RUN"/log/*.jsonl; do n=$(wc -l <"$f"); [ "$n" -gt "$far" ] && far=$n; done
echo $((far + 4096)) >"$RUN/stop.tmp" && mv "$RUN/stop.tmp" "$RUN/stop"
for r in 0 1 2 3; do wait "${pids[$r]}" || die "rank $r exited with $?"; done
"$CLI" decisions "$RUN/log" >"$RUN/decisions.txt" 2>&1 || die "decision logs disagree: $(head -3 "$RUN/decisions.txt")"
for r in 0 1 2 3; do
	f=$(sed -n 's/.*fallback at \([0-9a-z]*\);.*/\1/p' "$RUN/err.$r" | tail -1)
	v=$(sed -n 's/.*: \([0-9]*\) versions activated.*/\1/p' "$RUN/err.$r" | tail -1)
	[ "$f" = none ] || die "rank $r fell back ($f): $(grep -m1 'agreement impossible' "$RUN/err.$r")"
	[ "${v:-0}" -ge 20 ] || die "rank $r activated only ${v:-0} versions"
done
grep "closed at" "$RUN/err.0" | sed 's/^/   /'
[ $fail = 0 ] && echo "run_agree_attack: the job kept agreeing under every attack"
exit $fail
