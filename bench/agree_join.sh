#!/usr/bin/env bash
# bench_agree_join: how long ranks wait at the join barrier (collective 0), for two builds of
# libncclbpf.so in the same run - A/B interleaved, order alternating per repetition.
# N ranks of the mock NCCL host (agree_rank) start at once on loopback with an agreed-map
# policy; each reports its longest wait at close (the join, unless a version was late).
# GATED=1: every rank opens its communicator, then waits before collective 0 until all have
# opened theirs (agree_rank --gate), as NCCL's init ends on every rank together: the join
# alone, without the processes' start skew.
#
# usage: [GATED=1] bench/agree_join.sh AGREE_RANK LIB_A LIB_B POLICY.bpf.o [REPS=10] [NRANKS=4]
# prints per repetition the median over ranks for A and B, then the medians and B/A.
set -u
RANKBIN=$1 LIBA=$2 LIBB=$3 POLICY=$4 REPS=${5:-10} N=${6:-4}
RUN=$(mktemp -d)
trap 'rm -rf "$RUN"' EXIT
port=$(( 24000 + ($$ % 500) * 8 ))
export NCCLBPF_POLICY=$POLICY NCCLBPF_AGREE_WAIT_MS=30000 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING
one() { # LIB -> median longest wait over the ranks, us
	port=$((port + 1))
	while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port + 1)); done
	local r gate=()
	rm -f "$RUN"/gate "$RUN"/out.*
	[ "${GATED:-0}" = 1 ] && gate=(--gate "$RUN/gate")
	for r in $(seq 0 $((N - 1))); do
		NCCLBPF_AGREE=127.0.0.1:$port "$RANKBIN" "$1" "$r" "$N" 300 --sleep-us 100 "${gate[@]}" \
			>"$RUN/out.$r" 2>"$RUN/err.$r" &
	done
	if [ "${GATED:-0}" = 1 ]; then
		local end=$((SECONDS + 60))
		for r in $(seq 0 $((N - 1))); do
			until grep -q '^gate 0' "$RUN/out.$r" 2>/dev/null || [ $SECONDS -ge $end ]; do sleep 0.01; done
		done
		echo 1000000 >"$RUN/gate.tmp" && mv "$RUN/gate.tmp" "$RUN/gate"
	fi
	wait
	cat "$RUN"/err.* | sed -n 's/.*waits (longest \([0-9]*\) us).*/\1/p' | sort -n |
		awk '{v[NR]=$1} END {if (NR == 0) {print "NA"; exit} print v[int((NR+1)/2)]}'
}
a_all=() b_all=()
for i in $(seq 1 "$REPS"); do
	if [ $((i % 2)) = 1 ]; then a=$(one "$LIBA"); b=$(one "$LIBB"); else b=$(one "$LIBB"); a=$(one "$LIBA"); fi
	echo "rep $i: A ${a} us  B ${b} us"
	a_all+=("$a") b_all+=("$b")
done
# a run whose ranks printed no statistics (a crash, a fallback without the line) voids the
# comparison: fail rather than report a median of the others
case " ${a_all[*]} ${b_all[*]} " in *" NA "*) echo "bench_agree_join: a run printed no wait statistics" >&2; exit 1 ;; esac
med() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ma=$(med "${a_all[@]}") mb=$(med "${b_all[@]}")
echo "median over repetitions: A ${ma} us  B ${mb} us  B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN {printf "%.3f", (a > 0 ? b / a : 0)}')"
