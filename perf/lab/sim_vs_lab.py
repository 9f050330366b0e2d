#!/usr/bin/python3
"""rina-sim against the netns lab on the same topology file: brings a lab up
(tools/rina-netlab, a name of its own), times rina-allreduce-perf there for
each algorithm and size (and, with several spines, each RINA_PATHS rule),
runs rina-sim on the lab's resolved topology with the matching planner
choice, and compares the allreduce times. Exits 1 when a row differs by more
than --tolerance (default 0.15), 2 on a usage or lab error. The lab is
always brought down, also on failure.

  perf/lab/sim_vs_lab.py [--build DIR] [--lab-name NAME] [--algorithms ring,rina]
                         [--sizes 4M,16M] [--paths planned,fixed] [-n ITERS]
                         [--env NAME=VALUE ...] [--step-latency-us U|measured]
                         [--mtu BYTES] [--tolerance F] [--markdown FILE] TOPOLOGY.json

What the simulator is told: the file's rates (host links, per-spine uplinks)
times the TCP goodput of a shaped link at the lab's MTU (labtools.tcp_goodput:
0.956 at 1500, 1448 payload bytes per 1514 on the wire; 0.993 at 9000),
since rina-sim moves payload at the raw rate.
The lab's hier and rina follow rank 0's plan (each INA rack's mode, ring
order, ports), so rina-sim runs lib/plan's planner (--planner plan) for
every rule: RINA_PATHS unset (the default, planned) and planned as they
are; fixed (every hop on spine 0) on a topology whose other spines are
removed (spines: 1 keeps spine 0's rates); hash is not simulated.
RINA_PLAN_INA=on in --env is simulated as --plan-ina on. The latency of a
dependent step (rina-sim --step-latency-us) is measured in the same lab by
default (--step-latency-us measured): the flat ring's time at 16 KiB, where
latency is all there is, less its bytes at TCP goodput, over its 2(n-1)
steps; a number gives it instead. A lab host with an address per spine (the resolved file's
spine_addrs) has a NIC per plane, and so does its simulated host (traffic
over spine s on NIC s, switch and in-rack traffic on NIC 0). --env passes
RINA_* settings to the lab's ranks (e.g. RINA_INA_SLOTS); RINA_INA_PORT_MARKERS
there is simulated too (rina-sim --port-markers). The ranks' TCP runs cubic
(RINA_TCP_CONGESTION=cubic) unless --env names RINA_TCP_CONGESTION (empty:
the namespaces' own, inherited from the machine). Needs root.
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

from labtools import REPO, Failure, parse_size
import labtools

RUN_TIMEOUT_S = 600
netlab = functools.partial(labtools.netlab, timeout=RUN_TIMEOUT_S)


def lab_times(name, build, algorithms, sizes, iters, paths, env=()):
    """Mean allreduce time (s) per (algo, size) from one perf run."""
    perf = os.path.join(build, "tools/rina-allreduce-perf")
    args = ["run", "--timeout", str(RUN_TIMEOUT_S)]
    if paths:
        args += ["--env", f"RINA_PATHS={paths}"]
    for e in env:
        args += ["--env", e]
    args += ["--", perf, "-a", ",".join(algorithms), "-b", str(min(sizes)), "-e", str(max(sizes)),
             "-f", "4", "-n", str(iters), "-w", "1", "-c", "1"]
    out = netlab(name, *args)
    if not re.search(r"^# Out of bounds values : 0 OK$", out, re.M):
        raise Failure(f"wrong results in the lab:\n{out}")
    times = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 9 and f[0].isdigit() and f[4] in algorithms:
            times[(f[4], int(f[0]))] = float(f[5]) * 1e-6
    command = "rina-netlab --name %s %s" % (name, " ".join(shlex.quote(a) for a in args))
    return times, command


def measured_step_latency_us(name, build, env, resolved, goodput):
    """One dependent step's latency in this lab (us): the flat ring at 16
    KiB (RINA_SMALL_MSG_BYTES=0 keeps it from recursive doubling), less its
    bytes over the slowest host link at TCP goodput, over 2(n-1) steps."""
    size = 16 << 10
    perf = os.path.join(build, "tools/rina-allreduce-perf")
    args = ["run", "--timeout", str(RUN_TIMEOUT_S), "--env", "RINA_SMALL_MSG_BYTES=0"]
    for e in env:
        args += ["--env", e]
    args += ["--", perf, "-a", "ring", "-b", str(size), "-e", str(size), "-n", "20", "-w", "3",
             "-c", "0"]
    out = netlab(name, *args)
    n = int(re.search(r"^# nranks (\d+)", out, re.M).group(1))
    t = next(float(f[5]) for f in (line.split() for line in out.splitlines())
             if len(f) >= 8 and f[0] == str(size) and f[4] == "ring")
    with open(resolved) as f:
        doc = json.load(f)
    rates = [h.get("link_mbit", r.get("host_link_mbit")) if isinstance(h, dict)
             else r.get("host_link_mbit") for r in doc["racks"] for h in r.get("hosts", [])]
    rates = [x for x in rates if x]
    bytes_us = (2 * (n - 1) / n * size / (min(rates) * 1e6 / 8 * goodput) * 1e6
                if rates else 0)
    command = "rina-netlab --name %s %s" % (name, " ".join(shlex.quote(a) for a in args))
    return max(0.0, (t - bytes_us) / (2 * (n - 1))), command


def sim_topology(resolved, spines_kept, work, goodput):
    """The resolved lab topology with rates scaled to TCP goodput; with
    spines_kept = 1, only spine 0 (its rates)."""
    with open(resolved) as f:
        doc = json.load(f)

    def scale(v):
        return [x * goodput for x in v] if isinstance(v, list) else v * goodput

    def keep(v):
        return v[0] if isinstance(v, list) and spines_kept == 1 else v

    spines = doc.get("spines", 1)
    if "spine_link_mbit" in doc:
        doc["spine_link_mbit"] = scale(keep(doc["spine_link_mbit"]))
    for rack in doc["racks"]:
        for key in ("host_link_mbit", "uplink_mbit"):
            if key in rack:
                rack[key] = scale(keep(rack[key]))
        for h in rack.get("hosts", []):
            if isinstance(h, dict):
                if "link_mbit" in h:
                    h["link_mbit"] = scale(h["link_mbit"])
                if spines_kept == 1:
                    h.pop("spine_addrs", None)
    if spines_kept == 1:
        doc["spines"] = 1
    else:
        doc["spines"] = spines
    path = os.path.join(work, f"sim-topology-{spines_kept}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def sim_time(build, topo, algo, size, step_latency_us, markers="1", plan_ina="choose"):
    cmd = [os.path.join(build, "tools/sim/rina-sim"), "--topo", topo, "-a", algo, "-s",
           str(size), "--planner", "plan", "--plan-ina", plan_ina,
           "--step-latency-us", str(step_latency_us), "--port-markers", markers]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise Failure(f"{' '.join(cmd)}: exit {run.returncode}: {run.stderr}")
    for line in run.stdout.splitlines():
        f = line.split()
        if f and f[0].split("/")[0] == algo:
            return float(f[4]) * 1e-3, " ".join(shlex.quote(c) for c in cmd)
    raise Failure(f"no {algo} row in rina-sim's output:\n{run.stdout}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("topology")
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--lab-name", default="simlab")
    parser.add_argument("--algorithms", default="ring,rina")
    parser.add_argument("--sizes", default="4M,16M")
    parser.add_argument("--paths", default="",
                        help="RINA_PATHS rules to run (planned,fixed); default: none set "
                             "(the library's default, planned)")
    parser.add_argument("-n", "--iters", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a RINA_* setting for the lab's ranks (repeatable)")
    parser.add_argument("--step-latency-us", default="measured",
                        help="per dependent step in rina-sim: a number of us, or measured "
                             "(default: the flat ring at 16 KiB in the same lab)")
    parser.add_argument("--tolerance", type=float, default=0.15)
    parser.add_argument("--markdown", help="also write the table here")
    parser.add_argument("--switchd", help="rina-switchd for INA racks (default: the build's)")
    parser.add_argument("--mtu", type=int,
                        help="the lab's link MTU (rina-netlab up --mtu; default: the file's)")
    args = parser.parse_args()
    if not re.fullmatch(r"[A-Za-z0-9_]+", args.lab_name):
        parser.error("--lab-name: letters, digits and _ only")
    if args.step_latency_us != "measured":
        try:
            if float(args.step_latency_us) < 0:
                raise ValueError
        except ValueError:
            parser.error("--step-latency-us: a number >= 0 or measured")
    algorithms = args.algorithms.split(",")
    sizes = sorted(parse_size(s) for s in args.sizes.split(","))
    paths = [p for p in args.paths.split(",") if p] or [""]
    for e in args.env:
        if not re.fullmatch(r"RINA_[A-Z0-9_]+=\S*", e):
            parser.error(f"--env: NAME=VALUE with a RINA_* name, got '{e}'")
    # The simulator counts what the ranks send and runs the plan they run:
    # with RINA_INA_PORT_MARKERS or RINA_PLAN_INA given, it simulates the same.
    def env_value(name, default, allowed):
        value = default
        for e in args.env:
            if e.startswith(name + "="):
                value = e.split("=", 1)[1]
        if value not in allowed:
            parser.error(f"--env {name}: {' or '.join(allowed)}")
        return value

    args.env = labtools.with_default_congestion(args.env)
    markers = env_value("RINA_INA_PORT_MARKERS", "1", ("0", "1"))
    plan_ina = env_value("RINA_PLAN_INA", "choose", ("choose", "on"))
    for p in paths:
        if p not in ("", "planned", "fixed"):
            parser.error(f"--paths: planned or fixed, got '{p}'")
    if os.geteuid() != 0:
        print("sim_vs_lab.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    switchd = args.switchd or os.path.join(args.build, "p4_agent/rina-switchd")
    rows, commands = [], []
    work = tempfile.mkdtemp(prefix="sim-vs-lab-")
    try:
        up = ["up", args.topology, "--switchd", switchd]
        if args.mtu:
            up += ["--mtu", str(args.mtu)]
        netlab(args.lab_name, *up)
        commands.append(f"rina-netlab --name {args.lab_name} " + " ".join(up))
        resolved = f"/run/rina-netlab/{args.lab_name}/topology.json"
        mtu = labtools.lab_state(args.lab_name).get("mtu") or 1500
        goodput = labtools.tcp_goodput(mtu)
        print(f"MTU {mtu}: TCP goodput {goodput:.3f} of the link rate")
        step_us = args.step_latency_us
        if step_us == "measured":
            step_us, command = measured_step_latency_us(args.lab_name, args.build, args.env,
                                                        resolved, goodput)
            commands.append(command)
            print(f"step latency measured: {step_us:.0f} us")
            step_us = f"{step_us:.0f}"
        for rule in paths:
            times, command = lab_times(args.lab_name, args.build, algorithms, sizes, args.iters,
                                       rule, args.env)
            commands.append(command)
            topo = sim_topology(resolved, 1 if rule == "fixed" else 0, work, goodput)
            for algo in algorithms:
                for size in sizes:
                    if (algo, size) not in times:
                        raise Failure(f"no lab time for {algo} at {size} bytes")
                    sim, sim_cmd = sim_time(args.build, topo, algo, size, step_us, markers,
                                            plan_ina)
                    lab = times[(algo, size)]
                    rows.append((rule or "-", algo, size, lab, sim, sim / lab - 1))
                    if sim_cmd not in commands:
                        commands.append(sim_cmd)
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f"sim_vs_lab.py: {e}", file=sys.stderr)
        return 2
    finally:
        try:
            netlab(args.lab_name, "down", timeout=120)
        except (Failure, subprocess.TimeoutExpired) as e:
            print(f"sim_vs_lab.py: down failed: {e}", file=sys.stderr)
    lines = ["| RINA_PATHS | algo | size | lab (ms) | rina-sim (ms) | sim/lab - 1 |",
             "|---|---|---|---|---|---|"]
    worst = 0.0
    for rule, algo, size, lab, sim, err in rows:
        lines.append(f"| {rule} | {algo} | {size >> 20} MiB | {lab * 1e3:.1f} | {sim * 1e3:.1f} | "
                     f"{err * 100:+.1f}% |")
        worst = max(worst, abs(err))
    print("\n".join(lines))
    print(f"worst disagreement {worst * 100:.1f}% (tolerance {args.tolerance * 100:.0f}%)")
    if args.markdown:
        with open(args.markdown, "w") as f:
            # The sim topologies are this run's scratch files: named, not placed;
            # the rest from the repository root.
            shown = [c.replace(work + os.sep, "").replace(REPO + os.sep, "") for c in commands]
            f.write("\n".join(["```"] + shown + ["```", ""] + lines) + "\n")
    bad = [r for r in rows if abs(r[5]) > args.tolerance]
    for rule, algo, size, lab, sim, err in bad:
        print(f"FAIL: {algo} at {size >> 20} MiB (RINA_PATHS {rule}): rina-sim {sim * 1e3:.1f} ms, "
              f"lab {lab * 1e3:.1f} ms ({err * 100:+.1f}%)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
