"""Turns perf/mpi/run.sh's raw outputs into perf/results/mpi-interposer.md:
per size, the median over rounds of each configuration's time, busbw, and
the ratios against native; the spread (max/min over rounds) shows the noise."""
import argparse
import glob
import os
import re
import statistics
import platform


def parse(path):
    rows = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s*$", line)
            if m:
                size, time_us, _, busbw, wrong = m.groups()
                rows[int(size)] = (float(time_us), float(busbw), int(wrong))
    return rows


def parse_interleaved(path):
    # rina-allreduce-perf rows: size count type redop algo time algbw busbw #wrong
    rows = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 9 and p[0].isdigit() and p[4] in ("auto", "mpi"):
                rows.setdefault(int(p[0]), {})[p[4]] = float(p[5])
    return rows


def size_name(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--np")
    ap.add_argument("--start")
    ap.add_argument("--load")
    ap.add_argument("--commit")
    ap.add_argument("--build")
    ap.add_argument("--min-bytes")
    ap.add_argument("--command", action="append", default=[])
    a = ap.parse_args()
    commands = dict(c.split("=", 1) for c in a.command)

    runs = {}  # config -> size -> list of (time, busbw, wrong)
    interleaved = {}  # size -> list of (rina time, mpi time)
    for path in sorted(glob.glob(os.path.join(a.raw, "mpi-interleaved-run*.txt"))):
        for size, row in parse_interleaved(path).items():
            if "auto" in row and "mpi" in row:
                interleaved.setdefault(size, []).append((row["auto"], row["mpi"]))
    for name in commands:
        if name == "interleaved":
            continue
        for path in sorted(glob.glob(os.path.join(a.raw, f"mpi-{name}-run*.txt"))):
            for size, row in parse(path).items():
                runs.setdefault(name, {}).setdefault(size, []).append(row)

    def med(name, size, i):
        return statistics.median(r[i] for r in runs[name][size])

    def spread(name, size):
        times = [r[0] for r in runs[name][size]]
        return max(times) / min(times)

    wrong = sum(r[2] for c in runs.values() for rows in c.values() for r in rows)
    print("# librina_mpi.so (LD_PRELOAD) vs Open MPI alone, MPI_Allreduce\n")
    print(f"{a.np} ranks on one host, float32 sum, out of place; the same unmodified program")
    print("(`perf/mpi/mpi_allreduce_bench.c`) natively and with `LD_PRELOAD=librina_mpi.so`.")
    print(f"Configurations alternate run by run, {a.rounds} rounds; each cell is the median over")
    print("rounds of a run's median block (the slowest rank's time per call). busbw =")
    print(f"size / time x 2(n-1)/n. Wrong elements over all runs: {wrong}.\n")
    print(f"- Date: {a.start}; rina commit {a.commit}, build `{a.build}`")
    print(f"- Machine: {platform.system()} {platform.release()} {platform.machine()}, "
          f"{os.cpu_count()} cores, shared with other builds")
    print(f"- Load average (1, 5, 15 min) before / after: {a.load}")
    print(f"- RINA_MPI_MIN_BYTES default: {a.min_bytes}\n")
    print("Commands (from the repository root; raw outputs in perf/results/raw/):\n```")
    for name, cmd in commands.items():
        print(f"{name:14s} {cmd}")
    print("```\n")
    print("| size | native us | busbw | preload us | busbw | rina-all us | busbw "
          "| preload/native busbw | rina-all/native busbw | spread native / preload / rina-all |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in sorted(runs.get("native", {})):
        cells = [size_name(size)]
        for name in ("native", "preload", "rina-all"):
            cells += [f"{med(name, size, 0):.1f}", f"{med(name, size, 1):.3f}"]
        n_bw = med("native", size, 1)
        cells.append(f"{med('preload', size, 1) / n_bw:.2f}")
        cells.append(f"{med('rina-all', size, 1) / n_bw:.2f}")
        cells.append(" / ".join(f"{spread(n, size):.1f}x" for n in ("native", "preload", "rina-all")))
        print("| " + " | ".join(cells) + " |")
    print("\nThe host is shared: spread (slowest / fastest round) is often 2x or more, and")
    print("even delegated sizes differ between native and preload runs by that much, so")
    print("only ratios well beyond the spread mean anything. Below RINA_MPI_MIN_BYTES the")
    print("preload column runs Open MPI's own allreduce (delegated calls).")
    if interleaved:
        print("\nThreshold: rina (`auto`) and Open MPI (`mpi`) interleaved in the same processes")
        print("(rina-allreduce-perf, 40 iterations per size per run), so both see the same noise.\n")
        print("| size | rina us (median) | Open MPI us (median) | rina/MPI time (median of per-run ratios) "
              "| runs rina faster |")
        print("|---|---|---|---|---|")
        for size in sorted(interleaved):
            pairs = interleaved[size]
            ratio = statistics.median(r / m for r, m in pairs)
            wins = sum(1 for r, m in pairs if r < m)
            print(f"| {size_name(size)} | {statistics.median(r for r, _ in pairs):.1f} | "
                  f"{statistics.median(m for _, m in pairs):.1f} | {ratio:.2f} | {wins} of {len(pairs)} |")
    if "native-1rank" in runs:
        print("\nCost of delegation alone: 1 rank, every call delegated (single-rank) when")
        print("preloaded, so the difference is the interposer's bookkeeping per call.\n")
        print("| size | native us | preload us | difference us | preload/native time |")
        print("|---|---|---|---|---|")
        for size in sorted(runs["native-1rank"]):
            n_t = med("native-1rank", size, 0)
            p_t = med("preload-1rank", size, 0)
            print(f"| {size_name(size)} | {n_t:.2f} | {p_t:.2f} | {p_t - n_t:+.2f} | {p_t / n_t:.3f} |")


if __name__ == "__main__":
    main()
