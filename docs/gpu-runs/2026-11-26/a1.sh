#!/bin/bash
# GPU call A1 (one GPU, 2 emulated nodes, PyTorch): a rank without ncclbpf's profiler plugin
# (agreefix): every rank falls back at the same collective, results correct, logs consistent.
B=$PWD/gpuwork/build; date -u
export NCCL_NVLS_ENABLE=0 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
for np in 1 0; do
  L=/tmp/np$np; rm -rf $L; mkdir -p $L/log
  NP_RANK=$np NP_PORT=$((29731 + np)) NCCL_TUNER_PLUGIN=$B/libncclbpf.so NCCL_PROFILER_PLUGIN=$B/libncclbpf.so \
  NCCLBPF_POLICY=$B/policies/agree_prior.bpf.o NCCLBPF_DECISION_LOG=$L/log \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING timeout 240 python3 gpuwork/np_check.py 2 > $L/out.txt 2>&1
  echo "== rank without the profiler: $np (rc=$?)"
  grep -E "results|agree:" $L/out.txt | sed 's/^[^ ]* //' | sort | uniq -c | head -12
  $B/ncclbpf decisions $L/log 2>&1 | tail -2; echo "decisions rc=$?"
done 2>&1 | tee $OUT/a1.txt
