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
# config grammar: forced pair + policy, timed sync (~sK), warm-up sync (~wK)
mkdir -p "$out/build/policies" && touch "$out/build/policies/bandit.bpf.o" "$out/build/libncclbpf.so"
l=$("$script" --dry-run --nodes 2 --reps 1 --build "$out/build" --policy-warmup-sync 4 \
    --configs 'Tree/LL@policy+prof:bandit~s1~w16,policy+prof:bandit,Ring/Simple~s8' --out "$out") ||
  { echo "dry run with combined configs failed"; exit 1; }
a=$(grep -- '--label Tree-LL-policy-prof-bandit-s1-w16 ' <<< "$l")
grep -q 'NCCL_ALGO=Tree NCCL_PROTO=LL ' <<< "$a" && grep -q 'NCCL_PROFILER_PLUGIN=' <<< "$a" &&
  grep -q -- '--warmup-sync-every 16 ' <<< "$a" && grep -q -- '--sync-every 1 ' <<< "$a" &&
  grep -q -- '--policy bandit$' <<< "$a" || { echo "combined config wrong: $a"; fail=1; }
b=$(grep -- '--label policy-prof-bandit ' <<< "$l")
grep -q -- '--warmup-sync-every 4 ' <<< "$b" && ! grep -q -- '--sync-every' <<< "$b" &&
  ! grep -q NCCL_ALGO <<< "$b" || { echo "policy config wrong: $b"; fail=1; }
c=$(grep -- '--label Ring-Simple-s8 ' <<< "$l")
grep -q -- '--sync-every 8 ' <<< "$c" && ! grep -q -- '--warmup-sync' <<< "$c" || { echo "pair~s8 wrong: $c"; fail=1; }
d=$(grep -- '--label policy-prof-bandit-a0 ' <<< "$("$script" --dry-run --nodes 2 --reps 1 --build "$out/build" \
    --configs 'policy+prof:bandit~a0' --out "$out")")
grep -q 'NCCLBPF_AGREE=off ' <<< "$d" || { echo "~a0 wrong: $d"; fail=1; }
# the profiler's own cost, split (GPU call g6): ~n null callbacks, ~mHEX an event mask
e=$("$script" --dry-run --nodes 2 --reps 1 --build "$out/build" \
    --configs 'policy+prof:bandit~a0~n,policy+prof:bandit~m0x2,policy:bandit' --out "$out")
e1=$(grep -- '--label policy-prof-bandit-a0-n ' <<< "$e"); e2=$(grep -- '--label policy-prof-bandit-m0x2 ' <<< "$e")
e3=$(grep -- '--label policy-bandit ' <<< "$e")
grep -q 'NCCLBPF_AGREE=off NCCLBPF_PROFILE_NULL=1 ' <<< "$e1" && ! grep -q PROFILE_MASK <<< "$e1" &&
  grep -q 'NCCLBPF_PROFILE_MASK=0x2 ' <<< "$e2" && ! grep -q PROFILE_NULL <<< "$e2" &&
  ! grep -q 'NCCLBPF_PROFILE_' <<< "$e3" || { echo "~n/~m wrong: $e"; fail=1; }
# ~d0: this config without the decision log the others write, also not the caller's
# directory itself (GPU call g7's first run: ~d0 runs logged there)
f=$(NCCLBPF_DECISION_LOG=$out/dl "$script" --dry-run --nodes 2 --reps 1 --build "$out/build" \
    --configs 'policy+prof:bandit~d0,policy+prof:bandit' --out "$out")
f1=$(grep -- '--label policy-prof-bandit-d0 ' <<< "$f"); f2=$(grep -- '--label policy-prof-bandit ' <<< "$f")
grep -q '^env -u NCCLBPF_DECISION_LOG ' <<< "$f1" && ! grep -q 'NCCLBPF_DECISION_LOG=' <<< "$f1" && grep -q "NCCLBPF_DECISION_LOG=$out/dl/n2-policy-prof-bandit-r0 " <<< "$f2" &&
  [ ! -e "$out/dl" ] || { echo "~d0 wrong: $f"; fail=1; }
# ~x: an A/B of two library builds - the alternative build's plugin for both hooks
mkdir -p "$out/alt" && touch "$out/alt/libncclbpf.so"
g=$("$script" --dry-run --nodes 2 --reps 1 --build "$out/build" --alt-build "$out/alt" \
    --configs 'policy+prof:bandit~x,policy+prof:bandit' --out "$out")
g1=$(grep -- '--label policy-prof-bandit-x ' <<< "$g"); g2=$(grep -- '--label policy-prof-bandit ' <<< "$g")
grep -q "NCCL_TUNER_PLUGIN=$out/alt/libncclbpf.so " <<< "$g1" && grep -q "NCCL_PROFILER_PLUGIN=$out/alt/libncclbpf.so " <<< "$g1" &&
  grep -q "NCCL_TUNER_PLUGIN=$out/build/libncclbpf.so " <<< "$g2" && ! grep -q "/alt/" <<< "$g2" ||
  { echo "~x wrong: $g"; fail=1; }
"$script" --dry-run --nodes 2 --reps 1 --build "$out/build" --configs 'policy+prof:bandit~x' --out "$out" \
  >/dev/null 2>&1 && { echo "~x without --alt-build accepted"; fail=1; }
