#!/bin/bash
# GPU call G8: G7 again with 2 ranks (NCCL does not call the tuner of a 1-rank communicator:
# G7's communicator made 0 decisions). 2 processes on one GPU, each its own NCCL_HOSTID
# (--same-gpu), MPS on; size_aware reloaded onto itself 20 times (--force: the same decisions
# on both ranks whenever each switches), every 0.2 s, while both straight communicators
# decide; then status of both processes. (A first try with 40000 iterations ended after 11 reloads.)
B=$PWD/gpuwork/build; W=/tmp/g8; rm -rf $W; mkdir -p $W/ctl $W/mps/pipe $W/mps/log; date -u
export CUDA_MPS_PIPE_DIRECTORY=$W/mps/pipe CUDA_MPS_LOG_DIRECTORY=$W/mps/log
nvidia-cuda-mps-control -d && echo "MPS started"
export NCCL_NVLS_ENABLE=0 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
NCCL_TUNER_PLUGIN=$B/libncclbpf.so NCCLBPF_POLICY=$B/policies/size_aware.bpf.o NCCLBPF_CONTROL_DIR=$W/ctl \
  NCCL_DEBUG=WARN timeout 200 $B/ncclbpf-gpubench --same-gpu 0 --procs 2 --coll allreduce --min-bytes 4K \
  --max-bytes 16K --step-factor 4 --iters 150000 --warmup 20 > $W/reload.log 2>&1 &
P=$!
for _ in $(seq 600); do [ "$(ls $W/ctl | grep -c '\.sock$')" -ge 2 ] && break; sleep 0.1; done; ls $W/ctl; sleep 2
ok=0
for k in $(seq 20); do
  $B/ncclbpf ctl --all --dir $W/ctl reload $B/policies/size_aware.bpf.o --hook tuner --force > $W/r$k.txt 2>&1 && ok=$((ok + 1))
  sleep 0.2
done
echo "reload commands ok: $ok of 20"; tail -4 $W/r20.txt
sleep 0.5
$B/ncclbpf ctl --all --dir $W/ctl status --json > $W/status.json 2>&1; cp $W/status.json $OUT/g8-status.json
kill -0 $P 2>/dev/null && echo "still running at status time: yes"
wait $P; echo "reload run: exit $?, $(grep -c 'all results correct' $W/reload.log) checked"
python3 -c "
import json
for p in json.load(open('$W/status.json')):
    r = p['reply']
    print('pid', p['pid'], 'version', r['version'], 'reloads', r['reloads'], 'retired_pending', r['retired_pending'], 'objects_live', r['objects_live'],
          'decisions', [c['decisions'] for c in r['communicators']], 'general_path', [c['general_path'] for c in r['communicators']],
          'chain_version', [c['chain_version'] for c in r['communicators']], 'hook version', r['hooks'][0]['version'])" 2>&1 | tee $OUT/g8-reload.txt
grep -h "WARN" $W/reload.log | sort | uniq -c | head -5; tail -3 $W/reload.log
echo quit | nvidia-cuda-mps-control
