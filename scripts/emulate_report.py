#!/usr/bin/env python3
"""Markdown tables from the testbed's samples (scripts/emulate-nodes.sh --samples).

    emulate_report.py SAMPLES.csv [--bandit CONFIG] [--default CONFIG]
                      [--tuned TUNE.json --check-reps 1,3]
    emulate_report.py --steps STEPS.csv [--bandit CONFIG[,CONFIG..]] [--default CONFIG]
                      [--oracle CONFIG] [--first-steps 500] [--converge-by 100]

--steps: the training-step workloads' step times (emulate-nodes.sh --step): every config
against NCCL's default and the oracle (a static table of the best pair per size), per
repetition: total of the first steps (what learning costs), mean step after convergence,
regret against the oracle, the step from which every window of 20 steps stays within 3 %
of the oracle's mean; the --bandit configs are checked against the issue's criteria. A
second table per workload gives the cost of learning within each run, free of the
repetition-to-repetition spread: the first steps' total less as many of the run's own
median step after convergence (a static config's value is the noise floor), that cost net
of the default's in the same repetition, and the step by which the gain after convergence
has paid it back.

Per node count and size: the median of every config over all samples of all repetitions,
the best forced pair, and the bandit against the best pair and against NCCL's default with
a one-sided Mann-Whitney U test (H1: the bandit is slower; normal approximation with tie
correction) -- this testbed's run-to-run spread at small sizes is about +-30 %, so the
verdict comes from the test over all samples, not from single medians. The last column
tests the same at the level of repetitions (exact permutation test on per-repetition
medians): every repetition is a fresh set of processes and communicator whose state (rings,
trees, channels, host placement) moves all its samples together, so samples of one
repetition are not independent and the test over all samples overstates significance.

--tuned: decisions of `ncclbpf tune --json` trained on some repetitions; the table checks
them on the held-out repetitions given by --check-reps (chosen config vs default there).
Pure Python (no SciPy on the GPU machine).
"""
import argparse
import csv
import itertools
import json
import math
import statistics
import sys
from collections import defaultdict

PAIRS = [f"{a}-{p}" for a in ("Tree", "Ring") for p in ("LL", "LL128", "Simple")] + ["PAT-Simple"]


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def mwu_greater(x, y):
    """One-sided p that x is stochastically greater than y (normal approx., tie-corrected)."""
    n1, n2 = len(x), len(y)
    if not n1 or not n2:
        return float("nan")
    allv = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    ranks = [0.0] * len(allv)
    ties = 0.0
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1][0] == allv[i][0]:
            j += 1
        r = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = r
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, allv) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 0.5
    z = (u1 - n1 * n2 / 2 - 0.5) / math.sqrt(var)  # continuity correction
    return 0.5 * math.erfc(z / math.sqrt(2))


def rep_medians(pairs):
    """Median per repetition of [(rep, time)]."""
    by = defaultdict(list)
    for r, v in pairs:
        by[r].append(v)
    return [statistics.median(v) for v in by.values()]


def perm_greater(x, y):
    """Exact one-sided permutation p that the values x are larger than y (difference of
    means), over every split of the pooled values: for per-repetition medians, where each
    repetition is one unit (fresh processes and communicator) and the samples within one
    share its state."""
    pooled = list(x) + list(y)
    n, k = len(pooled), len(x)
    if not x or not y or math.comb(n, k) > 200000:
        return float("nan")
    obs = sum(x) / k - sum(y) / (n - k)
    tot = sum(pooled)
    hits = cnt = 0
    for idx in itertools.combinations(range(n), k):
        sx = sum(pooled[i] for i in idx)
        d = sx / k - (tot - sx) / (n - k)
        hits += d >= obs - 1e-9 * max(1.0, abs(obs))  # the observed split itself, whatever the rounding
        cnt += 1
    return hits / cnt


def load(path):
    """{coll: {(nnodes, bytes, config): [(rep, time)]}}"""
    data = defaultdict(lambda: defaultdict(list))
    with open(path) as f:
        for row in csv.DictReader(f):
            key = (int(row["nnodes"]), int(row["bytes"]), row["config"])
            data[row["coll"]][key].append((int(row["rep"]), float(row["time_us"])))
    return data


