#!/usr/bin/env python3
"""Is a config's step time periodic in the bandit's sampling period? The bandit steers
KernelCh onto the first 9 of every 64 collectives of each band it exploits; in a step that
runs every band once, those bursts line up into 9 of every 64 steps. For each (workload,
nodes, config, rep), over steps FROM..: the mean step time of the slowest 9-step window of
the 64-step cycle (best phase), against the mean of the other 55 phases. A default run gives
the noise floor of this statistic.
    usage: step_phase.py STEPS_CSV [--from 100] [--period 64] [--burst 9]"""
import argparse, collections, csv, statistics as S

ap = argparse.ArgumentParser()
ap.add_argument("steps")
ap.add_argument("--from", dest="first", type=int, default=100)
ap.add_argument("--period", type=int, default=64)
ap.add_argument("--burst", type=int, default=9)
a = ap.parse_args()
runs = collections.defaultdict(dict)
for r in csv.DictReader(open(a.steps)):
    runs[(r["workload"], int(r["nnodes"]), r["config"], int(r["rep"]))][int(r["step"])] = float(r["time_us"])
print("| workload | nodes | config | rep | burst phase | burst window mean us | other phases mean us | ratio |")
print("|---|---|---|---|---|---|---|---|")
for k in sorted(runs):
    by_phase = collections.defaultdict(list)
    for s, t in runs[k].items():
        if s >= a.first:
            by_phase[s % a.period].append(t)
    if len(by_phase) < a.period:
        continue
    ph = [S.mean(by_phase[p]) for p in range(a.period)]
    best, bp = None, 0
    for p0 in range(a.period):
        win = [ph[(p0 + i) % a.period] for i in range(a.burst)]
        rest = [ph[(p0 + i) % a.period] for i in range(a.burst, a.period)]
        r = S.mean(win) / S.mean(rest)
        if best is None or r > best[0]:
            best, bp = (r, S.mean(win), S.mean(rest)), p0
    print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {bp} | {best[1]:.1f} | {best[2]:.1f} | {best[0]:.3f} |")
