#!/usr/bin/env bash
# `ncclbpf ctl` on agreed maps and on processes ended by SIGTERM (issues 23 and 26):
# 2 processes of the mock NCCL host (agree_rank: tuner + profiler through the real
# libncclbpf.so) run adaptive_channels, whose ac_lat map is agreed across the ranks.
#   - `ctl dump ac_lat` shows the published version each communicator's tuner reads (before:
#     the map's own storage, which no tuner reads: all zeros while versions were active);
#   - `ctl update ac_lat ...` is refused with the reason (before: "updated", no effect);
#   - `ctl maps` says "agreed";
#   - after SIGTERM (the default action: no atexit), the sockets are left behind; `ctl list`
#     removes them and lists nobody.
# The run directory may be as deep as the checkout is: the sockets work in any directory.
# usage: run_ctl_agreed.sh AGREE_RANK LIBNCCLBPF.so NCCLBPF_CLI POLICY_DIR RUN_DIR
set -u
RANKBIN=$(realpath "$1") LIB=$(realpath "$2") CLI=$(realpath "$3") POLICIES=$(realpath "$4") RUN=$5
rm -rf "$RUN"; mkdir -p "$RUN/log" "$RUN/ctl"
fail=0
die() { echo "FAIL: $*"; fail=1; }
PORT=$(( 14000 + ($$ % 400) * 5 ))
while (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done
export NCCLBPF_POLICY=$POLICIES/adaptive_channels.bpf.o NCCLBPF_AGREE=127.0.0.1:$PORT
export NCCLBPF_CONTROL_DIR=$RUN/ctl NCCLBPF_AGREE_WAIT_MS=30000 NCCL_DEBUG=WARN
pids=()
for r in 0 1; do
	# runs until killed below (the hang guard ends it otherwise)
	timeout -s KILL 120 "$RANKBIN" "$LIB" $r 2 100000000 --sleep-us 300 --comm abc0de01 \
		>"$RUN/out.$r" 2>"$RUN/err.$r" &
	pids[$r]=$!
done
for _ in $(seq 300); do
	[ "$(ls "$RUN/ctl" | grep -c '\.sock$')" -ge 2 ] && break
	sleep 0.1
done
[ "$(ls "$RUN/ctl" | grep -c '\.sock$')" -ge 2 ] || die "the 2 sockets did not appear"
socks=($(ls "$RUN/ctl" | grep '\.sock$' | sed 's/\.sock$//')) # the ranks (timeout's children)
p=${socks[0]}
# the published version: it exists after a few epochs (K = 64 collectives)
dump=
for _ in $(seq 300); do
	dump=$("$CLI" ctl "$p" dump ac_lat --json 2>&1)
	echo "$dump" | grep -q '"comm":"0x00000000abc0de01","version":[1-9]' && break
	sleep 0.1
done
echo "$dump" | grep -q '"schema":"ncclbpf.ctl.dump/1","map":"ac_lat","type":"array","agreed":true' ||
	die "dump of an agreed map: $(echo "$dump" | head -c 400)"
echo "$dump" | grep -q '"comm":"0x00000000abc0de01","version":[1-9]' ||
	die "no published version in the dump: $(echo "$dump" | head -c 400)"
# something published is non-zero (the profiler programs' latencies, reduced)
echo "$dump" | grep -q '"value":"[0-9a-f]*[1-9a-f][0-9a-f]*"' || die "the published version is all zeros"
text=$("$CLI" ctl "$p" dump ac_lat 2>&1)
echo "$text" | grep -q "^agreed map ac_lat (epoch 64 collectives)" || die "text dump: $(echo "$text" | head -3)"
echo "$text" | grep -q "^comm 0x00000000abc0de01: version [1-9][0-9]* (active from collective" ||
	die "text dump: $(echo "$text" | head -3)"
upd=$("$CLI" ctl "$p" update ac_lat 0 hex:$(printf '%0256d' 0) 2>&1)
rc=$?
[ $rc = 1 ] || die "update of an agreed map: exit $rc, wanted 1: $upd"
echo "$upd" | grep -q "is an agreed map (NCCLBPF_F_AGREED).*not updated" || die "update: $upd"
"$CLI" ctl "$p" maps 2>&1 | grep -q "ac_lat .* agreed" || die "maps does not say agreed"
# SIGTERM: the sockets stay (no handler of ours); ctl list removes them
kill -TERM "${socks[0]}" "${socks[1]}"
wait "${pids[0]}" "${pids[1]}" 2>/dev/null
[ "$(ls "$RUN/ctl" | grep -c '\.sock$')" = 2 ] || die "expected the 2 stale sockets after SIGTERM"
list=$("$CLI" ctl list 2>&1)
rc=$?
[ $rc = 0 ] || die "ctl list: exit $rc"
[ "$(echo "$list" | grep -c "removed stale socket")" = 2 ] || die "ctl list: $list"
[ "$(ls "$RUN/ctl" | grep -c '\.sock$')" = 0 ] || die "stale sockets left: $(ls "$RUN/ctl")"
[ $fail = 0 ] && echo "run_ctl_agreed: passed"
exit $fail
