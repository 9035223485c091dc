#!/bin/bash
# GPU call S4 (one GPU, 4 emulated nodes, MPS): issue 12, a reload requested on ONE process
# propagates through the agreement layer; every rank switches at the same seq.
R=$PWD; B=$R/gpuwork/build; W=/tmp/s4; mkdir -p $W; nvidia-smi -L; date -u
NH=$(python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])'); NL=$(ls $NH/lib/libnccl.so* | head -1)
GB=$W/ncclbpf-gpubench
nvcc -O2 -std=c++17 -arch=sm_90 -I$NH/include -o $GB bench/gpu/ncclbpf_gpubench.cu -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || exit 1
export LD_LIBRARY_PATH=$B:$(dirname $NL):$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
export CUDA_MPS_PIPE_DIRECTORY=$W/mps CUDA_MPS_LOG_DIRECTORY=$W/mpslog; mkdir -p $W/mps $W/mpslog; nvidia-cuda-mps-control -d
N=4; D=$W/one; mkdir -p $D/log $D/ctl
env NCCL_TUNER_PLUGIN=ncclbpf NCCL_PROFILER_PLUGIN=ncclbpf NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCLBPF_POLICY=$B/policies/size_aware.bpf.o NCCLBPF_RELOAD_AGREE=1 NCCLBPF_AGREE=127.0.0.1:29777 NCCLBPF_DECISION_LOG=$D/log NCCLBPF_CONTROL_DIR=$D/ctl \
  timeout 150 $GB --procs $N --same-gpu --coll allreduce --min-bytes 4K --max-bytes 4M --step-factor 4 --iters 3000 --warmup 20 > $D/run.log 2>&1 &
P=$!; for i in $(seq 300); do [ "$(ls $D/ctl 2>/dev/null | grep -c '\.sock$')" -ge $N ] && break; sleep 0.2; done; sleep 3
S=$(ls $D/ctl | grep '\.sock$' | head -1); S=${S%.sock}
$B/ncclbpf ctl $S --dir $D/ctl reload $B/policies/multinode_fix.bpf.o --hook tuner
wait $P; echo "gpubench exit $? correct=$(grep -c 'results correct' $D/run.log)"
grep -h "requested by another rank\|reload version .* across ranks" $D/run.log | sed 's/^.*ncclbpf: //' | head -8
$B/ncclbpf decisions $D/log | tail -2; echo "decisions rc=$?"
for f in $D/log/*.jsonl; do grep -m1 '"channels":0' $f | grep -o '"rank":[0-9]*,"seq":[0-9]*'; done
echo quit | nvidia-cuda-mps-control
