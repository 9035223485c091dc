#!/bin/bash
# GPU call G6: the final decision path (cf797a5) against main before this work (a5309a6) on the
# GPU host's CPU, pinned, interleaved; then, under real NCCL, forced hot reloads while one
# straight communicator decides (its counted sections must let every replaced chain go),
# and the 2-emulated-node check of the straight path (noop, size_aware, lookup_update).
B=$PWD/gpuwork/build; A=$PWD/gpuwork/base; W=/tmp/g6; mkdir -p $W/ctl; date -u; lscpu | grep "Model name"
for i in 1 2 3 4 5 6 7; do
  echo "$i base  $(taskset -c 3 $A/bench/bench_cpu_dispatch 2000 1000 $B/policies 2>&1 | grep -E 'plugin - native' | awk '{print $7}' | tr '\n' ' ')"
  echo "$i final $(taskset -c 3 $B/bench/bench_cpu_dispatch 2000 1000 $B/policies 2>&1 | grep -E 'plugin - native' | awk '{print $7}' | tr '\n' ' ')"
done 2>&1 | tee $OUT/g6-dispatch.txt
for i in 1 2 3 4; do
  echo "$i base  $(taskset -c 3 $B/ncclbpf bench --lib $A/libncclbpf.so --policy-dir $B/policies --calls 1000000 --rounds 9 --policies noop,size_aware,lookup_only 2>&1 | grep -E '^(noop|size_aware|lookup_only) ' | awk '{print $1, $(NF)}' | tr '\n' ' ')"
  echo "$i final $(taskset -c 3 $B/ncclbpf bench --calls 1000000 --rounds 9 --policies noop,size_aware,lookup_only 2>&1 | grep -E '^(noop|size_aware|lookup_only) ' | awk '{print $1, $(NF)}' | tr '\n' ' ')"
done 2>&1 | tee $OUT/g6-bench.txt
# forced reloads under real NCCL, 1 rank: size_aware <-> noop every 0.2 s
NCCL_TUNER_PLUGIN=$B/libncclbpf.so NCCLBPF_POLICY=$B/policies/size_aware.bpf.o NCCLBPF_CONTROL_DIR=$W/ctl \
  NCCL_DEBUG=WARN timeout 200 $B/ncclbpf-gpubench --coll allreduce --min-bytes 4K --max-bytes 1M \
  --step-factor 4 --iters 4000 --warmup 20 > $W/reload.log 2>&1 &
P=$!
for _ in $(seq 300); do ls $W/ctl/*.sock >/dev/null 2>&1 && break; sleep 0.1; done; sleep 1
for k in $(seq 20); do
  pol=$([ $((k % 2)) = 1 ] && echo noop || echo size_aware)
  $B/ncclbpf ctl --all --dir $W/ctl reload $B/policies/$pol.bpf.o --hook tuner --force > /dev/null 2>&1 || echo "reload $k failed"
  sleep 0.2
done
$B/ncclbpf ctl --all --dir $W/ctl status --json > $W/status.json 2>&1; cp $W/status.json $OUT/g6-status.json
wait $P; echo "reload run: exit $?, $(grep -c 'all results correct' $W/reload.log) checked"
python3 -c "
import json; d=json.load(open('$W/status.json')); r=d[0]['reply'] if isinstance(d, list) else d
print('status: version', r['version'], 'reloads', r['reloads'], 'retired_pending', r['retired_pending'], 'objects_live', r['objects_live'],
      'comm decisions', [c['decisions'] for c in r['communicators']], 'general_path', [c['general_path'] for c in r['communicators']],
      'chain_version', [c['chain_version'] for c in r['communicators']], 'hook version', r['hooks'][0]['version'])" 2>&1 | tee $OUT/g6-reload.txt
grep -h "WARN" $W/reload.log | head -3
NCCL_DEBUG=WARN timeout 240 scripts/emulate-nodes.sh --nodes 2 --reps 1 --max-bytes 64M \
  --configs default,policy:noop,policy:size_aware,policy:lookup_update --warmup 5 --iter-bytes 128M --min-iters 8 --build $B --out $W/emu > $W/run.txt 2>&1; echo "emulate rc=$?"
tail -1 $W/run.txt; grep -c "all results correct" $W/emu/logs/*.log; grep -h "WARN" $W/emu/logs/*.log | head -5
