#!/bin/bash
# GPU call G4: the per-decision stores in one cache line (hot1; hot1nv: diagnostic, without
# the chain-version store) against the committed change (final1) and main before it (base),
# on the GPU host's Intel CPU, pinned, interleaved, 7 rounds.
V=$PWD/gpuwork/variants; P=$PWD/gpuwork/build/policies; date -u; lscpu | grep "Model name"
for i in 1 2 3 4 5 6 7; do
  for v in base final1 hot1 hot1nv; do
    echo "$i $v $(taskset -c 3 $V/${v}_dispatch 1000 1000 $P 2>&1 | grep -E 'noop: plugin - native' | awk '{print $7}')"
  done
done | tee $OUT/g4-variants.txt
