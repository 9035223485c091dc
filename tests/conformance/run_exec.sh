#!/bin/sh
# Feeds every .data file of DIR to `ncclbpf exec` through the bpf_conformance plugin protocol:
# program bytes as hex tokens on stdin, memory as one argv element ("xx  yy  ..."), r0 read
# back as hex. Extra arguments (e.g. --interpret, --jit) are passed to `ncclbpf exec`.
# NCCLBPF_EXEC_ALLOW_REJECT: space-separated .data names the verifier may refuse (with
# verification on: --jit or --verify=on); any other refusal is a failure.
# usage: run_exec.sh NCCLBPF_BINARY DIR [exec options...]
set -u
cli=$1
dir=$2
shift 2
pass=0
fail=0
rejected=0
for f in "$dir"/*.data; do
	mem=
	# section contents with comments stripped
	sect() { awk -v s="$1" '/^--/ { cur = $2; next } { sub(/#.*/, "") } cur == s && NF { print }' "$f"; }
	prog=$(sect raw | awk '{ for (i = 1; i <= NF; i++) { w = $i; sub(/^0[xX]/, "", w);
		while (length(w) < 16) w = "0" w;
		for (b = 15; b >= 1; b -= 2) printf "%s  ", substr(w, b, 2) } } END { print "" }')
	want=$(sect result | head -n 1 | tr -d ' \r')
	if sect mem | grep -q .; then
		mem=$(sect mem | awk '{ for (i = 1; i <= NF; i++) { t = $i; sub(/^0[xX]/, "", t); printf "%s  ", t } }')
		got=$(printf '%s\n' "$prog" | "$cli" exec "$mem" "$@")
	else
		got=$(printf '%s\n' "$prog" | "$cli" exec "$@")
	fi
	rc=$?
	# compare as numbers: strip 0x, lower case, leading zeros
	norm() { printf '%s' "$1" | tr 'A-F' 'a-f' | sed 's/^0x//; s/^0*//'; }
	case "$want" in
	0x* | 0X*) w=$(norm "$want") ;;
	*) w=$(norm "$(printf '%x' "$want")") ;;
	esac
	if [ $rc -eq 0 ] && [ "$(norm "$got")" = "$w" ]; then
		pass=$((pass + 1))
	elif [ $rc -ne 0 ] && case " ${NCCLBPF_EXEC_ALLOW_REJECT:-} " in
		*" $(basename "$f") "*) true ;; *) false ;; esac &&
		printf '%s\n' "$prog" | "$cli" exec ${mem:+"$mem"} "$@" 2>&1 | grep -q '\[E-'; then
		# a program the verifier refuses by design (e.g. unreachable code)
		rejected=$((rejected + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $(basename "$f"): rc $rc, got '$got', expected '$want'" >&2
	fi
done
echo "ncclbpf exec $*: $pass passed, $fail failed, $rejected rejected by the verifier"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
