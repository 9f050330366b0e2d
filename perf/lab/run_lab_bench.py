#!/usr/bin/python3
"""Allreduce in the emulated lab (tools/rina-netlab) against the performance
targets. For each topology file it brings the lab up, runs rina-allreduce-perf
under `rina-netlab run` (one rank per lab host, the algorithms interleaved on
the same buffers, results checked) --repeats times, brings the lab down, and
writes perf/results/lab-NAME.md (the median table, every run on its own with
its load average and the targets it met, what the INA datagrams met in each
run: resends by cause, the switches' duplicates, drops at sockets and
qdiscs; the commands), perf/results/lab-NAME.png (busbw vs size per
algorithm) and a copy of the topology file as perf/results/lab-NAME.json.

  perf/lab/run_lab_bench.py [--build DIR] [--baseline DIR] [--algorithms LIST]
                            [--sizes 1M,...] [-n ITERS] [-w WARMUP] [--repeats R]
                            [--mtu BYTES] [--background-load N] [--env NAME=VALUE]...
                            [--switchd-args ARGS] [--rina-ring-target X]
                            [--lab-name NAME] [--suffix S] [TOPOLOGY.json ...]

Defaults: perf/lab/lab-a-one-rack.json and perf/lab/lab-b-two-racks.json,
algorithms ring,hier,rina,ps-ina,mpi (an algorithm this build does not know
is dropped, and the results say so), sizes 1M,4M,16M,64M, 5 iterations, 1
warmup, 1 repeat, MTU 9000, lab name bench (labs side by side on one machine
each need their own --lab-name), no suffix (--suffix S is appended to the
result names: lab-NAME<S>.md).

--baseline DIR: an A/B run. Every repeat runs the baseline build and then
this build, each in a lab brought up with its own rina-switchd, and the
results give this build's time over the baseline's per run and size.
--background-load N: N processes that only spin run beside the lab during
every measurement (the machine loaded by something else). --env NAME=VALUE
(repeatable) goes to every rank (rina-netlab run --env); with
RINA_DEBUG=INFO the plans rank 0 made and their choice of how each INA rack
takes part (docs/planning.md) are copied into the results, per run. The
ranks' TCP runs cubic (RINA_TCP_CONGESTION=cubic, first among the settings)
unless --env names RINA_TCP_CONGESTION (empty: the namespaces' own, which
they inherit from the machine).
--switchd-args ARGS: the INA racks' rina-switchd flags (rina-netlab up
--switchd-args; e.g. "--payload 2048 --capacity-pps 1000", a slow switch).
--rina-ring-target X: the per-run target on rina / ring throughput for
topologies of several members (default 1.10, lab (b)'s).
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

from labtools import (REPO, counters_delta, ina_sends, lab_counters, parse_size, tcp_goodput,
                      with_default_congestion)
DEFAULT_TOPOLOGIES = [os.path.join(REPO, "perf/lab", f)
                      for f in ("lab-a-one-rack.json", "lab-b-two-racks.json")]
RESULTS = os.path.join(REPO, "perf/results")
RAW = os.path.join(RESULTS, "raw")
LAB_NAME = "bench"
RUN_TIMEOUT_S = 1800
# Lab (b)'s theory for rina / ring throughput: 1.75 S against 1.5 S per host link.
RINA_RING_THEORY_B = 1.75 / 1.5


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


def one_rack(topology):
    return len(topology["racks"]) == 1 and topology["racks"][0].get("ina")


def rina_theory_ms(topology, size, mbit, goodput):
    """Lab (a): every worker sends its contribution (S) to the switch and gets
    the sum (S) back: S each way on every host link, at TCP goodput (what
    tools/demo.sh puts beside rina's time)."""
    if not one_rack(topology) or not mbit:
        return None
    return size / (mbit * 1e6 / 8 * goodput) * 1e3


ENV = []  # --env NAME=VALUE, for every rank


def run_bench(build, sizes, algorithms, iters, warmup, raw_json):
    """One rina-allreduce-perf run over every size, every algorithm
    interleaved. Returns (command line, parsed JSON, stdout, dropped algorithms)."""
    perf = os.path.join(build, "tools/rina-allreduce-perf")
    algos = list(algorithms)
    dropped = []
    while algos:
        cmd = ["run", "--timeout", str(RUN_TIMEOUT_S), *[x for e in ENV for x in ("--env", e)],
               "--", perf,
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
            # The ranks' log lines (RINA_DEBUG) come on stderr.
            return line, json.load(f), run.stdout + run.stderr, dropped
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


def targets(topology, name, times, sizes):
    """The older summary targets of lab (a) and (b), on the median table."""
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


RINA_RING_TARGET = 1.10  # --rina-ring-target


def run_targets(topology, mbit, goodput, run, sizes):
    """Per run: (text, met) for every target this run can be held to."""
    out = []
    t = run["times"]
    for s in sizes:
        rina, ring = t.get((s, "rina")), t.get((s, "ring"))
        theory = rina_theory_ms(topology, s, mbit, goodput)
        if rina and theory:
            limit = 1.30 if s < 4 << 20 else 1.10
            r = rina / 1e3 / theory
            out.append((f"{human(s)} rina / theory {r:.2f} (<= {limit:.2f})", r <= limit))
        if rina and ring and not one_rack(topology):
            r = ring / rina
            out.append((f"{human(s)} rina / ring throughput {r:.2f} (>= {RINA_RING_TARGET:.2f})",
                        r >= RINA_RING_TARGET))
    ina = run["ina"]
    if ina.get("first"):
        r = ina["resent"] / ina["first"]
        out.append((f"resends {100 * r:.3f}% of first sends (<= 1%)", r <= 0.01))
    return out


def spinners(n):
    return [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"]) for _ in range(n)]


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def measure(label, build, topo_path, args, sizes, name, r, bring_up):
    """One run of `build` (labelled label) in the lab: counters before and
    after, times, INA lines."""
    if bring_up:
        netlab("down", check=False)
        up = ["up", os.path.abspath(topo_path), "--mtu", str(args.mtu), "--switchd",
              os.path.join(build, "p4_agent/rina-switchd")]
        if args.switchd_args:
            up += ["--switchd-args", args.switchd_args]
        netlab(*up)
    load = spinners(args.background_load)
    try:
        loadavg = open("/proc/loadavg").read().split()[:3]
        before = lab_counters(LAB_NAME, build)
        raw = os.path.join(RAW, f"{name}-{label}-run{r + 1}.json")
        command, result, stdout, dropped = run_bench(
            build, sizes, args.algorithms.split(","), args.iters, args.warmup, raw)
        after = lab_counters(LAB_NAME, build)
    finally:
        stop(load)
    times = {(row["size"], row["algo"]): row["time_us"] for row in result["rows"]}
    return {"label": label, "run": r + 1, "load": loadavg, "times": times, "result": result,
            "command": command, "dropped": dropped, "ina": ina_sends(stdout),
            "net": counters_delta(before, after), "plans": plan_lines(stdout)}


def plan_lines(output):
    """Rank 0's INFO lines of the plans it made and their choice of rack
    modes (RINA_DEBUG=INFO), without the logger's prefix."""
    out = []
    for line in output.splitlines():
        m = re.search(r"(plan #\d+[ :].*)$", line)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def counters_row(run):
    ina, net = run["ina"], run["net"]
    first = ina.get("first")
    pct = f"{100 * ina['resent'] / first:.3f}%" if first else "-"
    return (f"| {run['label']} {run['run']} | {first if first else '-'} | "
            f"{ina.get('resent', '-')} ({pct}) | {ina.get('fast', '-')} | "
            f"{ina.get('by_timer', '-')} | {ina.get('late_answers', '-')} | "
            f"{net['switch_duplicate_pending']} / {net['switch_duplicate_resent']} | "
            f"{net['switch_received'] - net['switch_contributions']} | "
            f"{ina.get('socket_drops', '-')} / {net['switch_socket_drops']} | "
            f"{net['udp_rcvbuf_errors']} | {net['qdisc_drops']} | {ina.get('window_cuts', '-')} | "
            f"{ina.get('host_slices', '-')} | {ina.get('fallbacks', '-')} |")


def main():
    global LAB_NAME, ENV, RINA_RING_TARGET
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("topologies", nargs="*", default=DEFAULT_TOPOLOGIES)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--baseline", help="another build to run A/B against, repeat by repeat")
    parser.add_argument("--algorithms", default="ring,hier,rina,ps-ina,mpi")
    parser.add_argument("--sizes", default="1M,4M,16M,64M")
    parser.add_argument("-n", "--iters", type=int, default=5)
    parser.add_argument("-w", "--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    # Jumbo frames, as datacenter fabrics run: TCP is unaffected (veth
    # carries 64 KiB GSO segments either way), an 8 KiB INA datagram is one
    # frame instead of six IP fragments.
    parser.add_argument("--mtu", type=int, default=9000, help="lab link MTU (default 9000)")
    parser.add_argument("--background-load", type=int, default=0,
                        help="processes that only spin beside every measurement")
    parser.add_argument("--env", action="append", default=[],
                        help="NAME=VALUE for every rank (repeatable)")
    parser.add_argument("--switchd-args", default="",
                        help="rina-switchd flags of the INA racks (rina-netlab up --switchd-args)")
    parser.add_argument("--rina-ring-target", type=float, default=1.10,
                        help="per-run target on rina / ring throughput (default 1.10)")
    parser.add_argument("--suffix", default="", help="appended to the result file names")
    parser.add_argument("--lab-name", default="bench",
                        help="rina-netlab --name of the lab (default bench)")
    args = parser.parse_args()
    LAB_NAME = args.lab_name
    ENV = with_default_congestion(args.env)
    RINA_RING_TARGET = args.rina_ring_target
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
    baseline = os.path.abspath(args.baseline) if args.baseline else None
    builds = ([("baseline", baseline)] if baseline else []) + [("build", build)]
    os.makedirs(RAW, exist_ok=True)
    goodput = tcp_goodput(args.mtu)
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    for topo_path in args.topologies:
        with open(topo_path) as f:
            topology = json.load(f)
        name = os.path.splitext(os.path.basename(topo_path))[0]
        name = (name[4:] if name.startswith("lab-") else name) + args.suffix
        mbit = host_link_mbit(topology)
        netlab("down", check=False)  # a lab left by an earlier crash
        load_before = open("/proc/loadavg").read().split()[:3]
        runs = []
        try:
            for r in range(args.repeats):
                for i, (label, b) in enumerate(builds):
                    # A/B: each build in a lab with its own switch; else one lab.
                    runs.append(measure(label, b, topo_path, args, sizes, name, r,
                                        bring_up=bool(baseline) or (r == 0 and i == 0)))
        finally:
            netlab("down", check=False)
        load_after = open("/proc/loadavg").read().split()[:3]
        mine = [run for run in runs if run["label"] == "build"]
        nranks = mine[0]["result"]["nranks"]
        algos = mine[0]["result"]["algorithms"]
        dropped = sorted({a for run in mine for a in run["dropped"]})
        per = {}
        for run in mine:
            for key, t in run["times"].items():
                per.setdefault(key, []).append(t)
        times = {k: statistics.median(v) for k, v in per.items()}
        busbw = {k: k[0] / (t * 1e-6) / 1e9 * 2 * (nranks - 1) / nranks for k, t in times.items()}
        shutil.copyfile(topo_path, os.path.join(RESULTS, f"lab-{name}.json"))
        png = os.path.join(RESULTS, f"lab-{name}.png")
        plot(png, f"{topology.get('name', name)}: {nranks} ranks, "
             f"{mbit} Mbit/s host links", sizes, algos, busbw)

        out = [f"# Allreduce in the netns lab: {topology.get('name', name)}", ""]
        out += [f"{nranks} ranks, one per lab host (rina-netlab: a namespace per host, HTB-shaped "
                f"host links at {mbit} Mbit/s, MTU {args.mtu}, a bridge per rack, a spine; "
                f"rina-switchd on each "
                f"INA rack's bridge). Topology: `perf/results/lab-{name}.json`. float32 sum, "
                f"results checked; algorithms interleaved on the same buffers; a run is one "
                f"rina-allreduce-perf invocation, its time per size and algorithm the slowest "
                f"rank's mean over {args.iters} iterations after {args.warmup} warmup; the "
                f"first table is the median over {args.repeats} run(s). busbw = size / time * "
                f"2(n-1)/n.", ""]
        if args.background_load:
            out += [f"Beside every measurement, {args.background_load} process(es) that only spin "
                    f"(`python3 -c 'while True: pass'`): the machine loaded by something else.",
                    ""]
        if dropped:
            out += [f"Not run (this build has no such algorithm): {', '.join(dropped)}.", ""]
        out += [f"- Date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
                f"- Machine: {platform.system()} {platform.release()} {platform.machine()}, "
                f"{os.cpu_count()} cores, shared with other builds",
                f"- Load average (1, 5, 15 min) before / after: {' '.join(load_before)} / "
                f"{' '.join(load_after)}; each run's below",
                f"- rina: commit {commit}, build `{os.path.relpath(build, REPO)}`"
                + (f"; baseline build `{args.baseline}`" if baseline else ""), "",
                "Commands:", "", "```",
                f"rina-netlab --name {LAB_NAME} up {os.path.relpath(topo_path, REPO)} "
                f"--mtu {args.mtu}"
                + (f" --switchd-args {shlex.quote(args.switchd_args)}" if args.switchd_args
                   else ""),
                mine[0]["command"].replace(build + "/", os.path.relpath(build, REPO) + "/")
                       .replace(RAW + "/", "perf/results/raw/"),
                f"rina-netlab --name {LAB_NAME} down", "```", "",
                "Driver: `perf/lab/run_lab_bench.py " + " ".join(
                    shlex.quote(a) for a in sys.argv[1:]) + "`", ""]
        header = "| size | " + " | ".join(f"{a} time (ms) | {a} busbw (GB/s)" for a in algos)
        header += " | ring closed form (ms) | ring / closed form |"
        columns = 2 + 2 * len(algos) + 1
        if one_rack(topology):
            header += " rina theory (ms) | rina / theory |"
            columns += 2
        out += [header, "|" + "---|" * columns]
        for s in sizes:
            cells = []
            for a in algos:
                t = times.get((s, a))
                cells += [f"{t / 1e3:.1f}" if t else "-", f"{busbw[(s, a)]:.3f}" if t else "-"]
            # Ring: 2(n-1)/n * S bytes each way on every host link, at TCP goodput.
            closed = (2 * (nranks - 1) / nranks * s / (mbit * 1e6 / 8 * goodput) * 1e3
                      if mbit else None)
            ring = times.get((s, "ring"))
            cells += [f"{closed:.1f}" if closed else "-",
                      f"{ring / 1e3 / closed:.2f}" if closed and ring else "-"]
            theory = rina_theory_ms(topology, s, mbit, goodput)
            if one_rack(topology):
                rina = times.get((s, "rina"))
                cells += [f"{theory:.1f}" if theory else "-",
                          f"{rina / 1e3 / theory:.2f}" if theory and rina else "-"]
            out.append(f"| {human(s)} | " + " | ".join(cells) + " |")
        out += ["", f"Ring closed form: 2(n-1)/n * S / B with B = {mbit} Mbit/s x "
                f"{goodput:.3f} (TCP goodput on a shaped link at MTU {args.mtu}: "
                "perf/lab/labtools.py tcp_goodput)."]
        if one_rack(topology):
            out += ["rina theory: S / B, every worker's contribution up and the sum down "
                    "(tools/demo.sh's)."]
        out += [""]
        median_targets = targets(topology, name, times, sizes)
        if median_targets:
            out += ["Targets on the median table:"] + median_targets + [""]

        out += ["## Every run", "",
                "Times in ms; the targets each run met (all must hold in every run to be "
                "claimed)" + (f"; rina / ring theory {RINA_RING_THEORY_B:.3f}"
                              if "two-racks" in name else "") + ".", ""]
        out += ["| run | load (1, 5, 15 min) | " + " | ".join(
            f"{human(s)} {a}" for s in sizes for a in algos) + " | targets |",
            "|" + "---|" * (3 + len(sizes) * len(algos))]
        for run in runs:
            cells = [f"{run['times'][(s, a)] / 1e3:.1f}" if (s, a) in run["times"] else "-"
                     for s in sizes for a in algos]
            checks = run_targets(topology, mbit, goodput, run, sizes)
            text = "; ".join(f"{t} {'met' if ok else 'MISSED'}" for t, ok in checks)
            out.append(f"| {run['label']} {run['run']} | {' '.join(run['load'])} | "
                       + " | ".join(cells) + f" | {text} |")
        out += [""]
        for s in sizes:
            for a in ("ring", "rina"):
                if a not in algos:
                    continue
                mine_t = [run["times"].get((s, a)) for run in mine]
                if all(mine_t):
                    out.append(f"- {human(s)} {a}: {len(mine_t)} runs, "
                               f"{min(mine_t) / 1e3:.1f}-{max(mine_t) / 1e3:.1f} ms")
        if baseline:
            out += ["", "A/B (this build's time / the baseline's, the runs paired as they "
                    "alternated):", ""]
            for a in algos:
                for s in sizes:
                    pairs = [(runs[2 * r + 1]["times"].get((s, a)), runs[2 * r]["times"].get((s, a)))
                             for r in range(args.repeats)]
                    rs = [f"{x / y:.3f}" for x, y in pairs if x and y]
                    if rs:
                        out.append(f"- {a} {human(s)}: {', '.join(rs)}")
        out += ["", "## What the INA datagrams met, per run", "",
                "First sends and resends summed over the ranks (rina-allreduce-perf's "
                "`# rina INA sends` line; an older build has none), by cause: overtaken by "
                "later answers of the same switch thread (fast) or the retransmission timer; "
                "late answers (a second answer for a resent datagram: only late, not lost); "
                "the switches' duplicates (a resend of a contribution they already had: "
                "while its slot waited / after it completed) and everything the switches "
                "received beyond contributions; drops at the ranks' INA sockets / the "
                "switches' (SO_RXQ_OVFL), the kernel's UDP receive-buffer errors in every "
                "namespace, drops of every qdisc (the HTB of each shaped link); window "
                "halvings; slices summed on the hosts; fallbacks. Every algorithm of the "
                "run is counted, warm-up and checks included.", "",
                "| run | first sends | resent | fast | by timer | late answers | switch dups "
                "pending / after | switch extra datagrams | socket drops ranks / switches | "
                "UDP RcvbufErrors | qdisc drops | window cuts | host slices | fallbacks |",
                "|" + "---|" * 14]
        out += [counters_row(run) for run in runs]
        if any(run["plans"] for run in runs):
            out += ["", "## The plans (rank 0, RINA_DEBUG=INFO)", ""]
            for run in runs:
                out += [f"{run['label']} {run['run']}:", "", "```"] + run["plans"] + ["```", ""]
        out += ["", f"![busbw vs size](lab-{name}.png)", ""]
        md = os.path.join(RESULTS, f"lab-{name}.md")
        with open(md, "w") as f:
            f.write("\n".join(out))
        print(f"wrote {md}, {png}")


if __name__ == "__main__":
    main()
