#!/bin/bash
# GPU call 1 (one GPU, emulated nodes): issue 11 sweep -- default vs every forced pair vs
# multinode_fix vs the bandit (M=8), AllReduce 4 KiB..64 MiB, 5 interleaved reps, 2 and 4 nodes.
B=$PWD/gpuwork/build; W=/tmp/c1; mkdir -p $W
nvidia-smi -L; python3 -c 'import torch;print("nccl",torch.cuda.nccl.version())'; date -u
C="default,pairs,policy:multinode_fix,policy+prof:$B/policies/bandit_m8.bpf.o"
A="--policy-warmup 96 --warmup 3 --iter-bytes 128M --min-iters 8 --build $B"
timeout 250 scripts/emulate-nodes.sh --nodes 2 --reps 5 --configs $C $A --out $W/emu2 > $W/emu2.txt 2>&1; echo "emu2 rc=$?"
timeout 285 scripts/emulate-nodes.sh --nodes 4 --reps 5 --configs $C $A --bench $W/emu2/ncclbpf-gpubench --out $W/emu4 > $W/emu4.txt 2>&1; echo "emu4 rc=$?"
tail -3 $W/emu2.txt $W/emu4.txt
for n in 2 4; do
  S=$W/emu$n/samples.csv; cp $S $OUT/samples$n.csv
  $B/ncclbpf tune --reps 0,2,4 --json $S > $W/emu$n/tune.json 2> $W/emu$n/tune.err; echo "tune$n rc=$?"
  python3 scripts/emulate_report.py $S --bandit policy-prof-bandit_m8 --tuned $W/emu$n/tune.json --check-reps 1,3 > $OUT/report$n.md 2>&1; echo "report$n rc=$?"
  cp $W/emu$n/tune.json $OUT/tune$n.json
done
cat $OUT/report2.md $OUT/report4.md | head -150
cd /tmp && tar czf $OUT/c1logs.tgz --exclude='*gpubench' --exclude='samples.csv' c1
