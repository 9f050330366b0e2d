"""Turns perf/mpi/first_calls.sh's CSVs into perf/results/mpi-first-calls.md:
per size and kind, call 0 (the communicator's first call, rina's set-up when
preloaded), calls 1-19 and the steady time (calls CALLS/2 onwards), medians
over trials of the slowest rank's time; and the per-call profile of the
first 30 calls."""
import argparse
import csv
import os
import platform
import re
import statistics


def load(path):
    # (bytes, kind) -> trial -> [seconds per call]
    runs = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            trials = runs.setdefault((int(row["bytes"]), row["kind"]), {})
            calls = trials.setdefault(int(row["trial"]), [])
            assert int(row["call"]) == len(calls)
            calls.append(float(row["seconds"]) * 1e6)
    return runs


def size_name(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def label(run, kind):
    if run == "native":
        return "native" if kind == "PMPI_Allreduce" else "native (MPI_Allreduce)"
    return "rina (preloaded)" if kind == "MPI_Allreduce" else "native (PMPI, same run)"


def summary_rows(run, runs):
    rows = []
    for (size, kind), trials in sorted(runs.items()):
        per = list(trials.values())
        half = len(per[0]) // 2
        steady = [statistics.median(c[half:]) for c in per]
        early_med = [statistics.median(c[1:20]) for c in per]
        early_max = [max(c[1:20]) for c in per]
        first = trials[min(trials)][0]
        later_call0 = [trials[t][0] for t in sorted(trials)[1:]] or [first]
        st = statistics.median(steady)
        rows.append(
            f"| {size_name(size)} | {label(run, kind)} | {first / 1e3:.1f} | "
            f"{statistics.median(later_call0) / 1e3:.1f} | {statistics.median(early_med):.0f} | "
            f"{statistics.median(early_max):.0f} | {st:.0f} | "
            f"{statistics.median(early_med) / st:.2f} | {statistics.median(early_max) / st:.2f} |")
    return rows


def profile_rows(run, runs):
    rows = []
    for (size, kind), trials in sorted(runs.items()):
        per = list(trials.values())
        cells = [f"{statistics.median(c[i] for c in per):.0f}" for i in range(1, 30)]
        rows.append(f"| {size_name(size)} | {label(run, kind)} | " + " | ".join(cells) + " |")
    return rows


def setup_rows(path):
    # "... comm#3 (rank 0 of 4): rina communicator ready in 8.3 ms (unique id
    # allgather 0.4, rina set-up 6.1, agreement 1.8)"; per communicator, the
    # slowest rank's line.
    pattern = re.compile(r"comm#(\d+) \(rank (\d+) of \d+\): rina communicator ready in ([\d.]+) ms "
                         r"\(unique id allgather ([\d.]+), rina set-up ([\d.]+), agreement ([\d.]+)\)")
    slowest = {}
    with open(path) as f:
        for line in f:
            m = pattern.search(line)
            if not m:
                continue
            comm = int(m.group(1))
            parts = tuple(float(x) for x in m.group(3, 4, 5, 6))
            if comm not in slowest or parts[0] > slowest[comm][0]:
                slowest[comm] = parts
    if not slowest:
        return []
    first = slowest[min(slowest)]
    later = [v for k, v in sorted(slowest.items()) if k != min(slowest)] or [first]
    rows = [f"| first communicator | " + " | ".join(f"{x:.1f}" for x in first) + " |"]
    rows.append(f"| later ones, median of {len(later)} | " +
                " | ".join(f"{statistics.median(v[i] for v in later):.1f}" for i in range(4)) + " |")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw")
    ap.add_argument("--np")
    ap.add_argument("--calls", type=int)
    ap.add_argument("--trials", type=int)
    ap.add_argument("--start")
    ap.add_argument("--load")
    ap.add_argument("--commit")
    ap.add_argument("--command", action="append", default=[])
    a = ap.parse_args()
    commands = dict(c.split("=", 1) for c in a.command)
    data = {run: load(os.path.join(a.raw, f"first-calls-{run}.csv")) for run in ("preloaded", "native")}

    print("# librina_mpi.so: the first calls on a fresh communicator\n")
    print(f"{a.np} ranks on one host, float32 sum, out of place; per trial a fresh communicator "
          f"(`MPI_Comm_dup`) and {a.calls} calls, each after a barrier, timed on the slowest rank; "
          f"{a.trials} trials. In the preloaded run `MPI_Allreduce` is rina and `PMPI_Allreduce` "
          "the MPI library, trial by trial in alternating order on communicators of their own, "
          "so both see the same noise; the native run (no preload) checks that the two "
          "columns then agree. Every result was checked against the closed-form sum: 0 wrong.\n")
    print(f"- Date: {a.start}; rina commit {a.commit}")
    print(f"- Machine: {platform.system()} {platform.release()} {platform.machine()}, "
          f"{os.cpu_count()} cores, shared with other developers' builds")
    print(f"- Load average (1, 5, 15 min) before / after: {a.load}\n")
    print("Commands (from the repository root; raw CSVs in perf/results/raw/):\n```")
    for name, cmd in commands.items():
        print(f"{name:10} {cmd}")
    print("```\n")
    print("Medians over trials. Call 0 of the first trial is the process's first communicator "
          "(one-time costs included); \"later call 0\" is the median over the other trials. "
          "Calls 1-19: the median call and the slowest one; steady: calls "
          f"{a.calls // 2}-{a.calls - 1}.\n")
    print("| size | what | call 0, first comm (ms) | call 0, later comms (ms) | calls 1-19 median (us) "
          "| calls 1-19 slowest (us) | steady (us) | 1-19 median / steady | 1-19 slowest / steady |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in ("preloaded", "native"):
        for row in summary_rows(run, data[run]):
            print(row)
    rows = setup_rows(os.path.join(a.raw, "first-calls-preloaded.txt"))
    if rows:
        print("\nrina's set-up inside call 0 (`RINA_DEBUG=INFO`, the slowest rank's line per "
              "communicator, ms): the allgather of rank 0's unique id (it waits for every "
              "rank), rina's own set-up (rendezvous, connections, shared-memory segments), "
              "the agreement (an allreduce; it waits for the slowest rank's set-up). The rest "
              "of call 0 is the first collective itself, which touches its pages for the "
              "first time.\n")
        print("| communicator | set-up total | unique id allgather | rina set-up | agreement |")
        print("|---|---|---|---|---|")
        for row in rows:
            print(row)
    print("\nPer call (us), median over trials, calls 1-29:\n")
    print("| size | what | " + " | ".join(str(i) for i in range(1, 30)) + " |")
    print("|---|---|" + "---|" * 29)
    for run in ("preloaded", "native"):
        for row in profile_rows(run, data[run]):
            print(row)


if __name__ == "__main__":
    main()
