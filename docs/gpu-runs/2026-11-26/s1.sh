#!/bin/bash
# GPU call S1 (one GPU, emulated nodes): issues 13 (net), 10 (agreement), 12 (reload), 14 (containment)
R=$PWD; B=$R/gpuwork/build; W=/tmp/s1; mkdir -p $W
nvidia-smi -L; python3 -c 'import torch;print("nccl",torch.cuda.nccl.version())'; date -u
NH=$(python3 -c 'import nvidia.nccl;print(list(nvidia.nccl.__path__)[0])'); NL=$(ls $NH/lib/libnccl.so* | head -1)
GB=$W/ncclbpf-gpubench
nvcc -O2 -std=c++17 -arch=sm_90 -I$NH/include -o $GB bench/gpu/ncclbpf_gpubench.cu -L$(dirname $NL) -l:$(basename $NL) -Xlinker -rpath=$(dirname $NL) || exit 1
export LD_LIBRARY_PATH=$B:$(dirname $NL):$LD_LIBRARY_PATH NCCL_NVLS_ENABLE=0 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
echo "=== 13 net"
timeout 200 bench/gpu/net-emulate.sh --configs socket,ncclbpf --nodes 2,4 --reps 5 --bench $GB --build $B --out $W/net > $W/net.txt 2>&1; echo "net rc=$?"
timeout 60 bench/gpu/net-emulate.sh --configs standalone,wrap --nodes 2 --reps 5 --max-bytes 64M --bench $GB --build $B --out $W/wrap > $W/wrap.txt 2>&1; echo "wrap rc=$?"
python3 bench/gpu/net_report.py $W/net > $OUT/net.md 2>&1; python3 bench/gpu/net_report.py $W/wrap >> $OUT/net.md 2>&1; cat $OUT/net.md
echo "=== MPS"; export CUDA_MPS_PIPE_DIRECTORY=$W/mps CUDA_MPS_LOG_DIRECTORY=$W/mpslog; mkdir -p $W/mps $W/mpslog; nvidia-cuda-mps-control -d
ENV="NCCL_TUNER_PLUGIN=ncclbpf NCCL_PROFILER_PLUGIN=ncclbpf NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING"
echo "=== 10 agreement: adaptive_channels + slo_enforcer strict, 2 and 4 ranks, flat and tree"
for cfg in "2 adaptive_channels flat" "4 adaptive_channels flat" "4 adaptive_channels 2" "4 slo_enforcer flat"; do
  set -- $cfg; N=$1; P=$2; F=$3; D=$W/agree-$N-$P-$F; mkdir -p $D/log
  env $ENV NCCLBPF_POLICY=$B/policies/$P.bpf.o NCCLBPF_AGREE=127.0.0.1:$((29500+RANDOM%400)) NCCLBPF_AGREE_FANOUT=$F NCCLBPF_DECISION_LOG=$D/log \
    timeout 120 $GB --procs $N --same-gpu --coll allreduce --min-bytes 1K --max-bytes 64M --iters 200 --warmup 20 > $D/run.log 2>&1; echo "agree $cfg: exit $? $(grep -c 'results correct' $D/run.log) correct, impossible=$(grep -c 'agreement impossible' $D/run.log) rank-local=$(grep -c E-RANK-LOCAL $D/run.log)"
  grep -h "fan-in tree" $D/run.log | head -4; grep -h "agree: comm .* closed at" $D/run.log | head -4
  $B/ncclbpf decisions $D/log | tail -2; echo "decisions rc=$?"
done
echo "=== 12 reload size_aware -> multinode_fix mid-run with ctl --all"
for N in 2 4; do
  D=$W/reload-$N; mkdir -p $D/log $D/ctl
  env $ENV NCCLBPF_POLICY=$B/policies/size_aware.bpf.o NCCLBPF_RELOAD_AGREE=1 NCCLBPF_AGREE=127.0.0.1:$((29950+N)) NCCLBPF_DECISION_LOG=$D/log NCCLBPF_CONTROL_DIR=$D/ctl \
    timeout 150 $GB --procs $N --same-gpu --coll allreduce --min-bytes 4K --max-bytes 4M --step-factor 4 --iters 3000 --warmup 20 > $D/run.log 2>&1 &
  P=$!; for i in $(seq 300); do [ "$(ls $D/ctl 2>/dev/null | grep -c '\.sock$')" -ge $N ] && break; sleep 0.2; done; sleep 3
  $B/ncclbpf ctl --all --dir $D/ctl reload $B/policies/multinode_fix.bpf.o --hook tuner
  wait $P; echo "reload N=$N gpubench exit $? correct=$(grep -c 'results correct' $D/run.log)"
  grep -h "reload version .* across ranks" $D/run.log | head -4
  $B/ncclbpf decisions $D/log | tail -2
  for f in $D/log/*.jsonl; do grep -m1 '"channels":0' $f | grep -o '"rank":[0-9]*,"seq":[0-9]*'; done
done
echo quit | nvidia-cuda-mps-control
echo "=== 14 containment (one rank, no MPS)"
env NCCL_PROFILER_PLUGIN=$B/libncclbpf.so NCCLBPF_POLICY=$B/policies/unsafe/atomic_misaligned.bpf.o NCCL_DEBUG=WARN timeout 60 $GB --procs 1 --min-bytes 8 --max-bytes 1M --warmup 50 --iters 500 > $W/c14a.log 2>&1; echo "misaligned rc=$?"; grep -m2 'E-MISALIGNED\|ncclbpf' $W/c14a.log; tail -4 $W/c14a.log
timeout 60 $GB --procs 1 --min-bytes 8 --max-bytes 1M --warmup 50 --iters 500 > $W/c14base.log 2>&1; tail -4 $W/c14base.log
env NCCLBPF_VERIFY=warn NCCL_TUNER_PLUGIN=$B/libncclbpf.so NCCLBPF_POLICY=$B/policies/unsafe/null_deref.bpf.o NCCL_DEBUG=WARN timeout 60 $GB --procs 1 --min-bytes 8 --max-bytes 1M --iters 200 > $W/c14b.log 2>&1; echo "warn-mode null_deref rc=$?"; grep -m3 'UNVERIFIED\|fault' $W/c14b.log; tail -2 $W/c14b.log
cd /tmp && tar czf $OUT/s1logs.tgz --exclude='*gpubench' s1
