#!/usr/bin/env python3
"""Summarizes perf/plan/run.sh's CSV: a markdown table (stdout) and a plot."""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
groups = {}
for r in rows:
    groups.setdefault((r["host_links"], float(r["ina_fraction"])), []).append(r)

def med(rs, key):
    return statistics.median(float(r[key]) for r in rs)

print("| host links | INA switches | LP (upper bound) | GRID | ATP (nearest switch) | no INA | GRID/ATP | LP wall s (max) | LP CPU s (max) |")
print("|---|---|---|---|---|---|---|---|---|")
for (hosts, f), rs in sorted(groups.items()):
    lp, grid, atp, none = (med(rs, k) for k in ("lp_mbit", "grid_mbit", "atp_mbit", "no_ina_mbit"))
    ratio = statistics.median(float(r["grid_mbit"]) / float(r["atp_mbit"]) for r in rs)
    wall = max(float(r["lp_seconds"]) for r in rs)
    cpu = max(float(r["lp_cpu_seconds"]) for r in rs)
    print(f"| {hosts} | {f:.0%} | {lp/1000:.2f} | {grid/1000:.2f} | {atp/1000:.2f} | {none/1000:.2f} | "
          f"{ratio:.2f}x | {wall:.2f} | {cpu:.2f} |")
print()
print(f"Medians over {len(next(iter(groups.values())))} seeds, Gbit/s of the minimum worker sending rate.")

fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
for ax, hosts in zip(axes, ("mixed", "100G")):
    fs = sorted(f for (h, f) in groups if h == hosts)
    width = 0.2
    for i, (key, label) in enumerate((("lp_mbit", "LP bound"), ("grid_mbit", "GRID"),
                                      ("atp_mbit", "ATP (nearest switch)"), ("no_ina_mbit", "no INA"))):
        ys = [med(groups[(hosts, f)], key) / 1000 for f in fs]
        ax.bar([j + (i - 1.5) * width for j in range(len(fs))], ys, width, label=label)
    ax.set_xticks(range(len(fs)))
    ax.set_xticklabels([f"{f:.0%} INA" for f in fs])
    ax.set_title(f"k=8 fat tree, host links {'10/25/40/100G' if hosts == 'mixed' else '100G'}")
    ax.set_ylabel("min worker rate (Gbit/s, median)")
axes[1].legend(fontsize=8, loc="upper left")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
