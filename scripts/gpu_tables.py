"""Turns ncclbpf-gpubench CSV files into the markdown tables of docs/results.md.

    gpu_tables.py overhead CSV BASE LABEL...      median time per size over repetitions
    gpu_tables.py policies CSV OUTDIR DEFAULT POLICY...   bandwidth per size + what NCCL ran
    gpu_tables.py sweep CSV                       default vs forced algo/proto (+ policy)
"""
import csv
import glob
import json
import os
import re
import statistics
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def human(n):
    n = int(n)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def prefix_of(label):
    """base-small-3 -> base; prof-coll-2 -> prof-coll."""
    label = re.sub(r"-\d+$", "", label)
    return re.sub(r"-(small|large)$", "", label)


def overhead(path, base, *others):
    rows = load(path)
    times = defaultdict(list)
    bw = defaultdict(list)
    for r in rows:
        key = (prefix_of(r["label"]), r["coll"], int(r["bytes"]))
        times[key].append(float(r["time_us"]))
        bw[key].append(float(r["busbw_GBs"]))
    sizes = sorted({(k[1], k[2]) for k in times if k[0] == base})
    reps = len(times[(base,) + sizes[0]]) if sizes else 0
    print()
    print(f"### Overhead against no plugin ({reps} interleaved repetitions; median, spread = max-min)")
    print()
    head = f"| coll | size | {base} µs | " + " | ".join(f"{o} µs | {o} vs {base}" for o in others) + " | busbw GB/s (base / " + " / ".join(others) + ") |"
    print(head)
    print("|" + "---|" * (3 + 2 * len(others) + 1))
    for coll, size in sizes:
        b = times[(base, coll, size)]
        bm = statistics.median(b)
        cells = [coll, human(size), f"{bm:.2f} ± {max(b) - min(b):.2f}"]
        bws = [f"{statistics.median(bw[(base, coll, size)]):.1f}"]
        for o in others:
            t = times.get((o, coll, size))
            if not t:
                cells += ["–", "–"]
                bws.append("–")
                continue
            om = statistics.median(t)
            cells += [f"{om:.2f} ± {max(t) - min(t):.2f}", f"{(om / bm - 1) * 100:+.1f} %"]
            bws.append(f"{statistics.median(bw[(o, coll, size)]):.1f}")
        print("| " + " | ".join(cells) + " | " + " / ".join(bws) + " |")


ALGOS = ["Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"]
PROTOS = ["LL", "LL128", "Simple"]


def what_nccl_ran(outdir, label):
    """Per byte size, the (algo, proto, channels) NCCL reported running, from the profiler trace
    of the run (NCCLBPF_TRACE) when present, else from NCCL's TUNING log lines."""
    ran = defaultdict(set)
    # NCCL 2.28 at NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING, once per collective:
    #   "AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..23}"
    pat = re.compile(r"(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
    try:
        with open(os.path.join(outdir, f"run-{label}.log")) as f:
            for line in f:
                m = pat.search(line)
                if m:
                    nch = int(m.group(6)) - int(m.group(5)) + 1
                    ran[int(m.group(2))].add(f"{m.group(3).title()}/{m.group(4).title()}/{nch}ch")
    except OSError:
        pass
    if ran:
        return ran
    for path in glob.glob(os.path.join(outdir, f"trace-{label}", "*")):
        try:
            with open(path) as f:
                for line in f:
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if not isinstance(ev, dict):
                        continue
                    algo = ev.get("algo")
                    proto = ev.get("proto")
                    nbytes = ev.get("bytes", ev.get("n_bytes"))
                    if algo is None or proto is None or nbytes is None:
                        continue
                    ch = ev.get("channels", ev.get("n_channels", ev.get("nChannels", "?")))
                    if isinstance(algo, int) and 0 <= algo < len(ALGOS):
                        algo = ALGOS[algo]
                    if isinstance(proto, int) and 0 <= proto < len(PROTOS):
                        proto = PROTOS[proto]
                    ran[int(nbytes)].add(f"{algo}/{proto}/{ch}ch")
        except OSError:
            pass
    return ran


def policies(path, outdir, default, *pols):
    rows = load(path)
    by = defaultdict(dict)
    for r in rows:
        by[(r["coll"], int(r["bytes"]))][prefix_of(r["label"])] = r
    print()
    print(f"### Policies against NCCL's default ({', '.join(pols)})")
    print()
    print("| coll | size | default busbw GB/s | " + " | ".join(f"{p} busbw | {p} vs default | {p}: NCCL ran" for p in pols) + " |")
    print("|" + "---|" * (3 + 3 * len(pols)))
    ran = {p: what_nccl_ran(outdir, p) for p in (default,) + pols}
    for (coll, size), d in sorted(by.items()):
        if default not in d:
            continue
        base = float(d[default]["time_us"])
        dflt = ", ".join(sorted(ran[default].get(size, set())))
        cells = [coll, human(size), f"{float(d[default]['busbw_GBs']):.1f}" + (f" ({dflt})" if dflt else "")]
        for p in pols:
            if p not in d:
                cells += ["–", "–", "–"]
                continue
            t = float(d[p]["time_us"])
            r = ran[p].get(size) or ran[p].get(size * 1) or set()
            cells += [f"{float(d[p]['busbw_GBs']):.1f}", f"{base / t:.2f}x", ", ".join(sorted(r)) or "(no record)"]
        print("| " + " | ".join(cells) + " |")


def sweep(path):
    rows = load(path)
    by = defaultdict(dict)
    for r in rows:
        by[(r["coll"], int(r["bytes"]))][r["label"]] = float(r["time_us"])
    print()
    print("### Emulated 2 nodes: NCCL's default against every forced algorithm/protocol (time µs, lower is better)")
    print()
    labels = sorted({l for d in by.values() for l in d if l.startswith("mn-") and l not in ("mn-default", "mn-policy")})
    has_policy = any("mn-policy" in d for d in by.values())
    print("| coll | size | default | " + " | ".join(l[3:] for l in labels) + " | best forced | default / best |" + (" policy | default / policy |" if has_policy else ""))
    print("|" + "---|" * (5 + len(labels) + (2 if has_policy else 0)))
    for (coll, size), d in sorted(by.items()):
        if "mn-default" not in d:
            continue
        forced = {l: d[l] for l in labels if l in d}
        best = min(forced, key=forced.get) if forced else None
        cells = [coll, human(size), f"{d['mn-default']:.1f}"] + [f"{d[l]:.1f}" if l in d else "–" for l in labels]
        cells += [best[3:] if best else "–", f"{d['mn-default'] / forced[best]:.2f}x" if best else "–"]
        if has_policy:
            cells += [f"{d['mn-policy']:.1f}" if "mn-policy" in d else "–",
                      f"{d['mn-default'] / d['mn-policy']:.2f}x" if "mn-policy" in d else "–"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"overhead": overhead, "policies": policies, "sweep": sweep}[mode](*args)
