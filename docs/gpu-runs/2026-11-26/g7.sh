#!/bin/bash
# GPU call G7: G6's reload check with a run long enough to reload into (G6 and a first try of this one
# with 150000 iterations ended before the control socket was used): under real NCCL, 1 rank, forced hot reloads
# size_aware <-> noop every 0.2 s while the straight communicator decides; then status.
B=$PWD/gpuwork/build; W=/tmp/g7; rm -rf $W; mkdir -p $W/ctl; date -u
NCCL_TUNER_PLUGIN=$B/libncclbpf.so NCCLBPF_POLICY=$B/policies/size_aware.bpf.o NCCLBPF_CONTROL_DIR=$W/ctl \
  NCCL_DEBUG=WARN timeout 200 $B/ncclbpf-gpubench --coll allreduce --min-bytes 4K --max-bytes 16K \
  --step-factor 4 --iters 1000000 --warmup 20 > $W/reload.log 2>&1 &
P=$!
for _ in $(seq 300); do ls $W/ctl | grep -q '\.sock$' && break; sleep 0.1; done; ls $W/ctl; sleep 1
ok=0
for k in $(seq 20); do
  pol=$([ $((k % 2)) = 1 ] && echo noop || echo size_aware)
  $B/ncclbpf ctl --all --dir $W/ctl reload $B/policies/$pol.bpf.o --hook tuner --force > $W/r$k.txt 2>&1 && ok=$((ok + 1))
  sleep 0.2
done
echo "reloads ok: $ok of 20"; tail -3 $W/r20.txt
sleep 0.5
$B/ncclbpf ctl --all --dir $W/ctl status --json > $W/status.json 2>&1; cp $W/status.json $OUT/g7-status.json
kill -0 $P 2>/dev/null && echo "still running at status time: yes"
wait $P; echo "reload run: exit $?, $(grep -c 'all results correct' $W/reload.log) checked"
python3 -c "
import json; d=json.load(open('$W/status.json')); r=d[0]['reply']
print('status: version', r['version'], 'reloads', r['reloads'], 'retired_pending', r['retired_pending'], 'objects_live', r['objects_live'],
      'decisions', [c['decisions'] for c in r['communicators']], 'general_path', [c['general_path'] for c in r['communicators']],
      'chain_version', [c['chain_version'] for c in r['communicators']], 'hook version', r['hooks'][0]['version'])" 2>&1 | tee $OUT/g7-reload.txt
grep -h "WARN" $W/reload.log | head -3; tail -2 $W/reload.log
