#!/bin/bash
# GPU call G5: candidates for the end of the straight path's section on the GPU host's CPU,
# pinned, interleaved: base (a5309a6), final2 (cf797a5: an exit counter of its own), sx (the
# per-type seq store closes the section), sxr (the same, seq loaded again at the end).
# bench_cpu_dispatch noop and size_aware, 5 rounds; ncclbpf bench --lib, 3 rounds.
V=$PWD/gpuwork/variants; P=$PWD/gpuwork/build/policies; date -u; lscpu | grep "Model name"
for i in 1 2 3 4 5; do
  for v in base final2 sx sxr; do
    echo "$i $v $(taskset -c 3 $V/${v}_dispatch 1000 1000 $P 2>&1 | grep -E 'plugin - native' | awk '{print $7}' | tr '\n' ' ')"
  done
done | tee $OUT/g5-dispatch.txt
for i in 1 2 3; do
  for v in base final2 sx sxr; do
    echo "$i $v $(taskset -c 3 $PWD/gpuwork/build/ncclbpf bench --lib $V/${v}_lib.so --policy-dir $P --calls 500000 --rounds 5 --policies noop,size_aware 2>&1 | grep -E '^(noop|size_aware) ' | awk '{print $1, $(NF)}' | tr '\n' ' ')"
  done
done | tee $OUT/g5-bench.txt
