#!/usr/bin/env bash
# scripts/emulate-nodes.sh must tag every harness run with its repetition index (the
# harness writes it into the samples' rep column): without it every sample read rep 0 and
# `ncclbpf tune --reps` / emulate_report.py --check-reps saw one repetition (GPU sweep 1).
#   test_emulate_reps.sh SCRIPT
set -u
script=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
lines=$("$script" --dry-run --nodes 2,4 --reps 3 --configs default,Tree/LL --out "$out") || { echo "dry run failed"; exit 1; }
n=$(grep -c -- '--same-gpu' <<< "$lines")
[ "$n" -eq 12 ] || { echo "expected 12 runs, got $n"; fail=1; }
for r in 0 1 2; do
  c=$(grep -c -- "--rep-base $r\( \|$\)" <<< "$lines")
  [ "$c" -eq 4 ] || { echo "rep $r: $c runs carry --rep-base $r (expected 4)"; fail=1; }
done
# every run carries exactly one --rep-base
bad=$(grep -- '--same-gpu' <<< "$lines" | grep -vc -- '--rep-base [0-9]')
[ "$bad" -eq 0 ] || { echo "$bad runs without --rep-base"; fail=1; }
# the harness knows the option (parsed, validated, documented in its usage)
src=$(dirname "$script")/../bench/gpu/ncclbpf_gpubench.cu
grep -q '"--rep-base"' "$src" && grep -q 'rep_base + p->rep' "$src" || { echo "harness lacks --rep-base"; fail=1; }
[ $fail -eq 0 ] && echo "emulate-nodes: every run tagged with its repetition"
exit $fail
