#!/usr/bin/python3
"""Path choice in the netns lab with several spines. Two
experiments, each bringing its own lab up and down (also on failure):

static: 2 racks, spines 2, one spine's uplinks at 1/4 of the other's; for
  each choice of the slow spine, rina-allreduce-perf under RINA_PATHS =
  planned, fixed (spine 0) and hash ((src+dst) % 2): the allreduce time and
  the planned / other throughput ratio. Writes perf/results/lab-paths.md and
  lab-paths.png.
midrun: both spines at the fast rate; rina-allreduce-perf runs back-to-back
  allreduces of --midrun-algorithm (hier or rina: the ones that re-plan) with
  --timeline under RINA_PLAN_THRESHOLD=--threshold, RINA_PLAN_INTERVAL=0 and
  RINA_PLAN_CHECK_EVERY=--check-every, while, after --change-after seconds,
  rack a's uplink to spine 0 drops to 1/4 (`rina-netlab shape`). Throughput
  per iteration over time, against the best static plan for the new rates (a
  second run in a lab built with those rates); the recovery time is from the
  change to the end of the last allreduce below 90% of that plan's
  throughput. Writes perf/results/lab-paths-midrun.md and lab-paths-midrun.png.
--suffix S is appended to the result file names (lab-paths-midrun-check-every-1
is --check-every 1 --suffix=-check-every-1).

  perf/lab/paths_bench.py [--build DIR] [--lab-name NAME] [--experiments static,midrun]
                          [--algorithms ring] [--size 16M] [-n ITERS]
                          [--fast-mbit 200] [--host-mbit 400] [--change-after S]
                          [--midrun-algorithm hier] [--midrun-size 4M] [--midrun-iters N]
                          [--threshold 0.5] [--check-every 1] [--suffix S]
Needs root.
"""

import argparse
import functools
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time

from labtools import REPO, Failure, parse_size
import labtools

RESULTS = os.path.join(REPO, "perf/results")
RUN_TIMEOUT_S = 900
POLICIES = ("planned", "fixed", "hash")
netlab = functools.partial(labtools.netlab, timeout=RUN_TIMEOUT_S)


def topology(uplinks, host_mbit, ina):
    return {"name": "paths", "spines": len(uplinks),
            "racks": [{"name": r, "ina": ina, "hosts": [f"{r}0", f"{r}1"],
                       "host_link_mbit": host_mbit, "uplink_mbit": uplinks} for r in ("a", "b")]}


class Lab:
    """A lab that is always brought down."""

    def __init__(self, name, doc, work, switchd):
        self.name, self.doc, self.switchd = name, doc, switchd
        self.path = os.path.join(work, f"{name}-topology.json")
        with open(self.path, "w") as f:
            json.dump(doc, f)

    def __enter__(self):
        netlab(self.name, "up", self.path, "--switchd", self.switchd)
        return self

    def __exit__(self, *exc):
        try:
            netlab(self.name, "down", timeout=120)
        except (Failure, subprocess.TimeoutExpired) as e:
            print(f"paths_bench.py: down failed: {e}", file=sys.stderr)


def perf_cmd(build, algorithms, size, iters, extra=(), check="1", warmup="1"):
    return [os.path.join(build, "tools/rina-allreduce-perf"), "-a", ",".join(algorithms), "-b",
            str(size), "-e", str(size), "-n", str(iters), "-w", warmup, "-c", check, *extra]


def perf_times(out, algorithms):
    if not re.search(r"^# Out of bounds values : 0 OK$", out, re.M):
        raise Failure(f"wrong results:\n{out}")
    times = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 9 and f[0].isdigit() and f[4] in algorithms:
            times[f[4]] = float(f[5]) * 1e-6
    return times


