#!/usr/bin/python3
"""The demo's mpirun table as a newcomer meets it: tools/demo.sh's local run
(--local-ranks 4, 8 B - 16 MiB, auto,ring,rd) and right after it the same
mpirun run as the demo's (rina auto against Open MPI's MPI_Allreduce, 4
ranks, 8 B - 16 MiB, -n 10 -w 3), repeated. The table gives, per size, the
median over runs of rina's and Open MPI's time and of their ratio, and how
many runs kept rina within 1.5x of Open MPI; every run's 8 B row is listed.

  perf/small/demo_rows.py [--build DIR] [--runs 10] [--alone]
                          [--out perf/results/demo-mpirun-rows.md]

--alone leaves the local run out (the mpirun run alone, for comparison).
Needs mpirun. Every result is checked by rina-allreduce-perf itself.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
LOCAL = ["--local-ranks", "4", "-b", "8", "-e", "16M", "-f", "8", "-n", "20", "-w", "5",
         "-a", "auto,ring,rd"]
MPIRUN = ["mpirun", "-np", "4", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
MPI_ARGS = ["-b", "8", "-e", "16M", "-f", "8", "-n", "10", "-w", "3", "-a", "auto,mpi"]


def run(cmd, env):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"demo_rows: {' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-2000:]}")
    return r.stdout


def mpirun_rows(perf, env, tmp):
    out = os.path.join(tmp, "mpi.json")
    text = run(MPIRUN + [perf] + MPI_ARGS + ["-J", out], env)
    # mpirun exits 0 even where it refuses to start: the JSON must be there.
    if not os.path.exists(out):
        sys.exit(f"demo_rows: mpirun wrote no results:\n{text[-2000:]}")
    with open(out) as f:
        d = json.load(f)
    if d.get("out_of_bounds", 1) != 0 or any(r["wrong"] for r in d["rows"]):
        sys.exit("demo_rows: a result was wrong")
    times = {}
    for r in d["rows"]:
        times.setdefault(r["size"], {})[r["algo"]] = r["time_us"]
    os.remove(out)
    return times


def size_name(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n:
            return f"{b // n} {unit}"
    return f"{b} B"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"))
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--alone", action="store_true")
    p.add_argument("--out", default=os.path.join(REPO, "perf/results/demo-mpirun-rows.md"))
    a = p.parse_args()
    perf = os.path.join(a.build, "tools", "rina-allreduce-perf")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               RINA_DEBUG=os.environ.get("RINA_DEBUG", "WARN"))
    load_before = open("/proc/loadavg").read().split()[:3]
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.runs):
            if not a.alone:
                run([perf] + LOCAL, env)
            runs.append(mpirun_rows(perf, env, tmp))
            t = runs[-1][8]
            print(f"run {i + 1}: 8 B rina {t['auto']:.1f} us, Open MPI {t['mpi']:.1f} us",
                  file=sys.stderr)
    load_after = open("/proc/loadavg").read().split()[:3]
    sizes = sorted(runs[0])
    lines = [
        "# The demo's mpirun table: rina `auto` against Open MPI's MPI_Allreduce",
        "",
        f"4 ranks on one host under mpirun (float32 sum, every result checked), "
        f"{'the mpirun run alone' if a.alone else 'each run right after the demo local run'}, "
        f"{a.runs} runs; times are each run's slowest-rank mean per call, then the median "
        f"over runs. Taken {started} on {os.cpu_count()} CPUs ({platform.release()}); load "
        f"average {' '.join(load_before)} before, {' '.join(load_after)} after.",
        "",
        "| size | rina auto (us) | Open MPI (us) | rina / MPI (median of runs) | "
        "runs within 1.5x | worst rina / MPI |",
        "|---|---|---|---|---|---|",
    ]
    for s in sizes:
        r = [x[s]["auto"] for x in runs]
        m = [x[s]["mpi"] for x in runs]
        ratios = [x[s]["auto"] / x[s]["mpi"] for x in runs]
        within = sum(1 for q in ratios if q <= 1.5)
        lines.append(f"| {size_name(s)} | {statistics.median(r):.1f} | "
                     f"{statistics.median(m):.1f} | {statistics.median(ratios):.2f} | "
                     f"{within} / {len(runs)} | {max(ratios):.2f} |")
    lines += ["", "8 B, every run (rina / Open MPI, us): " + ", ".join(
        f"{x[8]['auto']:.1f} / {x[8]['mpi']:.1f}" for x in runs), "", "## Commands", "", "```"]
    if not a.alone:
        lines.append(" ".join(["build/tools/rina-allreduce-perf"] + LOCAL))
    lines.append(" ".join(MPIRUN + ["build/tools/rina-allreduce-perf"] + MPI_ARGS))
    lines += ["```", "", "Driver: `perf/small/demo_rows.py " + " ".join(sys.argv[1:]) + "`", ""]
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
