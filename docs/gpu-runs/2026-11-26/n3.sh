#!/bin/bash
# GPU call N1 (one GPU, 2 emulated nodes): issue 13, wrap mode vs standalone, net plugin only
# (no borrowed tuner/profiler: --only-net), 20 interleaved repetitions, paired ratios with CIs.
B=$PWD/gpuwork/build; date -u
timeout 560 bench/gpu/net-emulate.sh --configs standalone,wrap --nodes 2 --reps 20 --max-bytes 64M --only-net --build $B --out /tmp/wrap-netonly > $OUT/n3-run.txt 2>&1; echo "run rc=$?"
tail -3 $OUT/n3-run.txt
python3 bench/gpu/net_report.py /tmp/wrap-netonly | tee $OUT/n3-report.md
tar czf $OUT/n3-summaries.tgz -C /tmp wrap-netonly --exclude='*.log' 2>/dev/null