def static_experiment(args, work, algorithms, size):
    fast, slow = args.fast_mbit, args.fast_mbit / 4
    rows, commands = [], []
    for slow_spine in (0, 1):
        uplinks = [slow if s == slow_spine else fast for s in range(2)]
        doc = topology(uplinks, args.host_mbit, "rina" in algorithms)
        with Lab(args.lab_name, doc, work, args.switchd) as lab:
            commands.append(f"# {os.path.basename(lab.path)}: {json.dumps(doc)}")
            commands.append(f"rina-netlab --name {args.lab_name} up {os.path.basename(lab.path)}")
            for policy in POLICIES:
                run = ["run", "--timeout", str(RUN_TIMEOUT_S), "--env", f"RINA_PATHS={policy}",
                       "--"] + perf_cmd(args.build, algorithms, size, args.iters)
                out = netlab(args.lab_name, *run)
                commands.append(f"rina-netlab --name {args.lab_name} " +
                                " ".join(shlex.quote(c) for c in run))
                for algo, t in perf_times(out, algorithms).items():
                    rows.append((slow_spine, policy, algo, t))
    times = {(s, p, a): t for s, p, a, t in rows}
    lines = [f"# Path choice with one slow spine (netns lab)", "",
             f"2 racks of 2 hosts (one rank each), 2 spines (planes): every rack's uplink to the "
             f"slow spine at {slow:g} Mbit/s, to the other at {fast:g} Mbit/s; host links "
             f"{args.host_mbit} Mbit/s (each NIC). float32 sum of {size >> 20} MiB, mean of "
             f"{args.iters} iterations after 1 warmup, results checked. RINA_PATHS: planned = "
             f"plan::assignSpines from the topology's per-spine rates, fixed = spine 0, hash = "
             f"(src+dst) % 2. A flat ring over ranks 0-3 has two cross-rack hops, 1 -> 2 and "
             f"3 -> 0; (1+2) % 2 = (3+0) % 2 = 1, so hash puts both on spine 1.", "",
             "| slow spine | algo | planned (ms) | fixed (ms) | hash (ms) | planned/fixed throughput "
             "| planned/hash throughput |", "|---|---|---|---|---|---|---|"]
    for slow_spine in (0, 1):
        for algo in algorithms:
            t = [times.get((slow_spine, p, algo)) for p in POLICIES]
            if None in t:
                continue
            lines.append(f"| {slow_spine} | {algo} | {t[0] * 1e3:.0f} | {t[1] * 1e3:.0f} | "
                         f"{t[2] * 1e3:.0f} | {t[1] / t[0]:.2f} | {t[2] / t[0]:.2f} |")
    name = "lab-paths" + args.suffix
    lines += ["", "Target: planned >= 1.5x the throughput of a fixed or hashed choice "
              "(where that choice lands on the slow spine).", "", "Commands:", "```"] + commands + [
        "```", "", f"Driver: `perf/lab/paths_bench.py {' '.join(sys.argv[1:])}`", "",
        f"![allreduce time per path rule]({name}.png)", ""]
    plot_static(os.path.join(RESULTS, name + ".png"), times, algorithms, size)
    with open(os.path.join(RESULTS, name + ".md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


def plot_static(path, times, algorithms, size):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    labels, values = [], []
    for slow_spine in (0, 1):
        for algo in algorithms:
            for p in POLICIES:
                t = times.get((slow_spine, p, algo))
                if t:
                    labels.append(f"{algo}\nslow s{slow_spine}\n{p}")
                    values.append(size * 8 / t / 1e6)
    colors = [{"planned": "tab:green", "fixed": "tab:red", "hash": "tab:orange"}[
        lab.split("\n")[2]] for lab in labels]
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("algorithm throughput (Mbit/s of buffer)")
    ax.set_title("RINA_PATHS with one spine at 1/4 rate")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def read_timeline(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            algo, size, start, dur = line.split()
            rows.append((algo, int(size), float(start), float(dur) * 1e-6))
    return rows


def midrun_experiment(args, work, algorithms, size):
    fast, slow = args.fast_mbit, args.fast_mbit / 4
    algo, size = args.midrun_algorithm, args.midrun_size
    plan_env = ["--env", "RINA_PATHS=planned", "--env", f"RINA_PLAN_THRESHOLD={args.threshold:g}",
                "--env", "RINA_PLAN_INTERVAL=0", "--env", f"RINA_PLAN_CHECK_EVERY={args.check_every}",
                "--env", "RINA_DEBUG=INFO"]
    commands = []
    # 1. Both spines fast; rack a's uplink to spine 0 drops mid-run.
    doc = topology([fast, fast], args.host_mbit, algo == "rina")
    timeline = os.path.join(work, "timeline.txt")
    with Lab(args.lab_name, doc, work, args.switchd) as lab:
        commands.append(f"# {os.path.basename(lab.path)}: {json.dumps(doc)}")
        commands.append(f"rina-netlab --name {args.lab_name} up {os.path.basename(lab.path)}")
        run = ["run", "--timeout", str(RUN_TIMEOUT_S), *plan_env, "--"] + \
            perf_cmd(args.build, [algo], size, args.midrun_iters,
                     ["--timeline", timeline], check="2", warmup="0")
        shape = ["shape", "--rack", "a", "--spine", "0", "--mbit", f"{slow:g}"]
        changed = {}

        def lower():
            time.sleep(args.change_after)
            out = netlab(args.lab_name, *shape)
            changed["at"] = float(out.split(" at ")[-1])
        # The perf run starts its clock after mpirun start-up; the change is
        # placed relative to the first timed iteration below.
        t = threading.Thread(target=lower)
        t.start()
        out, err = netlab(args.lab_name, *run, stderr=True)
        t.join()
        perf_times(out, [algo])
        plans = [line.split("RINA INFO ", 1)[1] for line in (out + err).splitlines()
                 if "RINA INFO plan #" in line]
        stats = [line for line in out.splitlines() if line.startswith("# rina plans")]
        commands.append(f"rina-netlab --name {args.lab_name} " +
                        " ".join(shlex.quote(c) for c in run).replace(work + os.sep, ""))
        commands.append(f"rina-netlab --name {args.lab_name} {' '.join(shape)}   "
                        f"# {args.change_after:g} s after the run started")
    rows = read_timeline(timeline)
    # 2. The best static plan for the new rates: a lab built with them, planned.
    doc2 = topology([fast, fast], args.host_mbit, algo == "rina")
    doc2["racks"][0]["uplink_mbit"] = [slow, fast]
    with Lab(args.lab_name, doc2, work, args.switchd) as lab:
        run2 = ["run", "--timeout", str(RUN_TIMEOUT_S), "--env", "RINA_PATHS=planned", "--"] + \
            perf_cmd(args.build, [algo], size, args.iters)
        best = perf_times(netlab(args.lab_name, *run2), [algo])[algo]
        commands.append(f"# {os.path.basename(lab.path)}: {json.dumps(doc2)}")
        commands.append(f"rina-netlab --name {args.lab_name} up {os.path.basename(lab.path)}")
        commands.append(f"rina-netlab --name {args.lab_name} " +
                        " ".join(shlex.quote(c) for c in run2))
    t0 = rows[0][2]
    change = changed.get("at", float("nan")) - t0
    before = [r[3] for r in rows[3:] if r[2] + r[3] < t0 + change]
    after = [r for r in rows if r[2] >= t0 + change]
    late = [r[3] for r in after if r[2] >= t0 + change + 2]
    hit = [r for r in rows if r[2] + r[3] >= t0 + change]
    check_words = (f"about one plan check per {args.check_every[:-1]} s of {algo} allreduces, "
                   f"rank 0 counting" if args.check_every.endswith("s") else
                   f"a plan check before every {args.check_every} {algo} allreduce(s)")
    # Recovered: after the end of the last allreduce that took 1.5x the best
    # static plan's time or more (the slowed path; single allreduces vary by
    # about +-10% on this host, so "below 90%" alone would count noise).
    slow_path = [r for r in hit if r[3] >= 1.5 * best]
    recovered = (slow_path[-1][2] + slow_path[-1][3] - t0 - change) if slow_path else 0.0
    # Throughput per second after the change: bytes of the allreduces that
    # ended in the window over the window's length.
    windows = []
    end = max(r[2] + r[3] for r in rows) - t0
    w = 0.0
    while change + w + 1 <= end:
        done = [r for r in rows if change + w <= r[2] + r[3] - t0 < change + w + 1]
        busy = sum(r[3] for r in done)
        windows.append((w, len(done), (len(done) * best / busy) if busy else 0.0))
        w += 1
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
    lines = ["# Throughput over time across a mid-run rate change (netns lab)", "",
             f"2 racks of 2 hosts, 2 spines, every uplink {fast:g} Mbit/s, hosts "
             f"{args.host_mbit} Mbit/s; {algo} allreduce of {size >> 20} MiB back to back "
             f"({len(rows)} iterations, every result checked), RINA_PATHS=planned, "
             f"RINA_PLAN_THRESHOLD={args.threshold:g}, RINA_PLAN_INTERVAL=0, "
             f"RINA_PLAN_CHECK_EVERY={args.check_every} ({check_words}); with equal rates the first plan puts both "
             f"rack hops on spine 0. {change:.1f} s into the timed run rack a's uplink to spine 0 "
             f"drops to {slow:g} Mbit/s (`rina-netlab shape`, HTB class change on both ends).", "",
             "| | mean time (ms) | throughput vs best static |", "|---|---|---|",
             f"| before the change | {mean(before) * 1e3:.0f} | {best / mean(before):.2f} |",
             f"| from the change on | {mean([r[3] for r in after]) * 1e3:.0f} | "
             f"{best / mean([r[3] for r in after]):.2f} |",
             f"| from 2 s after the change | {mean(late) * 1e3:.0f} | {best / mean(late):.2f} |",
             f"| best static plan for the new rates (spine 1) | {best * 1e3:.0f} | 1.00 |", "",
             f"Recovery: the last allreduce on the slowed path (>= 1.5x the best static plan's "
             f"time; the slowest took {max(r[3] for r in hit) * 1e3:.0f} ms) ended "
             f"{recovered:.2f} s after the change. Throughput of the allreduces ending in each "
             f"second after the change (bytes / their summed time), against the best static "
             f"plan:", "", "| seconds after the change | allreduces | throughput vs best static |",
             "|---|---|---|"] + [f"| {w:.0f}-{w + 1:.0f} | {n} | {f:.2f} |" for w, n, f in windows] + [
             "",
             "Plans (rank 0, RINA_DEBUG=INFO):", "```"] + plans + stats + ["```", "",
             "Target: >= 90% of the best static plan's throughput within 2 s of the "
             "change.", "", "Commands:", "```"] + \
        commands + ["```", "", f"Driver: `perf/lab/paths_bench.py {' '.join(sys.argv[1:])}`", "",
                    f"![throughput over time](lab-paths-midrun{args.suffix}.png)", ""]
    plot_timeline(os.path.join(RESULTS, f"lab-paths-midrun{args.suffix}.png"), rows, t0, change,
                  best, size)
    with open(os.path.join(RESULTS, f"lab-paths-midrun{args.suffix}.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


def plot_timeline(path, rows, t0, change, best, size):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [r[2] - t0 + r[3] for r in rows]
    ys = [size * 8 / r[3] / 1e6 for r in rows]
    ax.plot(xs, ys, marker=".", label="each allreduce (end time)")
    ax.axhline(size * 8 / best / 1e6, color="tab:green", linestyle="--",
               label="best static plan, new rates")
    ax.axhline(0.9 * size * 8 / best / 1e6, color="tab:green", linestyle=":", label="90% of it")
    ax.axvline(change, color="tab:red", label="uplink lowered")
    ax.axvspan(change, change + 2, color="tab:red", alpha=0.1)
    ax.set_xlabel("time since the first timed allreduce (s)")
    ax.set_ylabel("algorithm throughput (Mbit/s of buffer)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--lab-name", default="paths")
    parser.add_argument("--experiments", default="static,midrun")
    parser.add_argument("--algorithms", default="ring")
    parser.add_argument("--size", type=parse_size, default=parse_size("16M"))
    parser.add_argument("-n", "--iters", type=int, default=3)
    parser.add_argument("--fast-mbit", type=float, default=200)
    parser.add_argument("--host-mbit", type=float, default=400)
    parser.add_argument("--change-after", type=float, default=6)
    parser.add_argument("--midrun-algorithm", default="hier", choices=("hier", "rina"))
    parser.add_argument("--midrun-size", type=parse_size, default=parse_size("4M"))
    parser.add_argument("--midrun-iters", type=int, default=60)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--check-every", default="1",
                        help="RINA_PLAN_CHECK_EVERY: collectives, or Ns (seconds)")
    parser.add_argument("--switchd", help="rina-switchd (default: the build's)")
    parser.add_argument("--suffix", default="", help="appended to the result file names")
    args = parser.parse_args()
    if not re.fullmatch(r"[A-Za-z0-9_]+", args.lab_name):
        parser.error("--lab-name: letters, digits and _ only")
    args.switchd = args.switchd or os.path.join(args.build, "p4_agent/rina-switchd")
    if os.geteuid() != 0:
        print("paths_bench.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    algorithms = args.algorithms.split(",")
    work = tempfile.mkdtemp(prefix="paths-bench-")
    try:
        for exp in args.experiments.split(","):
            {"static": static_experiment, "midrun": midrun_experiment}[exp](
                args, work, algorithms, args.size)
    except (Failure, subprocess.TimeoutExpired, KeyError) as e:
        print(f"paths_bench.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
