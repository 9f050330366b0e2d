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
    # (bytes, kind) -> trial -> [us per call], and likewise the page faults
    # per call (summed over ranks)
    runs, faults = {}, {}
    with open(path) as f:
        for row in csv.DictReader(f):
            key, trial = (int(row["bytes"]), row["kind"]), int(row["trial"])
            calls = runs.setdefault(key, {}).setdefault(trial, [])
            assert int(row["call"]) == len(calls)
            calls.append(float(row["seconds"]) * 1e6)
            faults.setdefault(key, {}).setdefault(trial, []).append(int(row["faults"]))
    return runs, faults


def size_name(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def label(run, kind):
    if run == "native":
        return "native" if kind == "PMPI_Allreduce" else "native (MPI_Allreduce)"
    return "rina (preloaded)" if kind == "MPI_Allreduce" else "native (PMPI, same run)"


def summary_rows(run, runs, faults):
    rows = []
    for (size, kind), trials in sorted(runs.items()):
        fault_trials = list(faults[(size, kind)].values())
        faults0 = statistics.median(f[0] for f in fault_trials)
        faults_early = statistics.median(sum(f[1:20]) for f in fault_trials)
        per = list(trials.values())
        half = len(per[0]) // 2
        steady = [statistics.median(c[half:]) for c in per]
        early_med = [statistics.median(c[1:20]) for c in per]
        early_max = [max(c[1:20]) for c in per]
        first = trials[min(trials)][0]
        later_call0 = [trials[t][0] for t in sorted(trials)[1:]] or [first]
        # Each of calls 1-19 as its median over trials, the slowest of them:
        # a call that is slow in most trials shows here, a spike in one does not.
        worst_call = max(statistics.median(c[i] for c in per) for i in range(1, 20))
        st = statistics.median(steady)
        rows.append(
            f"| {size_name(size)} | {label(run, kind)} | {first / 1e3:.1f} | "
            f"{statistics.median(later_call0) / 1e3:.1f} | {statistics.median(early_med):.0f} | "
            f"{statistics.median(early_max):.0f} | {st:.0f} | "
            f"{statistics.median(early_med) / st:.2f} | {worst_call / st:.2f} | "
            f"{statistics.median(early_max) / st:.2f} | {faults0:.0f} | {faults_early:.0f} |")
    return rows


def profile_rows(run, runs):
    rows = []
    for (size, kind), trials in sorted(runs.items()):
        per = list(trials.values())
        cells = [f"{statistics.median(c[i] for c in per):.0f}" for i in range(1, 30)]
        rows.append(f"| {size_name(size)} | {label(run, kind)} | " + " | ".join(cells) + " |")
    return rows


def setup_rows(path):
    # librina_mpi: "... comm#3 (rank 0 of 4): rina communicator ready in 8.3 ms
    # (unique id allgather 0.4, rina set-up 6.1, agreement 1.8)"; inside it,
    # librina's "rank 0: set-up took 5.9 ms (config and listening 0.3,
    # rendezvous 2.0, connections 3.1, the rest 0.5)", logged just before by
    # the same rank. Per communicator, the slowest rank's lines.
    ready = re.compile(r"comm#(\d+) \(rank (\d+) of \d+\): rina communicator ready in ([\d.]+) ms "
                       r"\(unique id allgather ([\d.]+), rina set-up ([\d.]+), agreement ([\d.]+)\)")
    inside = re.compile(r"rank (\d+): set-up took ([\d.]+) ms \(config and listening ([\d.]+), "
                        r"rendezvous ([\d.]+), connections ([\d.]+), the rest ([\d.]+)\)")
    slowest = {}
    latest = {}  # rank -> its latest librina breakdown
    with open(path) as f:
        for line in f:
            m = inside.search(line)
            if m:
                latest[int(m.group(1))] = tuple(float(x) for x in m.group(3, 4, 5, 6))
                continue
            m = ready.search(line)
            if not m:
                continue
            comm, rank = int(m.group(1)), int(m.group(2))
            total, gather, rina, agree = (float(x) for x in m.group(3, 4, 5, 6))
            parts = (total, gather, rina) + latest.pop(rank, (float("nan"),) * 4) + (agree,)
            if comm not in slowest or parts[0] > slowest[comm][0]:
                slowest[comm] = parts
    if not slowest:
        return []
    first = slowest[min(slowest)]
    later = [v for k, v in sorted(slowest.items()) if k != min(slowest)] or [first]
    # Whole rows, so that the parts add up: the later communicators' fastest,
    # median and slowest by total.
    later.sort(key=lambda v: v[0])
    picks = [("first communicator", first)]
    if later:
        picks += [(f"later ones (of {len(later)}): fastest", later[0]),
                  ("later ones: median", later[(len(later) - 1) // 2]),
                  ("later ones: slowest", later[-1])]
    return [f"| {name} | " + " | ".join(f"{x:.1f}" for x in v) + " |" for name, v in picks]


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
    data, faults = {}, {}
    for run in ("preloaded", "native"):
        data[run], faults[run] = load(os.path.join(a.raw, f"first-calls-{run}.csv"))

    print("# librina_mpi.so: the first calls on a fresh communicator\n")
    print(f"{a.np} ranks on one host, float32 sum, out of place; per trial a fresh communicator "
          f"(`MPI_Comm_dup`) and {a.calls} calls, each after a barrier, timed on the slowest rank; "
          f"{a.trials} trials. In the preloaded run `MPI_Allreduce` is rina and `PMPI_Allreduce` "
          "the MPI library, trial by trial in alternating order on communicators of their own, "
          "so both see the same noise; the native run (no preload) checks that the two "
          "columns then agree. Every result was checked against the closed-form sum: 0 wrong.\n")
    print(f"- Date: {a.start}; rina commit {a.commit}")
    print(f"- Machine: {platform.system()} {platform.release()} {platform.machine()}, "
          f"{os.cpu_count()} cores (the load average below says how busy)")
    print(f"- Load average (1, 5, 15 min) before / after: {a.load}\n")
    print("Commands (from the repository root; raw CSVs in perf/results/raw/):\n```")
    for name, cmd in commands.items():
        print(f"{name:10} {cmd}")
    print("```\n")
    print("Medians over trials. Call 0 of the first trial is the process's first communicator "
          "(one-time costs included); \"later call 0\" is the median over the other trials. "
          "Calls 1-19: the median call and the slowest one of each trial; steady: calls "
          f"{a.calls // 2}-{a.calls - 1}. \"Slowest of 1-19 / steady\" takes each of calls 1-19 "
          "as its median over trials (the profile below) and divides the slowest of them by "
          "the steady time: a call that is slow on a fresh communicator is slow in most trials "
          "and shows there; a spike from another process in one trial does not. The last "
          "column but two divides each trial's slowest call instead, spikes included. The last "
          "two count page faults taken during the calls (all ranks together): memory a call "
          "touches for the first time shows there whatever the load.\n")
    print("| size | what | call 0, first comm (ms) | call 0, later comms (ms) | calls 1-19 median (us) "
          "| calls 1-19 slowest (us) | steady (us) | 1-19 median / steady "
          "| slowest of 1-19 / steady | per-trial slowest / steady | page faults, call 0 "
          "| page faults, calls 1-19 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in ("preloaded", "native"):
        for row in summary_rows(run, data[run], faults[run]):
            print(row)
    rows = setup_rows(os.path.join(a.raw, "first-calls-preloaded.txt"))
    if rows:
        print("\nrina's set-up inside call 0 (`RINA_DEBUG=INFO`, the slowest rank's lines per "
              "communicator, ms): the allgather of rank 0's unique id (it waits for every "
              "rank), rina's own set-up (`rinaCommInitRank`) and, inside it, reading the "
              "configuration and opening the listening socket, the rendezvous at rank 0 "
              "(it ends when the last rank has registered, so it holds the other ranks' "
              "lateness too), the connections (a shared-memory segment per peer, agreed over "
              "a socket) and the rest (link probe, INA, planning); then the agreement (an "
              "allreduce; it waits for the slowest rank's set-up). The rest of call 0 is the "
              "first collective itself, which touches its pages for the first time.\n")
        print("| communicator | set-up total | unique id allgather | rina set-up | config, listen "
              "| rendezvous | connections | rest | agreement |")
        print("|---|---|---|---|---|---|---|---|---|")
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
