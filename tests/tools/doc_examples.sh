#!/usr/bin/env bash
# The documentation's examples, run: so they cannot drift from the code.
#
#   doc_examples.sh SOURCE_DIR BUILD_DIR [--update]
#
# 1. Every ```sh block of README.md, docs/quickstart.md and docs/writing-policies.md runs,
#    from the repository root, and must succeed -- except a block right after a line
#    `<!-- doctest: skip REASON -->` (the set-up commands, which are the build itself;
#    fragments with placeholder paths; commands that need GPUs).
# 2. Every output block right after `<!-- example: COMMAND -->` in docs/*.md and README.md
#    must be exactly what COMMAND prints (stdout and stderr) when run from the repository
#    root, with the repository's absolute path removed. --update rewrites those blocks
#    instead (`cmake --build build --target doc-examples`).
#
# Commands run in a scratch copy of the root: every top-level entry of SOURCE_DIR is
# symlinked, and build/ points at BUILD_DIR (so build-asan works too); files the examples
# write (e.g. a compiled size_aware.bpf.o) land in the scratch directory.
set -uo pipefail
src=$(cd "$1" && pwd)
bld=$(cd "$2" && pwd)
update=${3:-}
root=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$root" "$work"' EXIT
for e in "$src"/* "$src"/.ci; do
	n=$(basename "$e")
	case "$n" in build*) continue ;; esac
	ln -s "$e" "$root/$n"
done
ln -s "$bld" "$root/build"
fail=0

# ---- 1. shell blocks ----
for doc in README.md docs/quickstart.md docs/writing-policies.md; do
	rm -f "$work"/sh.*
	awk -v out="$work/sh." '
		/^<!-- doctest: skip/ { skip = 1; next }
		/^```sh[ \t]*$/ { if (!skip) { n++; f = out n; printf "" > f; inb = 1 } else inb = 2; skip = 0; next }
		/^```/ && inb { inb = 0; if (f) close(f); f = ""; next }
		inb == 1 { print >> f; next }
		inb == 2 { next }
		NF { skip = 0 }
	' "$src/$doc"
	for b in "$work"/sh.*; do
		[ -f "$b" ] || continue
		if ! out=$(cd "$root" && env -u NCCLBPF_POLICY bash -eo pipefail "$b" 2>&1); then
			echo "FAIL: $doc: this block failed:"
			sed 's/^/    /' "$b"
			echo "  output:"
			tail -n 20 <<<"$out" | sed 's/^/    /'
			fail=1
		else
			echo "ok: $doc: block $(basename "$b") ($(head -n1 "$b" | cut -c1-60)...)"
		fi
	done
done

# ---- 2. example outputs ----
# (relative to SOURCE_DIR: ctest runs this from the build directory)
for doc in README.md $(cd "$src" && echo docs/*.md); do
	grep -q '^<!-- example: ' "$src/$doc" || continue
	tmp="$work/new.md"
	: >"$tmp"
	state=0 # 0 text, 1 after an example marker, 2 inside its block
	cmd=""
	expected="$work/expected"
	while IFS= read -r line || [ -n "$line" ]; do
		case $state in
		0)
			printf '%s\n' "$line" >>"$tmp"
			if [[ $line =~ ^\<\!--\ example:\ (.*)\ --\>$ ]]; then
				cmd=${BASH_REMATCH[1]}
				state=1
			fi
			;;
		1)
			printf '%s\n' "$line" >>"$tmp"
			if [[ $line == '```'* ]]; then
				state=2
				: >"$expected"
			fi
			;;
		2)
			if [[ $line == '```' ]]; then
				actual=$(cd "$root" && env -u NCCLBPF_POLICY -u NCCLBPF_RANK_LOCAL \
					NO_COLOR=1 bash -c "$cmd" 2>&1 | sed -e "s#$src/##g" -e "s#$root/##g")
				printf '%s\n' "$actual" >>"$tmp"
				printf '%s\n' "$line" >>"$tmp"
				if [ "$actual" != "$(cat "$expected")" ]; then
					if [ "$update" = --update ]; then
						echo "updated: $doc: $cmd"
					else
						echo "FAIL: $doc: the example of \`$cmd\` is stale:"
						diff <(cat "$expected") <(printf '%s\n' "$actual") | sed 's/^/    /'
						fail=1
					fi
				else
					echo "ok: $doc: example \`$cmd\`"
				fi
				state=0
			else
				printf '%s\n' "$line" >>"$expected"
			fi
			;;
		esac
	done <"$src/$doc"
	if [ "$update" = --update ] && ! cmp -s "$tmp" "$src/$doc"; then
		cp "$tmp" "$src/$doc"
	fi
done

# ---- 3. completeness ----
# every shipped policy in the guide's table
for f in "$src"/policies/*.bpf.c; do
	n=$(basename "$f" .bpf.c)
	if ! grep -Eq "^\| [^|]*\`$n\`" "$src/docs/writing-policies.md"; then
		echo "FAIL: docs/writing-policies.md: shipped policy '$n' is missing from the table"
		fail=1
	fi
done
# every command in the README's table
for c in $("$bld/ncclbpf" help | sed -n '/^commands:/,$p' | awk 'NR > 1 { print $1 }'); do
	if ! grep -q "^| \`ncclbpf $c" "$src/README.md"; then
		echo "FAIL: README.md: command '$c' is missing from the command table"
		fail=1
	fi
done
# ... with every option of its --help "options:" block (either spelling of "-o, --output")
for c in $("$bld/ncclbpf" help | sed -n '/^commands:/,$p' | awk 'NR > 1 { print $1 }'); do
	rows=$(grep "^| \`ncclbpf $c" "$src/README.md")
	while read -r alts; do
		[ -n "$alts" ] || continue
		found=0
		for o in $alts; do
			case "$rows" in *"$o"*) found=1 ;; esac
		done
		if [ $found = 0 ]; then
			echo "FAIL: README.md: option '$alts' of 'ncclbpf $c' is missing from the command table"
			fail=1
		fi
	done < <("$bld/ncclbpf" help "$c" | sed -n '/^options:/,/^$/p' |
		 grep -oE '^  -[A-Za-z-][A-Za-z0-9-]*(, --?[A-Za-z][A-Za-z0-9-]*)?' | tr -d ',')
done
for c in simulate stress versions; do
	grep -q "^| \`mock_nccl_host $c" "$src/README.md" ||
		{ echo "FAIL: README.md: mock_nccl_host $c is missing from the command table"; fail=1; }
done
# docs/results.md's top-level sections numbered 1, 2, ... in order (documents cite them by
# number; two branches appending "## 9." each collide)
bad_numbers=$(grep -E '^## [0-9]+\.' "$src/docs/results.md" |
	awk '{ n = $2 + 0; if (n != NR) print "    \"" $0 "\" should be section " NR }')
if [ -n "$bad_numbers" ]; then
	echo "FAIL: docs/results.md: sections out of order or numbered twice:"
	echo "$bad_numbers"
	fail=1
fi
# no reference to files outside the repository
if grep -nE '/work/|\.\./shared|/home/|/root/' "$src/README.md" "$src"/docs/*.md; then
	echo "FAIL: the lines above refer to files outside the repository"
	fail=1
fi

if [ $fail -ne 0 ]; then
	echo "doc examples: FAILED (stale examples: cmake --build build --target doc-examples)"
	exit 1
fi
echo "doc examples: all passed"
