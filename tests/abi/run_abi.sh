#!/usr/bin/env bash
# Call-path scenarios (issue 25, CTest label abi): for each NCCL path that can break "one
# tuner call per collective, in the same order on every rank" and each NCCL release where it
# exists, a job of NRANKS processes of the mock NCCL host (tests/abi/abi_rank.c: tuner and
# profiler of the real libncclbpf.so, the release's versions) with rank agreement on, a
# closed-loop policy over agreed maps and decision logs. Each run must show, on every rank:
#  - what NCCL ran for every collective (and how often it called the tuner): identical;
#  - the decision logs: `ncclbpf decisions` exit 0 (the same collective sequence numbers,
#    collectives, sizes and decisions), or - for the one application bug shown
#    (ncclGroupSimulateEnd on some ranks only) - exit 3 naming the first shifted collective;
#  - agreed activations: the same number of versions on every rank, no fallback.
# Plus each path's own check (a channel NCCL would index out of range, a per-call
# selection overridden, a tuner call during a graph replay: abi_rank exits 1).
#
# usage: run_abi.sh ABI_RANK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR
set -u
RANKBIN=$1 LIB=$2 CLI=$3 POLICIES=$4 RUN=$5
PROGS=$(cd "$(dirname "$RANKBIN")" && pwd)/progs
STEPS=${ABI_STEPS:-160}
NRANKS=${ABI_NRANKS:-3}
[ -x "$RANKBIN" ] && [ -x "$CLI" ] || { echo "run_abi.sh: $RANKBIN or $CLI missing"; exit 1; }
rm -rf "$RUN"
mkdir -p "$RUN"
fail=0
BASEPORT=$(( 21000 + ($$ % 500) * 20 ))
no=0

die() { echo "FAIL [$NAME]: $*"; fail=1; }

versions_of() { sed -n 's/.*: \([0-9]*\) versions activated.*/\1/p' "$1" | tail -1; }
fallback_of() { sed -n 's/.*closed at collective [0-9]*: .*fallback at \([0-9a-z]*\);.*/\1/p' "$1" | tail -1; }

# run SCENARIO REL POLICY [expect_decisions_rc] [extra abi_rank args...]
run() {
	local scen=$1 rel=$2 pol=$3 want_rc=${4:-0}; shift 4
	no=$((no + 1))
	NAME="$scen@$rel"
	local dir=$RUN/$scen-$rel-$no
	mkdir -p "$dir/log"
	local port=$((BASEPORT + no))
	while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port + 1)); done
	echo "== $NAME ($(basename "$pol"))"
	local pids=()
	for r in $(seq 0 $((NRANKS - 1))); do
		NCCLBPF_POLICY=$pol NCCLBPF_DECISION_LOG=$dir/log NCCLBPF_AGREE=127.0.0.1:$port \
		NCCLBPF_AGREE_WAIT_MS=30000 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \
			timeout -s KILL 120 "$RANKBIN" "$LIB" "$r" "$NRANKS" "$STEPS" --nccl "$rel" \
			--scenario "$scen" --out "$dir/ran.$r" "$@" >"$dir/out.$r" 2>"$dir/err.$r" &
		pids[$r]=$!
	done
	for r in "${!pids[@]}"; do
		wait "${pids[$r]}"
		local rc=$?
		[ $rc -eq 0 ] || { die "rank $r exited with $rc"; grep -m3 "rank $r:" "$dir/err.$r" | sed 's/^/   /'; }
	done
	# what NCCL ran: identical on every rank
	for r in $(seq 1 $((NRANKS - 1))); do
		if ! cmp -s "$dir/ran.0" "$dir/ran.$r"; then
			[ "$want_rc" = 3 ] && continue # the shifted job: the decision log shows it
			die "rank $r ran something else than rank 0: $(diff "$dir/ran.0" "$dir/ran.$r" | head -3 | tr '\n' ' ')"
		fi
	done
	echo "   $(grep -c '^ran\|^replayed' "$dir/ran.0") collectives run per rank, $(tail -1 "$dir/ran.0")"
	# tuner ABI v4 (2.27) passes no commHash: no agreement group, no decision log
	if [ "$rel" = 2.27 ]; then
		echo "   2.27 (tuner v4, no commHash): no agreement or decision log to compare"
		DIR=$dir
		return
	fi
	# decision logs
	"$CLI" decisions "$dir/log" >"$dir/decisions.txt" 2>&1
	local drc=$?
	sed 's/^/   /' "$dir/decisions.txt" | head -8
	[ $drc -eq "$want_rc" ] || die "ncclbpf decisions exit $drc, want $want_rc"
	# agreed activations
	local v0="" f
	for r in $(seq 0 $((NRANKS - 1))); do
		local v; v=$(versions_of "$dir/err.$r")
		f=$(fallback_of "$dir/err.$r")
		[ "$want_rc" = 3 ] && continue
		[ -n "$v" ] || { die "rank $r: no agreement statistics"; continue; }
		[ -z "$v0" ] && v0=$v
		[ "$v" = "$v0" ] || die "rank $r activated $v versions, rank 0 $v0"
		[ "$f" = none ] || die "rank $r fell back at collective $f"
	done
	[ "$want_rc" = 3 ] || { [ "${v0:-0}" -ge 1 ] || die "no version activated"; }
	[ "$want_rc" = 3 ] || echo "   agreement: $v0 versions activated on every rank, no fallback"
	DIR=$dir
}

