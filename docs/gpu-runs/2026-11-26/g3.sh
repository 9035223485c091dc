#!/bin/bash
# GPU call G3: which piece of the decision path costs what on the GPU host's Intel CPU.
# gpuwork/variants: bench_cpu_dispatch builds of the steps of this change and of diagnostic
# variants (some unsafe, never shipped: min2 = no section, no checks at all; n_noepoch = no
# section). Pinned to one core, variants interleaved within each round, 5 rounds.
V=$PWD/gpuwork/variants; P=$PWD/gpuwork/build/policies; date -u; lscpu | grep "Model name"
for i in 1 2 3 4 5; do
  for v in base exp1 exp4 new1 seqp seq2t seq3 final1 min2 n_noepoch n_nover min_s min_c; do
    echo "$i $v $(taskset -c 3 $V/${v}_dispatch 1000 1000 $P 2>&1 | grep -E 'noop: plugin - native' | awk '{print $7}')"
  done
done | tee $OUT/g3-variants.txt
