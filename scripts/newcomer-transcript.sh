#!/usr/bin/env bash
# A newcomer's first hour, recorded: runs what README.md and docs/quickstart.md tell a new
# user to run, in order, from the root of a fresh clone, and prints a Markdown transcript
# (each command, its output, its exit status, how long it took), e.g. into
# docs/newcomer-transcript.md (recorded at 0ecb651, 2026-11-29):
#
#   d=$(mktemp -d) && git clone REPO "$d" && cd "$d" && scripts/newcomer-transcript.sh > t.md
#
# The README's build line runs first (it also runs the demo); then every sh block of both
# documents that is not marked `<!-- doctest: skip -->`, line by line, in one shell per block
# (exported variables carry within a block, as for a reader pasting it). Blocks marked skip
# are listed with their reason: they need GPUs or are the build itself.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out_block() { sed -e 's/\x1b\[[0-9;]*m//g' -e "s#$PWD/#./#g"; }

echo "# A newcomer's transcript"
echo
echo "Recorded by \`scripts/newcomer-transcript.sh\` from a fresh clone at commit"
echo "\`$(git rev-parse --short HEAD)\`, $(date -u +%Y-%m-%d), on $(uname -m) ($(nproc) CPUs," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg) at the start), $(. /etc/os-release; echo "$PRETTY_NAME"),"
echo "$(gcc --version | head -n1), $(clang --version | head -n1), $(cmake --version | head -n1)."
echo "Paths are shown relative to the clone; colour codes removed."
echo

run_cmd() { # $1: command text; runs it in bash, prints it and its output
	local t0 t1 rc
	echo '```'
	echo "\$ $1"
	t0=$(date +%s%N)
	bash -o pipefail -c "$1" 2>&1 | out_block
	rc=${PIPESTATUS[0]}
	t1=$(date +%s%N)
	echo '```'
	local ds=$(((t1 - t0) / 100000000))
	printf 'exit status %d, %d.%d s\n\n' "$rc" $((ds / 10)) $((ds % 10))
	return "$rc"
}

echo "## README.md: Set up"
echo
build=$(grep -m1 -E '^cmake -S \. -B build && .*demo\.sh' README.md)
run_cmd "$build" || { echo "**the build failed: stopping here**"; exit 1; }

for doc in README.md docs/quickstart.md; do
	echo "## $doc"
	echo
	awk '
		/^<!-- doctest: skip/ { skip = $0; next }
		/^```sh[ \t]*$/ { inb = 1; printf "%s\n", (skip != "" ? "SKIP " skip : "BLOCK"); skip = ""; next }
		/^```/ && inb { inb = 0; print "END"; next }
		inb { print "L " $0; next }
		NF { skip = "" }
	' "$doc" | {
		block=""; mode=""
		while IFS= read -r l; do
			case "$l" in
			BLOCK) mode=run; block="" ;;
			"SKIP "*) mode=skip; block=""; reason=${l#SKIP <!-- doctest: skip }; reason=${reason% -->} ;;
			END)
				if [ "$mode" = skip ] && [ "$block" = "$build"$'\n' ]; then
					echo "(the build line: run above)"
					echo
				elif [ "$mode" = skip ]; then
					echo "Not run here ($reason):"
					echo '```'
					printf '%s' "$block"
					echo '```'
					echo
				else
					run_cmd "$block"
				fi ;;
			"L "*) block+="${l#L }"$'\n' ;;
			esac
		done
	}
done
echo "## Load at the end"
echo
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
