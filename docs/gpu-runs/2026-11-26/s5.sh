#!/bin/bash
# GPU call S5 (one GPU, 2 emulated nodes): issue 13, wrap mode vs the standalone transport, 8 interleaved reps
B=$PWD/gpuwork/build; W=/tmp/s5; mkdir -p $W; nvidia-smi -L; date -u
timeout 240 bench/gpu/net-emulate.sh --configs standalone,wrap --nodes 2 --reps 8 --max-bytes 64M --build $B --out $W/wrap > $W/wrap.txt 2>&1; echo "wrap rc=$?"
tail -3 $W/wrap.txt
python3 bench/gpu/net_report.py $W/wrap | tee $OUT/wrap.md
python3 - $W/wrap <<'PY'
import csv, glob, math, statistics, sys
from collections import defaultdict
bw = defaultdict(list)
for f in glob.glob(sys.argv[1] + "/*/r*/summary.csv"):
    for row in csv.DictReader(open(f)):
        cfg = f.split("/")[-3]
        bw[(cfg, int(row["bytes"]))].append(float(row["busbw_GBs"]))
sizes = sorted({b for _, b in bw})
r = [statistics.median(bw[("wrap", s)]) / statistics.median(bw[("standalone", s)]) for s in sizes]
print("geometric mean wrap/standalone over %d sizes: %.4f (samples per size: %s)" % (len(r), math.exp(sum(map(math.log, r)) / len(r)), [len(bw[("wrap", s)]) for s in sizes]))
PY
