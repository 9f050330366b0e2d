#!/usr/bin/python3
"""Small allreduces on one host: rina's latency paths by transport, and
large sizes against an earlier build. Every round runs each experiment once,
in turn (so all of them see the same machine noise), and the table takes the
median of the rounds per cell. rina against Open MPI (and a bare copy) is
perf/mpi/onehost.sh allreduce (perf/results/allreduce-onehost.md).

  perf/small/small_msg_bench.py [--build DIR] [--before DIR] [--rounds 3]
                                [--out perf/results/small-messages.md]

Experiments (float32 sum, results checked, rina-allreduce-perf):
  local4   --local-ranks 4 -a auto,rd -b 8 -e 64K -f 2 (fork, shared memory)
  tcp4     RINA_SHM_DISABLE=1 --local-ranks 4 -a auto -b 8 -e 64K -f 2 (TCP on loopback)
  two8     --local-ranks 2 -a auto -b 8 -e 8
  large    --local-ranks 4 -a auto -b 64K -e 64M -f 4, this build and --before's
           (a build of the commit to compare with). A build is a build dir
           (tools/, lib/) or a folder with rina-allreduce-perf and librina.so.0)
With $BENCH_LOCK set, every run holds `flock $BENCH_LOCK`, so benchmarks
sharing that lock file never overlap (do not run this script itself under
the same lock).
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
LOCK = os.environ.get("BENCH_LOCK", "")
SMALL = ["-b", "8", "-e", "64K", "-f", "2", "-n", "100", "-w", "10"]


def locate(build):
    """rina-allreduce-perf of a build dir (tools/, lib/) or of a folder
    holding the binary and librina.so.0 side by side; (binary, lib dir)."""
    build = os.path.abspath(build)
    perf = os.path.join(build, "tools/rina-allreduce-perf")
    if os.path.exists(perf):
        return perf, None
    return os.path.join(build, "rina-allreduce-perf"), build


def human(size):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def run(cmd, env_extra, json_path, lib_dir=None):
    env = dict(os.environ, **env_extra)
    if lib_dir:
        env["LD_LIBRARY_PATH"] = lib_dir
    full = (["flock", LOCK] if LOCK else []) + cmd + ["-J", json_path]
    proc = subprocess.run(full, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 or "Out of bounds values : 0 OK" not in proc.stdout:
        sys.exit(f"{shlex.join(full)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    with open(json_path) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--before", help="build dir of the commit to compare large sizes with")
    parser.add_argument("--before-label", default="before")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(REPO, "perf/results/small-messages.md"))
    args = parser.parse_args()
    perf, lib = locate(args.build)
    experiments = {
        "local4": ([perf, "--local-ranks", "4", "-a", "auto,rd"] + SMALL, {}, lib),
        "tcp4": ([perf, "--local-ranks", "4", "-a", "auto"] + SMALL, {"RINA_SHM_DISABLE": "1"},
                 lib),
        "two8": ([perf, "--local-ranks", "2", "-a", "auto", "-b", "8", "-e", "8", "-n", "2000",
                  "-w", "200"], {}, lib),
        "large": ([perf, "--local-ranks", "4", "-a", "auto", "-b", "64K", "-e", "64M", "-f", "4",
                   "-n", "20", "-w", "3"], {}, lib),
    }
    if args.before:
        bperf, blib = locate(args.before)
        experiments["large-" + args.before_label] = (
            [bperf] + experiments["large"][0][1:], {}, blib)
    load_before = open("/proc/loadavg").read().split()[:3]
    times = {}  # (experiment, size, algo) -> [us per round]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, (cmd, env, lib) in experiments.items():
                result = run(cmd, env, os.path.join(tmp, f"{name}-{r}.json"), lib)
                for row in result["rows"]:
                    times.setdefault((name, row["size"], row["algo"]), []).append(row["time_us"])
                print(f"round {r + 1}: {name} done", file=sys.stderr)
    load_after = open("/proc/loadavg").read().split()[:3]
    med = {k: statistics.median(v) for k, v in times.items()}

    def cell(name, size, algo):
        v = times.get((name, size, algo))
        return f"{statistics.median(v):.1f}" if v else "-"

    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    out = ["# Small allreduces on one host", "",
           f"float32 sum, results checked, 4 ranks unless said; time in us, the slowest rank's "
           f"mean per call; each cell the median of {args.rounds} rounds, every round running "
           f"each experiment once in turn.", "",
           f"- Date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
           f"- Machine: {platform.system()} {platform.release()}, {os.cpu_count()} cores; "
           f"load average before / after: {' '.join(load_before)} / "
           f"{' '.join(load_after)}",
           f"- rina: commit {commit}", "",
           "Commands" + (" (each under `flock " + LOCK + "`)" if LOCK else "") + ":", "", "```"]
    for name, (cmd, env, lib) in experiments.items():
        line = " ".join(f"{k}={v}" for k, v in env.items())
        line += (" " if line else "") + shlex.join(cmd).replace(REPO + "/", "")
        if lib:
            line = f"LD_LIBRARY_PATH={lib} " + line
        out.append(f"{name}: {line}")
    out += ["```", "", "Driver: `perf/small/small_msg_bench.py " + shlex.join(sys.argv[1:]) + "`",
            ""]
    sizes = sorted({s for (n, s, _) in times if n == "local4"})
    out += ["## 8 B - 64 KiB", "",
            "| size | local auto | local rd | TCP auto |", "|---|---|---|---|"]
    for s in sizes:
        out.append(f"| {human(s)} | {cell('local4', s, 'auto')} | {cell('local4', s, 'rd')} | "
                   f"{cell('tcp4', s, 'auto')} |")
    out += ["", "time(4 KiB) <= time(32 KiB):"]
    for name, algo in (("local4", "auto"), ("tcp4", "auto")):
        t4, t32 = med.get((name, 4096, algo)), med.get((name, 32768, algo))
        if t4 and t32:
            out.append(f"- {name} {algo}: {t4:.1f} / {t32:.1f} us: "
                       f"{'yes' if t4 <= t32 else 'NO'}")
    t8 = med.get(("two8", 8, "auto"))
    out += ["", f"2 ranks, 8 B: {t8:.1f} us (rounds: "
            f"{', '.join(f'{v:.1f}' for v in times[('two8', 8, 'auto')])})" if t8 else "", ""]
    large = sorted({s for (n, s, _) in times if n == "large"})
    blabel = "large-" + args.before_label
    out += ["## 64 KiB - 64 MiB against " + (args.before_label if args.before else "(no --before)"),
            "", f"| size | this build auto | {args.before_label} auto | this / before |",
            "|---|---|---|---|"]
    for s in large:
        a, b = med.get(("large", s, "auto")), med.get((blabel, s, "auto"))
        out.append(f"| {human(s)} | {a:.1f} | " + (f"{b:.1f} | {a / b:.2f} |" if b else "- | - |"))
    text = "\n".join(out) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
