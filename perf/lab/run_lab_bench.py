#!/usr/bin/python3
"""Allreduce in the emulated lab (tools/rina-netlab) against the performance
targets. For each topology file it brings the lab up, runs rina-allreduce-perf
under `rina-netlab run` (one rank per lab host, the algorithms interleaved on
the same buffers, results checked), brings the lab down, and writes
perf/results/lab-NAME.md (table, closed-form ring time, target ratios, the
commands), perf/results/lab-NAME.png (busbw vs size per algorithm) and a copy
of the topology file as perf/results/lab-NAME.json.

  perf/lab/run_lab_bench.py [--build DIR] [--algorithms LIST] [--sizes 1M,...]
                            [-n ITERS] [-w WARMUP] [--repeats R] [--mtu BYTES]
                            [--lab-name NAME] [--suffix S] [TOPOLOGY.json ...]

Defaults: perf/lab/lab-a-one-rack.json and perf/lab/lab-b-two-racks.json,
algorithms ring,hier,rina,ps-ina,mpi (an algorithm this build does not know
is dropped, and the results say so), sizes 1M,4M,16M,64M, 5 iterations, 1
warmup, 1 repeat (the table shows the median over repeats), MTU 9000, lab
name bench (labs side by side on one machine each need their own --lab-name),
no suffix (--suffix S is appended to the result names: lab-NAME<S>.md).
Needs root.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys

from labtools import REPO, parse_size
DEFAULT_TOPOLOGIES = [os.path.join(REPO, "perf/lab", f)
                      for f in ("lab-a-one-rack.json", "lab-b-two-racks.json")]
RESULTS = os.path.join(REPO, "perf/results")
RAW = os.path.join(RESULTS, "raw")
LAB_NAME = "bench"
# TCP goodput per byte of link rate: 1448 payload bytes per 1514 on the wire
# (docs/testing.md: shaped TCP reaches 0.956 x rate).
TCP_GOODPUT = 0.956
RUN_TIMEOUT_S = 1800


def human(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def netlab(*args, check=True):
    cmd = [os.path.join(REPO, "tools/rina-netlab"), "--name", LAB_NAME, *args]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if check and run.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stdout}{run.stderr}")
    return run


def host_link_mbit(topology):
    rates = {h.get("link_mbit", r.get("host_link_mbit")) if isinstance(h, dict)
             else r.get("host_link_mbit") for r in topology["racks"] for h in r.get("hosts", [])}
    return rates.pop() if len(rates) == 1 else None


def run_bench(build, sizes, algorithms, iters, warmup, raw_json):
    """One rina-allreduce-perf run over every size, every algorithm
    interleaved. Returns (command line, parsed JSON, dropped algorithms)."""
    perf = os.path.join(build, "tools/rina-allreduce-perf")
    algos = list(algorithms)
    dropped = []
    while algos:
        cmd = ["run", "--timeout", str(RUN_TIMEOUT_S), "--", perf,
               "-b", str(min(sizes)), "-e", str(max(sizes)), "-f", "4", "-n", str(iters),
               "-w", str(warmup), "-c", "1", "-a", ",".join(algos), "-J", raw_json]
        run = netlab(*cmd, check=False)
        missing = re.search(r'rinaCommSetAlgorithm\("([^"]+)"\) failed', run.stdout + run.stderr)
        if run.returncode != 0 and missing and missing.group(1) in algos:
            print(f"note: this build has no algorithm '{missing.group(1)}'; dropping it",
                  file=sys.stderr)
            algos.remove(missing.group(1))
            dropped.append(missing.group(1))
            continue
        if run.returncode != 0:
            sys.exit(f"rina-netlab {' '.join(cmd)} failed ({run.returncode}):\n"
                     f"{run.stdout}{run.stderr}")
        if "# Out of bounds values : 0 OK" not in run.stdout:
            sys.exit(f"wrong results:\n{run.stdout}")
        sys.stdout.write(run.stdout)
        with open(raw_json) as f:
            line = f"rina-netlab --name {LAB_NAME} " + " ".join(shlex.quote(c) for c in cmd)
            return line, json.load(f), dropped
    sys.exit("no algorithm left to run")


def plot(path, title, sizes, algos, busbw):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algo in algos:
        xs = [s for s in sizes if (s, algo) in busbw]
        ax.plot(xs, [busbw[(s, algo)] for s in xs], marker="o", label=algo)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([human(s) for s in sizes])
    ax.set_xlabel("message size (float32)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def ratio(num, den):
    return f"{num / den:.2f}" if num and den else "n/a"


def targets(name, times, sizes):
    """The targets of lab (a) and (b), as far as the algorithms that ran allow."""
    lines = []
    t = lambda size, algo: times.get((size, algo))
    mib16, mib64 = 16 << 20, 64 << 20
    if "one-rack" in name:
        r = ratio(t(mib16, "rina"), t(mib16, "ring"))
        lines.append(f"- (a) 16 MiB: rina time / ring time = {r} (target <= 0.75, theory 0.67)")
    if "two-racks" in name:
        for size in (mib16, mib64):
            # Throughput ratios are inverse time ratios.
            lines.append(f"- (b) {human(size)}: rina / ps-ina throughput = "
                         f"{ratio(t(size, 'ps-ina'), t(size, 'rina'))} (target >= 1.5); "
                         f"rina / ring = {ratio(t(size, 'ring'), t(size, 'rina'))}, "
                         f"rina / hier = {ratio(t(size, 'hier'), t(size, 'rina'))} (targets > 1)")
    return lines


def main():
    global LAB_NAME
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("topologies", nargs="*", default=DEFAULT_TOPOLOGIES)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--algorithms", default="ring,hier,rina,ps-ina,mpi")
    parser.add_argument("--sizes", default="1M,4M,16M,64M")
    parser.add_argument("-n", "--iters", type=int, default=5)
    parser.add_argument("-w", "--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    # Jumbo frames, as datacenter fabrics run: TCP is unaffected (veth
    # carries 64 KiB GSO segments either way), an 8 KiB INA datagram is one
    # frame instead of six IP fragments.
    parser.add_argument("--mtu", type=int, default=9000, help="lab link MTU (default 9000)")
    parser.add_argument("--suffix", default="", help="appended to the result file names")
    parser.add_argument("--lab-name", default="bench",
                        help="rina-netlab --name of the lab (default bench)")
    args = parser.parse_args()
    LAB_NAME = args.lab_name
    if not re.fullmatch(r"[A-Za-z0-9_]+", LAB_NAME):
        parser.error("--lab-name: letters, digits and _ only")
    sizes = sorted(parse_size(s) for s in args.sizes.split(","))
    for s in sizes:
        if s != sizes[0] * 4 ** round(math.log(s / sizes[0], 4)):
            parser.error("sizes must be the smallest times powers of 4 (one -f 4 sweep)")
    if os.geteuid() != 0:
        sys.exit("run_lab_bench.py: needs root (network namespaces)")
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    build = os.path.abspath(args.build)
    os.makedirs(RAW, exist_ok=True)
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    for topo_path in args.topologies:
        with open(topo_path) as f:
            topology = json.load(f)
        name = os.path.splitext(os.path.basename(topo_path))[0]
        name = (name[4:] if name.startswith("lab-") else name) + args.suffix
        netlab("down", check=False)  # a lab left by an earlier crash
        load_before = open("/proc/loadavg").read().split()[:3]
        up_cmd = ["up", os.path.abspath(topo_path), "--mtu", str(args.mtu), "--switchd",
                  os.path.join(build, "p4_agent/rina-switchd")]
        netlab(*up_cmd)
        try:
            runs, dropped, command = [], [], ""
            for r in range(args.repeats):
                raw = os.path.join(RAW, f"{name}-run{r + 1}.json")
                command, result, dropped_now = run_bench(
                    build, sizes, args.algorithms.split(","), args.iters, args.warmup, raw)
                dropped = sorted(set(dropped) | set(dropped_now))
                runs.append(result)
        finally:
            netlab("down")
        load_after = open("/proc/loadavg").read().split()[:3]
        nranks = runs[0]["nranks"]
        algos = runs[0]["algorithms"]
        per = {}
        for result in runs:
            for row in result["rows"]:
                per.setdefault((row["size"], row["algo"]), []).append(row["time_us"])
        times = {k: statistics.median(v) for k, v in per.items()}
        busbw = {k: k[0] / (t * 1e-6) / 1e9 * 2 * (nranks - 1) / nranks for k, t in times.items()}
        mbit = host_link_mbit(topology)
        shutil.copyfile(topo_path, os.path.join(RESULTS, f"lab-{name}.json"))
        png = os.path.join(RESULTS, f"lab-{name}.png")
        plot(png, f"{topology.get('name', name)}: {nranks} ranks, "
             f"{mbit} Mbit/s host links", sizes, algos, busbw)

        out = [f"# Allreduce in the netns lab: {topology.get('name', name)}", ""]
        out += [f"{nranks} ranks, one per lab host (rina-netlab: a namespace per host, HTB-shaped "
                f"host links at {mbit} Mbit/s, MTU {args.mtu}, a bridge per rack, a spine; "
                f"rina-switchd on each "
                f"INA rack's bridge). Topology: `perf/results/lab-{name}.json`. float32 sum, "
                f"results checked; algorithms interleaved on the same buffers; each cell the "
                f"median over {args.repeats} run(s) of the slowest rank's mean time over "
                f"{args.iters} iterations after {args.warmup} warmup. busbw = size / time * "
                f"2(n-1)/n.", ""]
        if dropped:
            out += [f"Not run (this build has no such algorithm): {', '.join(dropped)}.", ""]
        out += [f"- Date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
                f"- Machine: {platform.system()} {platform.release()} {platform.machine()}, "
                f"{os.cpu_count()} cores, shared with other builds",
                f"- Load average (1, 5, 15 min) before / after: {' '.join(load_before)} / "
                f"{' '.join(load_after)}",
                f"- rina: commit {commit}, build `{os.path.relpath(build, REPO)}`", "",
                "Commands:", "", "```",
                f"rina-netlab --name {LAB_NAME} up {os.path.relpath(topo_path, REPO)} "
                f"--mtu {args.mtu}",
                command.replace(build + "/", os.path.relpath(build, REPO) + "/")
                       .replace(RAW + "/", "perf/results/raw/"),
                f"rina-netlab --name {LAB_NAME} down", "```", "",
                "Driver: `perf/lab/run_lab_bench.py " + " ".join(
                    shlex.quote(a) for a in sys.argv[1:]) + "`", ""]
        header = "| size | " + " | ".join(f"{a} time (ms) | {a} busbw (GB/s)" for a in algos)
        header += " | ring closed form (ms) | ring / closed form |"
        out += [header, "|" + "---|" * (2 + 2 * len(algos) + 1)]
        for s in sizes:
            cells = []
            for a in algos:
                t = times.get((s, a))
                cells += [f"{t / 1e3:.1f}" if t else "-", f"{busbw[(s, a)]:.3f}" if t else "-"]
            # Ring: 2(n-1)/n * S bytes each way on every host link, at TCP goodput.
            closed = (2 * (nranks - 1) / nranks * s / (mbit * 1e6 / 8 * TCP_GOODPUT) * 1e3
                      if mbit else None)
            ring = times.get((s, "ring"))
            cells += [f"{closed:.1f}" if closed else "-",
                      f"{ring / 1e3 / closed:.2f}" if closed and ring else "-"]
            out.append(f"| {human(s)} | " + " | ".join(cells) + " |")
        out += ["", f"Ring closed form: 2(n-1)/n * S / B with B = {mbit} Mbit/s x "
                f"{TCP_GOODPUT} (TCP goodput on a shaped link).", ""]
        out += ["Targets:"] + targets(name, times, sizes) + [""]
        out += [f"![busbw vs size](lab-{name}.png)", ""]
        md = os.path.join(RESULTS, f"lab-{name}.md")
        with open(md, "w") as f:
            f.write("\n".join(out))
        print(f"wrote {md}, {png}")


if __name__ == "__main__":
    main()
