#!/bin/bash
# GPU call N1 (one GPU, 2 emulated nodes): issue 13, wrap mode vs standalone, net plugin only
# (no borrowed tuner/profiler: --only-net), 13 interleaved repetitions, paired ratios with CIs.
B=$PWD/gpuwork/build; date -u
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING,ENV timeout 60 bench/gpu/net-emulate.sh --configs wrap --nodes 2 --reps 1 --max-bytes 1M --only-net --build $B --out /tmp/wrap-smoke > /tmp/wrap-smoke.txt 2>&1; echo "smoke rc=$?"
grep -h 'wrap mode over\|Using network\|ncclbpf: tuner\|ncclbpf: profiler' /tmp/wrap-smoke/wrap/r0/logs/*.log | sed 's/^[^ ]* //' | sort | uniq -c | head | tee $OUT/n1-smoke.txt
timeout 530 bench/gpu/net-emulate.sh --configs standalone,wrap --nodes 2 --reps 13 --max-bytes 64M --only-net --build $B --out /tmp/wrap-netonly > $OUT/n1-run.txt 2>&1; echo "run rc=$?"
tail -3 $OUT/n1-run.txt
python3 bench/gpu/net_report.py /tmp/wrap-netonly | tee $OUT/n1-report.md
tar czf $OUT/n1-summaries.tgz -C /tmp wrap-netonly --exclude='*.log' 2>/dev/null