ADAPT=$POLICIES/adaptive_channels.bpf.o

# symmetric kernels (2.31+): a symmetric-LL winner runnable on rank 0 only
for rel in 2.31 2.32; do run sym $rel "$ADAPT" 0; done
# uneven all-gathers: broadcasts tuned one by one (<= 2.28) or once per batched plan (2.29+)
for rel in 2.27 2.28 2.29 2.30 2.31 2.32; do run allgatherv $rel "$ADAPT" 0; done
# ncclGroupSimulateEnd: tuner calls without a launch, on every rank alike
for rel in 2.30 2.32; do run simulate $rel "$ADAPT" 0; done
# ... and on rank 0 only (an application bug): the ranks' collectives shift, and the
# decision logs say where
run simulate 2.32 "$ADAPT" 3 --simulate-ranks 1
grep -q "DIVERGENT" "$DIR/decisions.txt" || die "ncclbpf decisions did not name the divergence"
# copy-engine collectives: never tuned
for rel in 2.30 2.32; do run ce $rel "$ADAPT" 0; done
# CUDA graphs: tuned at capture, replayed without the tuner (adaptive_channels, bandit)
for rel in 2.28 2.30 2.32; do run graph $rel "$ADAPT" 0; done
run graph 2.32 "$POLICIES/bandit.bpf.o" 0
grep -q '^replayed' "$DIR/ran.0" || die "no replay"
# grouped collectives of mixed types: bins and numPipeOps > 1 (<= 2.30), per call (2.31+)
for rel in 2.28 2.30 2.32; do run grouped $rel "$ADAPT" 0; done
# 2.31+ per-call algSelection: never overridden; an unsatisfiable one falls back (2 calls)
for rel in 2.31 2.32; do
	run percall $rel "$ADAPT" 0
	# the application's tags (profiler v7) reach the decision log: a one-call group's
	# decision carries its tag, on every rank alike; untagged calls carry none
	for r in $(seq 0 $((NRANKS - 1))); do
		f=$(grep -l "\"rank\":$r," "$DIR"/log/*.jsonl | head -1)
		n=$(grep -c '"tag":10[0-4]' "$f")
		[ "$n" -ge "$STEPS" ] || die "rank $r: $n decisions carry the call's tag, want >= $STEPS"
		grep -q '"bytes":262144,[^}]*"tag"' "$f" && die "rank $r: an untagged call got a tag"
		# provenance: a call narrowed by its algSelection is the application's where no
		# policy changed it (adaptive_channels changes channel counts once it has
		# learned). 1 MiB calls alternate full (even steps) and Ring-only (odd); a 256 KiB
		# call tuned twice (an unsatisfiable PAT selection) offers nothing the first time
		# (the communicator's first such call has nothing to compare with); any other call
		# is never the application's
		bad=$(awk -F'"src":"' '
			function lone() { if (pend != "" && pend == "call") print "256KiB lone: call"; pend = "" }
			{ src = $2; sub(/".*/, "", src) }
			/"bytes":1048576,/ {
				lone()
				if (n1++ % 2 == 1) { if (src != "call" && src != "policy") print "1MiB Ring-only: " src }
				else if (src == "call") print "1MiB full: call"
				next }
			/"bytes":262144,/ {
				if (pend == "") { pend = src; next }
				if (pairs++ > 0 && pend != "call" && pend != "policy") print "256KiB unsatisfiable: " pend
				if (src == "call") print "256KiB retuned: call"
				pend = ""; next }
			END { lone() }' "$f")
		[ -z "$bad" ] || die "rank $r: call provenance: $(echo "$bad" | sort | uniq -c | tr '\n' ';')"
		c=$(grep -c '"src":"call"' "$f")
		[ "$c" -ge 10 ] || die "rank $r: $c decisions with src call, want >= 10"
	done
done
# a group of several tagged calls: which tuner call is whose is not known before 2.31 (a
# call shares its bin's): no tag is logged rather than a wrong one
grep -q '"tag"' "$RUN"/grouped-2.30-*/log/*.jsonl && die "grouped@2.30: a tag was guessed"
# channel counts above what the communicator has
for rel in 2.28 2.29 2.30 2.31 2.32; do
	run nchannels $rel "$ADAPT,$PROGS/wide_channels.bpf.o" 0
	grep -q "channel count clamped" "$DIR/err.0" || die "the clamp to 64 was not logged"
	n=$(grep -c "channel count clamped" "$DIR/err.0")
	[ "$n" -eq 1 ] || die "the clamp was logged $n times (once per process)"
	case $rel in 2.29|2.30)
		grep -q "channel count not applied to AllGather" "$DIR/err.0" ||
			die "keeping NCCL's count for AllGather was not logged" ;;
	esac
done

[ $fail -eq 0 ] && echo "all call-path scenarios consistent" || echo "call-path scenarios FAILED"
exit $fail