for bad in 'Tree/LL~x3' 'default~x' 'nonsense' 'default~s' 'default~n' 'policy:bandit~m0x2' 'policy+prof:bandit~m0xg' 'policy+prof:bandit~m2'; do
  "$script" --dry-run --nodes 2 --reps 1 --configs "$bad" --out "$out" >/dev/null 2>&1 &&
    { echo "config '$bad' accepted"; fail=1; }
done
grep -q '"--sync-every"' "$src" && grep -q '"--warmup-sync-every"' "$src" || { echo "harness lacks the sync options"; fail=1; }
# training-step workloads (issue 22): --step replaces the sweep and passes its options on
s=$("$script" --dry-run --nodes 2 --reps 2 --build "$out/build" --configs default,policy+prof:bandit \
    --step ar:4M,ag:1M,rs:1M --steps 50 --gap-us 100 --overlap-us 300 --step-queued --workload fsdp --out "$out") ||
  { echo "step dry run failed"; exit 1; }
[ "$(grep -c -- '--step ar:4M,ag:1M,rs:1M --steps 50 ' <<< "$s")" -eq 4 ] &&
  [ "$(grep -c -- '--gap-us 100 --overlap-us 300 .*--workload fsdp .*--steps-out ' <<< "$s")" -eq 4 ] &&
  [ "$(grep -c -- '--step-queued' <<< "$s")" -eq 4 ] && ! grep -q -- '--min-bytes' <<< "$s" ||
  { echo "step workload options wrong: $s"; fail=1; }
# --step-ahead K: the host K steps ahead (GPU call g9); not with --step-queued
s=$("$script" --dry-run --nodes 2 --reps 1 --build "$out/build" --configs default --step ar:4M \
    --step-ahead 2 --out "$out") && grep -q -- '--step-ahead 2' <<< "$s" && ! grep -q -- '--step-queued' <<< "$s" ||
  { echo "--step-ahead not passed on: $s"; fail=1; }
for bad in '--step-ahead x' '--step-ahead 2 --step-queued'; do
  # shellcheck disable=SC2086
  "$script" --dry-run --nodes 2 --reps 1 --step ar:4M $bad --out "$out" >/dev/null 2>&1 &&
    { echo "'$bad' accepted"; fail=1; }
done
grep -q '"--step-ahead"' "$src" && grep -q 'step_ahead' "$(dirname "$src")/gpubench_steps.cuh" &&
  grep -q 'o->step_queued && o->step_ahead' "$src" ||
  { echo "harness lacks --step-ahead"; fail=1; }
for bad in 'ar:4x' 'xx' 'ar:4M,' 'ar'; do
  "$script" --dry-run --nodes 2 --reps 1 --step "$bad" --out "$out" >/dev/null 2>&1 &&
    { echo "step '$bad' accepted"; fail=1; }
done
"$script" --dry-run --nodes 2 --reps 1 --step ar:4M --gap-us -1 --out "$out" >/dev/null 2>&1 &&
  { echo "negative gap accepted"; fail=1; }
for o in '"--step"' '"--steps-out"' '"--gap-us"' '"--overlap-us"'; do
  grep -q "$o" "$src" || { echo "harness lacks $o"; fail=1; }
done
# --gpus D [--gpus-per-node K]: the nodes on the host's GPUs (multi-GPU kinds, issue 28)
g=$("$script" --dry-run --nodes 2 --reps 1 --gpus 2 --gpus-per-node 2 --configs default --step ar:4M --out "$out")
grep -q -- '--procs 4 --nodes 2 --gpus-per-proc 1 --device-count 2 --step ar:4M' <<< "$g" && ! grep -q -- '--same-gpu' <<< "$g" ||
  { echo "--gpus placement wrong: $g"; fail=1; }
g=$("$script" --dry-run --nodes 2 --reps 1 --gpus 2 --gpus-per-node 2 --node-process --configs default --step ar:4M --out "$out")
grep -q -- '--procs 2 --nodes 2 --gpus-per-proc 2 --device-count 2 --step ar:4M' <<< "$g" ||
  { echo "--node-process placement wrong: $g"; fail=1; }
g=$("$script" --dry-run --nodes 2 --reps 1 --gpus 2 --configs default --out "$out")
grep -q -- '--procs 2 --nodes 2 --gpus-per-proc 1 --device-count 2 --coll' <<< "$g" || { echo "--gpus sweep placement wrong: $g"; fail=1; }
for bad in '--gpus-per-node 2' '--gpus 1 --gpus-per-node 2' '--gpus 2 --gpus-per-node 0' '--gpus x' '--node-process'; do
  "$script" --dry-run --nodes 2 --reps 1 $bad --configs default --out "$out" >/dev/null 2>&1 &&
    { echo "'$bad' accepted"; fail=1; }
done
grep -q '"--device-count"' "$src" && grep -q 'device_count ? (proc \* o->gpus_per_proc + g) % o->device_count' "$src" ||
  { echo "harness lacks --device-count"; fail=1; }
[ $fail -eq 0 ] && echo "emulate-nodes: every run tagged with its repetition; config grammar ok"
exit $fail
