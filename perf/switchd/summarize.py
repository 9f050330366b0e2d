#!/usr/bin/env python3
"""Summarizes perf/switchd/run.sh output: medians (min-max) per configuration,
and the goodput cost of 1% loss from each repetition's adjacent pair."""
import re
import statistics
import sys

LINE = re.compile(r': ([0-9.]+) s, ([0-9]+) contributions/s, ([0-9.]+) Gbit/s payload in '
                  r'\(aggregate\), ([0-9.]+) Gbit/s goodput per worker, retransmissions '
                  r'([0-9.]+)% of [0-9]+ sends \(([0-9.]+)% fast\)')
runs = {}   # config -> {rep: (contrib/s, Gbit/s in, goodput, retx%, fast%, load)}
order = []
config = rep = load = None
for line in open(sys.argv[1]):
    if line.startswith('load '):
        head, rep_text, cmd = line.split('|')
        load = float(head.split()[1])
        rep = int(rep_text.split()[1])
        config = cmd.strip().split('rina-switchd-bench ', 1)[1]
        if config not in runs:
            runs[config] = {}
            order.append(config)
        continue
    m = LINE.search(line)
    if m and config:
        runs[config][rep] = tuple(float(g) for g in m.groups()[1:]) + (load,)

def span(values, fmt):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"

print('| configuration | contributions/s | Gbit/s payload in | goodput/worker Gbit/s | retransmissions % (fast) | load avg |')
print('|---|---|---|---|---|---|')
for c in order:
    v = list(runs[c].values())
    col = lambda i: [x[i] for x in v]
    print(f"| `{c}` | {span(col(0), '{:,.0f}')} | {span(col(1), '{:.2f}')} | "
          f"{statistics.median(col(2)):.3f} | {statistics.median(col(3)):.2f} "
          f"({statistics.median(col(4)):.2f}) | {min(col(5)):.1f}-{max(col(5)):.1f} |")
print()
for c in order:
    if '--drop-rate' not in c:
        continue
    base = c.replace(' --drop-rate 0.01', '')
    ratios = [runs[c][r][2] / runs[base][r][2] for r in runs[c] if r in runs.get(base, {})]
    if ratios:
        print(f"1% loss, `{base}`: goodput x{statistics.median(ratios):.2f} of loss-free "
              f"(per-repetition ratios {', '.join(f'{x:.2f}' for x in sorted(ratios))})")