def steps_report(path, a):
    """Training-step workloads (emulate-nodes.sh --step): per workload and node count, every
    config's step times against NCCL's default and the oracle, repetition by repetition
    (each repetition is a fresh set of processes; configs of one repetition ran back to
    back). Returns the number of criteria not met."""
    by = defaultdict(lambda: defaultdict(list))  # (workload, nodes) -> (config, rep) -> [(step, us)]
    with open(path) as f:
        for row in csv.DictReader(f):
            by[(row["workload"], int(row["nnodes"]))][(row["config"], int(row["rep"]))].append(
                (int(row["step"]), float(row["time_us"])))
    misses = 0
    for (wl, nn) in sorted(by):
        runs = {k: [t for _, t in sorted(v)] for k, v in by[(wl, nn)].items()}
        configs = sorted({c for c, _ in runs}, key=lambda c: (c != a.default, c != a.oracle, c))
        reps = sorted({r for _, r in runs})
        nsteps = min(len(v) for v in runs.values())
        first = min(a.first_steps, nsteps)
        late0 = min(a.converge_by, nsteps - 1)
        print()
        print(f"### Steps: {wl}, {nn} emulated nodes ({len(reps)} interleaved repetitions, {nsteps} steps each)")
        print()
        print(f"Per repetition: total of the first {first} steps and mean step of steps {late0}..{nsteps}; "
              "ratios are medians [min, max] over repetitions of the config against the same repetition's "
              "default / oracle; p: exact permutation test on the per-repetition values (H1: slower).")
        print()
        print(f"| config | first {first} steps, ms | / default | p slower | steps {late0}..{nsteps}: ms per step "
              f"| / default | p slower | / oracle | regret vs oracle, first {first} (ms) | within 3 % of the oracle from step |")
        print("|---|---|---|---|---|---|---|---|---|---|")

        def per_rep(cfg, lo, hi, f):
            return {r: f(runs[(cfg, r)][lo:hi]) for r in reps if (cfg, r) in runs}

        tot = {c: per_rep(c, 0, first, sum) for c in configs}
        late = {c: per_rep(c, late0, nsteps, statistics.mean) for c in configs}
        orac = a.oracle if a.oracle in configs else None
        for c in configs:
            def ratio(x, ref):
                v = [x[r] / ref[r] for r in x if r in ref and ref[r]]
                return f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]" if v else "–"
            cells = [c, f"{statistics.median(tot[c].values()) / 1e3:.1f}"]
            d_ok = a.default in configs and c != a.default
            cells.append(ratio(tot[c], tot[a.default]) if d_ok else "–")
            p1 = perm_greater(list(tot[c].values()), list(tot[a.default].values())) if d_ok else float("nan")
            cells.append(f"{p1:.3g}" if d_ok else "–")
            cells.append(f"{statistics.median(late[c].values()) / 1e3:.3f}")
            cells.append(ratio(late[c], late[a.default]) if d_ok else "–")
            p2 = perm_greater(list(late[c].values()), list(late[a.default].values())) if d_ok else float("nan")
            cells.append(f"{p2:.3g}" if d_ok else "–")
            cells.append(ratio(late[c], late[orac]) if orac and c != orac else "–")
            if orac and c != orac:
                # regret: the config's time over the oracle's mean step (of the same repetition,
                # its steady state), summed over the first steps
                reg = [sum(t - late[orac][r] for t in runs[(c, r)][:first]) / 1e3 for r in reps
                       if (c, r) in runs and r in late[orac]]
                cells.append(f"{statistics.median(reg):.1f}" if reg else "–")
                conv = []
                for r in reps:
                    if (c, r) not in runs or r not in late[orac]:
                        continue
                    v, ref, w, at = runs[(c, r)], late[orac][r], a.window, None
                    for s0 in range(0, nsteps - w + 1, 5):
                        if all(statistics.mean(v[s1:s1 + w]) <= 1.03 * ref for s1 in range(s0, nsteps - w + 1, w)):
                            at = s0
                            break
                    conv.append(at if at is not None else nsteps)
                cells.append(f"{int(statistics.median(conv))} ({min(conv)}-{max(conv)})" if conv else "–")
            else:
                cells += ["–", "–"]
            print("| " + " | ".join(cells) + " |")
            if c in a.bandit_list and d_ok:
                bad = []
                if statistics.median([tot[c][r] / tot[a.default][r] for r in tot[c] if r in tot[a.default]]) > 1.05:
                    bad.append(f"first {first} steps above 1.05x the default")
                if p2 < 0.05:
                    bad.append("significantly slower than the default after convergence")
                if orac and statistics.median([late[c][r] / late[orac][r] for r in late[c] if r in late[orac]]) > 1.03:
                    bad.append("more than 3 % above the oracle after convergence")
                for b in bad:
                    print(f"\n**{c}: {b}**")
                misses += len(bad)
        learning_cost_table(runs, configs, reps, first, late0, nsteps, a)
    return misses


