#!/bin/sh
# Feeds every .data file of DIR to `ncclbpf exec` through the bpf_conformance plugin protocol:
# program bytes as hex tokens on stdin, memory as one argv element ("xx  yy  ..."), r0 read
# back as hex. Extra arguments (e.g. --interpret, --jit) are passed to `ncclbpf exec`.
# NCCLBPF_EXEC_ALLOW_REJECT: space-separated .data names the verifier may refuse (with
# verification on: --jit or --verify=on); any other refusal is a failure.
# One awk pass parses every file, so a program costs one `ncclbpf exec` and no other
# process (the per-file awk/sed/tr pipelines made this test take minutes on a loaded CI VM).
# usage: run_exec.sh NCCLBPF_BINARY DIR [exec options...]
set -u
cli=$1
dir=$2
shift 2
pass=0
fail=0
rejected=0
# one line per file, '|'-separated (not a tab: IFS whitespace would merge an empty field):
# name, program bytes, memory bytes, expected r0 (hex: lower case, no 0x,
# no leading zeros; decimal as d:N, converted by the shell's 64-bit printf)
records=$(awk '
function flush() {
	if (name == "") return
	printf "%s|%s|%s|%s\n", name, prog, mem, want
}
FNR == 1 { flush(); name = FILENAME; sub(/.*\//, "", name); prog = ""; mem = ""; want = ""; cur = "" }
/^--/ { cur = $2; next }
{
	sub(/#.*/, "")
	if (!NF) next
	if (cur == "raw") {
		for (i = 1; i <= NF; i++) {
			w = $i; sub(/^0[xX]/, "", w)
			while (length(w) < 16) w = "0" w
			for (b = 15; b >= 1; b -= 2) prog = prog substr(w, b, 2) "  "
		}
	} else if (cur == "mem") {
		for (i = 1; i <= NF; i++) { t = $i; sub(/^0[xX]/, "", t); mem = mem t "  " }
	} else if (cur == "result" && want == "") {
		r = $0; gsub(/[ \r]/, "", r)
		if (r ~ /^0[xX]/) {
			r = tolower(substr(r, 3)); sub(/^0+/, "", r); want = r
		} else
			want = "d:" r
	}
}
END { flush() }' "$dir"/*.data)
[ -n "$records" ] || { echo "run_exec.sh: no .data files in $dir" >&2; exit 1; }
while IFS="|" read -r name prog mem want; do
	case "$want" in
	d:*) w=$(printf '%x' "${want#d:}"); w=${w#"${w%%[!0]*}"} ;;
	*) w=$want ;;
	esac
	if [ -n "$mem" ]; then
		got=$(printf '%s\n' "$prog" | "$cli" exec "$mem" "$@")
	else
		got=$(printf '%s\n' "$prog" | "$cli" exec "$@")
	fi
	rc=$?
	g=${got#0x}
	g=${g#"${g%%[!0]*}"} # leading zeros
	if [ $rc -eq 0 ] && [ "$g" = "$w" ]; then
		pass=$((pass + 1))
	elif [ $rc -ne 0 ] && case " ${NCCLBPF_EXEC_ALLOW_REJECT:-} " in
		*" $name "*) true ;; *) false ;; esac &&
		printf '%s\n' "$prog" | "$cli" exec ${mem:+"$mem"} "$@" 2>&1 | grep -q '\[E-'; then
		# a program the verifier refuses by design (e.g. unreachable code)
		rejected=$((rejected + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $name: rc $rc, got '$got', expected '$want'" >&2
	fi
done <<RECORDS
$records
RECORDS
echo "ncclbpf exec $*: $pass passed, $fail failed, $rejected rejected by the verifier"
[ $fail -eq 0 ] && [ $pass -gt 0 ]
