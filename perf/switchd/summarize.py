#!/usr/bin/env python3
"""Summarizes perf/switchd/run.sh output: per configuration the median (min-max)
over repetitions of the switch's payload Gbit/s per core of its CPU, ns per
datagram, throughput, and resends by cause; the socket ceiling; the goodput
cost of 1% loss from each repetition's adjacent pair; the A/B ratios against
a baseline build where the run had one."""
import re
import statistics
import sys

HEAD = re.compile(r': ([0-9.]+) s, ([0-9]+) contributions/s, ([0-9.]+) Gbit/s payload in '
                  r'\(aggregate\), ([0-9.]+) Gbit/s goodput per worker, retransmissions '
                  r'([0-9.]+)% of ([0-9]+) sends')
COST = re.compile(r'switch cpu ([0-9.]+) s .*: ([0-9.]+) Gbit/s payload summed per switch core, '
                  r'([0-9]+) ns per datagram')
RESENDS = re.compile(r'resends ([0-9]+) .*by timeout ([0-9]+), fast ([0-9]+); late answers '
                     r'([0-9]+); switch duplicates pending ([0-9]+), after completion ([0-9]+) '
                     r'\(late-only resends ([0-9.]+)% of sends\); socket drops switch ([0-9]+) '
                     r'workers ([0-9]+); window cuts ([0-9]+)')
CEIL = re.compile(r'reflector cpu ([0-9.]+) s: ([0-9.]+) Gbit/s payload per reflector core, '
                  r'([0-9]+) ns per datagram')

runs = {}  # label -> {rep: dict}
order = []
label = rep = load = None
for line in open(sys.argv[1]):
    if line.startswith('load '):
        head, rep_text, label = line.split('|')
        load = float(head.split()[1])
        rep = int(rep_text.split()[1])
        label = label.strip()
        if label not in runs:
            runs[label] = {}
            order.append(label)
        runs[label][rep] = {'load': load}
        continue
    if label is None:
        continue
    d = runs[label][rep]
    for name, rx, keys in (('head', HEAD, ('sec', 'contrib', 'gbit_in', 'goodput', 'retx', 'sends')),
                           ('cost', COST, ('cpu', 'per_core', 'ns')),
                           ('resends', RESENDS, ('resent', 'timeout', 'fast', 'late', 'dup_pending',
                                                 'dup_resent', 'late_only', 'sw_drops',
                                                 'worker_drops', 'cuts')),
                           ('ceiling', CEIL, ('cpu', 'per_core', 'ns'))):
        m = rx.search(line)
        if m:
            d.update({f'{name}_{k}': float(v) for k, v in zip(keys, m.groups())})


def span(values, fmt):
    return (f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-"
            f"{fmt.format(max(values))})")


def col(label, key):
    return [r[key] for r in runs[label].values() if key in r]


print('| configuration | Gbit/s payload summed per switch core | ns per datagram | Gbit/s payload '
      'in | resends % of first sends (fast, by timer; switch duplicates) | load |')
print('|---|---|---|---|---|---|')
for c in order:
    loads = col(c, 'load')
    if col(c, 'ceiling_per_core'):
        print(f"| `{c}` | {span(col(c, 'ceiling_per_core'), '{:.1f}')} (per reflector core) | "
              f"{span(col(c, 'ceiling_ns'), '{:.0f}')} | - | - | "
              f"{min(loads):.1f}-{max(loads):.1f} |")
        continue
    per_core = col(c, 'cost_per_core')
    resends = ''
    if col(c, 'resends_resent'):
        resends = (f"{span(col(c, 'head_retx'), '{:.3f}')} "
                   f"({statistics.median(col(c, 'resends_fast')):.0f}, "
                   f"{statistics.median(col(c, 'resends_timeout')):.0f}; "
                   f"{statistics.median(col(c, 'resends_dup_pending')):.0f} + "
                   f"{statistics.median(col(c, 'resends_dup_resent')):.0f})")
    elif col(c, 'head_retx'):
        resends = span(col(c, 'head_retx'), '{:.3f}')
    print(f"| `{c}` | {span(per_core, '{:.1f}') if per_core else '-'} | "
          f"{span(col(c, 'cost_ns'), '{:.0f}') if per_core else '-'} | "
          f"{span(col(c, 'head_gbit_in'), '{:.2f}')} | {resends} | "
          f"{min(loads):.1f}-{max(loads):.1f} |")
print()
for c in order:
    if '--drop-rate' in c and not c.startswith('baseline'):
        base = c.replace(' --drop-rate 0.01', '')
        ratios = [runs[c][r]['head_goodput'] / runs[base][r]['head_goodput']
                  for r in runs[c] if r in runs.get(base, {})]
        if ratios:
            print(f"1% loss, `{base}`: goodput x{statistics.median(ratios):.2f} of loss-free "
                  f"(per-repetition ratios {', '.join(f'{x:.2f}' for x in sorted(ratios))})")
for c in order:
    if c.startswith('baseline switch: '):
        mine = c.replace('baseline switch: ', '')
        ratios = [runs[mine][r]['cost_per_core'] / runs[c][r]['cost_per_core']
                  for r in runs[c] if r in runs.get(mine, {}) and 'cost_per_core' in runs[c][r]]
        if ratios:
            print(f"A/B, the switch's payload per core, this build / baseline, `{mine}`: "
                  f"{', '.join(f'{x:.2f}' for x in ratios)}")
    if c.startswith('baseline bench: '):
        mine = c.replace('baseline bench: ', '')
        pairs = [(runs[mine][r]['head_retx'], runs[c][r]['head_retx'])
                 for r in runs[c] if r in runs.get(mine, {})]
        if pairs:
            print(f"A/B, resends % of first sends, this build against baseline, `{mine}`: "
                  f"{', '.join(f'{a:.3f} vs {b:.3f}' for a, b in pairs)}")
