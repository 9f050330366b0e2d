#!/usr/bin/python3
"""demo_report.py: the table and plot of tools/demo.sh's lab run.

  tools/demo_report.py RESULT.json HOSTS MBIT OUT.txt OUT.png

RESULT.json is rina-allreduce-perf -J output of one INA rack of HOSTS hosts
whose host links run at MBIT Mbit/s. Beside each measured time it puts the
time the busiest host link needs in theory (bytes / rate, at TCP goodput
of the demo lab's MTU 9000, (9000 - 52) / (9000 + 14) = 0.993 x rate):
  ring, hier: every host sends and receives 2 (n-1)/n S (one rack: hier is
              a reduce-scatter to the chunk ports and their broadcast);
  rina:       every worker sends its contribution, S, to the switch and
              gets the sum back, S: S each way.
The plot (time against size, theory dashed) needs python3-matplotlib.
"""

import json
import sys

MTU = 9000  # tools/demo.sh's lab
# TCP payload per byte on the wire: IP, TCP and timestamps (52) in, Ethernet (14) out.
GOODPUT = (MTU - 52) / (MTU + 14)


def human(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def theory_ms(algo, size, n, mbit):
    rate = mbit * 1e6 / 8 * GOODPUT  # bytes per second
    per_link = {"ring": 2 * (n - 1) / n, "hier": 2 * (n - 1) / n, "rina": 1.0}.get(algo)
    return per_link * size / rate * 1e3 if per_link is not None else None


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    path, n, mbit, out_txt, out_png = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), \
        sys.argv[4], sys.argv[5]
    with open(path) as f:
        result = json.load(f)
    algos = result["algorithms"]
    times = {(r["size"], r["algo"]): r["time_us"] / 1e3 for r in result["rows"]}
    sizes = sorted({s for s, _ in times})
    lines = [f"One INA rack of {n} hosts, {mbit:g} Mbit/s host links (emulated: network "
             f"namespaces, HTB), float32 sum, results checked.",
             "Time in ms (measured / theory: busiest host link's bytes at TCP goodput).", ""]
    head = f"{'size':>8}" + "".join(f" | {a:>19}" for a in algos)
    if "ring" in algos and "rina" in algos:
        head += " | rina / ring"
    lines += [head, "-" * len(head)]
    for s in sizes:
        row = f"{human(s):>8}"
        for a in algos:
            t, th = times.get((s, a)), theory_ms(a, s, n, mbit)
            cell = f"{t:8.1f} / " + (f"{th:8.1f}" if th else "       -")
            row += f" | {cell:>19}"
        if "ring" in algos and "rina" in algos:
            row += f" | {times[(s, 'rina')] / times[(s, 'ring')]:.2f} (theory 0.67)"
        lines.append(row)
    lines += ["", "rina sums each chunk in the switch: every host link carries S each way "
              "instead of the ring's 2(n-1)/n S, so the time falls to about 2/3 of the ring's "
              "once the links, not latency, are the limit."]
    text = "\n".join(lines) + "\n"
    with open(out_txt, "w") as f:
        f.write(text)
    sys.stdout.write(text)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, a in enumerate(algos):
        color = f"C{i}"
        xs = [s for s in sizes if (s, a) in times]
        ax.plot(xs, [times[(s, a)] for s in xs], marker="o", color=color, label=f"{a} measured")
        th = [theory_ms(a, s, n, mbit) for s in xs]
        if all(th):
            ax.plot(xs, th, linestyle="--", color=color, alpha=0.7, label=f"{a} theory")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([human(s) for s in sizes])
    ax.set_xlabel("allreduce size (float32)")
    ax.set_ylabel("time (ms)")
    ax.set_title(f"One INA rack of {n} hosts at {mbit:g} Mbit/s: ring, hier, rina")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    print(f"plot: {out_png}")


if __name__ == "__main__":
    main()
