#!/usr/bin/env bash
# emulate_report.py --steps on step times with known answers: the default runs 1000 us per
# step; the bandit 2000 us for its first 10 steps (learning), then 900 us. Its cost of
# learning over the first 50 steps is 10 x (2000 - 900) us = 11.0 ms (the default's: 0),
# repaid by the 100 us per step it gains: by step 110; the oracle (800 us) is 100 us faster.
# usage: test_emulate_report_steps.sh EMULATE_REPORT.py
set -eu
REPORT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
{
	echo "workload,nnodes,nranks,config,policy,rep,step,time_us"
	for rep in 0 1 2; do
		for s in $(seq 0 49); do
			echo "mixed,2,2,default,,$rep,$s,1000"
			echo "mixed,2,2,policy-oracle,,$rep,$s,800"
			if [ "$s" -lt 10 ]; then t=2000; else t=900; fi
			echo "mixed,2,2,policy-prof-bandit,,$rep,$s,$t"
		done
	done
} >"$T/steps.csv"
python3 "$REPORT" --steps "$T/steps.csv" --first-steps 50 --converge-by 20 --oracle policy-oracle >"$T/out.md" || true
fail=0
expect() {
	grep -qF -- "$1" "$T/out.md" || { echo "FAIL: no line with: $1"; fail=1; }
}
expect "| default | 0.0 [0.0, 0.0] | 0.00 [0.00, 0.00] | – | – |"
expect "| policy-oracle | 0.0 [0.0, 0.0] | 0.00 [0.00, 0.00] | 0.0 [0.0, 0.0] | 0 |"
expect "| policy-prof-bandit | 11.0 [11.0, 11.0] | 19.64 [19.64, 19.64] | 11.0 [11.0, 11.0] | 110 |"
# the first table: the bandit's regret against the oracle over the first 50 steps:
# 10 x 1200 + 40 x 100 us = 16.0 ms
expect "| 16.0 |"
[ $fail = 0 ] || cat "$T/out.md"
[ $fail = 0 ] && echo "emulate_report --steps: cost of learning as expected"
exit $fail