def learning_cost_table(runs, configs, reps, first, late0, nsteps, a):
    """The cost of learning, within each run: the first steps' total less as many of the
    run's own median step of steps late0..nsteps (its converged state: the arms it settled
    on). Every repetition is a fresh set of processes whose step time moves as a whole
    (rings, placement: +-15 % between repetitions on this testbed), so comparing a run with
    itself removes that spread; a static config (default, oracle) shows what is left - its
    own warm-up and drift, the noise floor. Net: minus the default's value in the same
    repetition. Pays back: net cost over the per-step gain against the default's converged
    step (same repetition), as a step number; "never" without a gain."""
    def own(c, r):
        v = runs[(c, r)]
        return (sum(v[:first]) - first * statistics.median(v[late0:nsteps])) / 1e3

    def span(v, fmt="{:.1f}"):
        return (fmt.format(statistics.median(v)) + " [" + fmt.format(min(v)) + ", " + fmt.format(max(v)) + "]") if v else "–"

    print()
    print(f"Cost of learning, first {first} steps (ms; median [min, max] over repetitions): "
          f"the total less {first} x the run's own median step of steps {late0}..{nsteps}; net: less the "
          "default's value in the same repetition; pays back: the step by which the gain after convergence "
          "against the default (same repetition) repays the net cost.")
    print()
    print(f"| config | learning cost, ms | in % of the first {first} steps | net of the default, ms | pays back by step |")
    print("|---|---|---|---|---|")
    for c in configs:
        rs = [r for r in reps if (c, r) in runs]
        cost = [own(c, r) for r in rs]
        pct = [100 * own(c, r) * 1e3 / sum(runs[(c, r)][:first]) for r in rs]
        net, back = [], []
        if c != a.default:
            for r in rs:
                if (a.default, r) not in runs:
                    continue
                n = own(c, r) - own(a.default, r)
                net.append(n)
                gain = (statistics.median(runs[(a.default, r)][late0:nsteps]) -
                        statistics.median(runs[(c, r)][late0:nsteps])) / 1e3
                back.append(max(0.0, n) / gain if gain > 0 else math.inf)
        bk = "–"
        if back:
            m = statistics.median(back)
            bk = "never" if math.isinf(m) else f"{int(math.ceil(m))}"
            bk += f" ({sum(1 for b in back if math.isinf(b))} of {len(back)} never)" if any(map(math.isinf, back)) else ""
        print(f"| {c} | {span(cost)} | {span(pct, '{:.2f}')} | {span(net) if net else '–'} | {bk} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("samples")
    ap.add_argument("--bandit", default="policy-prof-bandit")
    ap.add_argument("--default", default="default")
    ap.add_argument("--tuned")
    ap.add_argument("--check-reps", default="")
    # the testbed in the table titles; {nodes} is replaced by the node count
    ap.add_argument("--title", default="{nodes} emulated nodes on one GPU")
    # training steps (emulate-nodes.sh --step): SAMPLES is steps.csv
    ap.add_argument("--steps", action="store_true", help="SAMPLES is a steps.csv")
    ap.add_argument("--oracle", default="policy-oracle")
    ap.add_argument("--first-steps", type=int, default=500)
    ap.add_argument("--converge-by", type=int, default=100)
    ap.add_argument("--window", type=int, default=20)
    a = ap.parse_args()
    if a.steps:
        a.bandit_list = a.bandit.split(",")
        return 1 if steps_report(a.samples, a) else 0
    by_coll = load(a.samples)
    bad = 0
    for coll in sorted(by_coll):
        bad += sweep_report(by_coll[coll], coll, a)
    return 1 if bad else 0


def sweep_report(data, coll, a):
    nodes = sorted({k[0] for k in data})
    configs = sorted({k[2] for k in data}, key=lambda c: (c != a.default, c not in PAIRS, PAIRS.index(c) if c in PAIRS else 0, c))
    reps = sorted({r for v in data.values() for r, _ in v})
    bad = 0
    for nn in nodes:
        sizes = sorted({k[1] for k in data if k[0] == nn})
        print()
        print(f"### Testbed: {a.title.replace('{nodes}', str(nn))}, {coll} ({len(reps)} interleaved repetitions; median µs over all samples)")
        print()
        print("| size | " + " | ".join(configs) + " | best pair | bandit / best pair (p slower) | bandit / default (p slower) | per-rep p slower: best, default |")
        print("|" + "---|" * (len(configs) + 5))
        for b in sizes:
            t = {c: [v for _, v in data.get((nn, b, c), [])] for c in configs}
            med = {c: statistics.median(v) for c, v in t.items() if v}
            pairs = [c for c in PAIRS if c in med]
            best = min(pairs, key=lambda c: med[c]) if pairs else None
            cells = [human(b)] + [f"{med[c]:.1f}" if c in med else "–" for c in configs]
            cells.append(best or "–")
            if a.bandit in med and best:
                pb = mwu_greater(t[a.bandit], t[best])
                r = med[a.bandit] / med[best]
                cells.append(f"{r:.3f} (p={pb:.3g}){' **slower**' if pb < 0.01 else ''}")
                bad += pb < 0.01
            else:
                cells.append("–")
            if a.bandit in med and a.default in med:
                pd = mwu_greater(t[a.bandit], t[a.default])
                cells.append(f"{med[a.bandit] / med[a.default]:.3f} (p={pd:.3g}){' **slower**' if pd < 0.01 else ''}")
                bad += pd < 0.01
            else:
                cells.append("–")
            if a.bandit in med and a.default in med and best:
                rb = rep_medians(data[(nn, b, a.bandit)])
                cells.append(f"{perm_greater(rb, rep_medians(data[(nn, b, best)])):.3g}, "
                             f"{perm_greater(rb, rep_medians(data[(nn, b, a.default)])):.3g}")
            else:
                cells.append("–")
            print("| " + " | ".join(cells) + " |")
    if a.tuned:
        check = {int(x) for x in a.check_reps.split(",") if x}
        with open(a.tuned) as f:
            text = f.read().strip()
        # ncclbpf.tune/1: {"schema", "ranges": [...]}; older builds printed the bare array
        doc = json.loads(text) if text.startswith(("[", "{\"schema\"")) else [json.loads(l) for l in text.splitlines() if l.strip()]
        rules = doc["ranges"] if isinstance(doc, dict) else doc
        print()
        print(f"### Offline tuner decisions checked on held-out repetitions {sorted(check)}")
        print()
        print("| nodes | size | tuner's choice | held-out median µs | default median µs | ratio | p (choice slower) |")
        print("|---|---|---|---|---|---|---|")
        for nn in nodes:
            for b in sorted({k[1] for k in data if k[0] == nn}):
                rule = next((r for r in rules if r["nnodes"] == nn and r.get("coll", coll) == coll and
                             r["min_bytes"] <= b <= r["max_bytes"]), None)
                if not rule:
                    continue
                cfg = a.default if rule["algo"] == "default" else f"{rule['algo']}-{rule['proto']}"
                ho = [v for rp, v in data.get((nn, b, cfg), []) if rp in check]
                hd = [v for rp, v in data.get((nn, b, a.default), []) if rp in check]
                if not ho or not hd:
                    continue
                p = mwu_greater(ho, hd)
                print(f"| {nn} | {human(b)} | {cfg} | {statistics.median(ho):.1f} | {statistics.median(hd):.1f} | "
                      f"{statistics.median(ho) / statistics.median(hd):.3f} | {p:.3g} |")
    return bad


if __name__ == "__main__":
    sys.exit(main())
