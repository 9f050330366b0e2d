#!/usr/bin/env bash
# Core allreduce benchmark on this host, n = 4 ranks: rina's ring against
# Open MPI's own allreduce (interleaved in one rina-allreduce-perf run, so
# both see the same machine noise) and Gloo's chunked ring.
#
#   perf/run_core_bench.sh [BUILD_DIR]        (default: build, else build-perf)
#
# Environment: REPEATS (default 3; the table shows the median of each row),
# NP (default 4). Raw outputs go to perf/results/raw/ (not committed); the
# table, with the exact commands, to perf/results/core-allreduce.md.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [[ -z $build ]]; then
  for candidate in build build-perf; do
    if [[ -x $repo/$candidate/tools/rina-allreduce-perf ]]; then
      build=$candidate
      break
    fi
  done
fi
build=$(cd "$repo" && cd "${build:?no build dir with tools/rina-allreduce-perf; pass one}" && pwd)
perf_tool=$build/tools/rina-allreduce-perf
gloo_tool=$build/perf/gloo/gloo-allreduce-bench
[[ -x $perf_tool ]] || { echo "missing $perf_tool" >&2; exit 2; }

np=${NP:-4}
repeats=${REPEATS:-3}
raw=$repo/perf/results/raw
out=$repo/perf/results/core-allreduce.md
mkdir -p "$raw"

if [[ $(id -u) == 0 ]]; then
  # Open MPI refuses root without these, and then exits 0 (docs/testing.md, "The lab").
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# Ranks poll; with few cores they must yield or starve each other.
mpirun_cmd="mpirun -np $np --oversubscribe --mca mpi_yield_when_idle 1"
commands=(
  "$mpirun_cmd $perf_tool -b 64K -e 64M -f 4 -a ring,mpi"
  "$mpirun_cmd $perf_tool -b 4K -e 4K -a ring,mpi"
)
if [[ -x $gloo_tool ]]; then
  commands+=(
    "$gloo_tool --local-ranks $np -b 64K -e 64M -f 4"
    "$gloo_tool --local-ranks $np -b 4K -e 4K"
  )
else
  echo "note: $gloo_tool not built (Gloo not found); no Gloo column" >&2
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
rm -f "$raw"/core-*.txt
failed=0
for ((r = 1; r <= repeats; r++)); do
  for i in "${!commands[@]}"; do
    file=$raw/core-$i-run$r.txt
    echo "[$r/$repeats] ${commands[$i]}" >&2
    # No quotes: each command is a plain word list.
    if ! timeout 900 ${commands[$i]} >"$file" 2>&1 || ! grep -q '^# Out of bounds values : 0 OK' "$file"; then
      echo "FAILED (see $file):" >&2
      tail -5 "$file" >&2
      failed=1
    fi
  done
done
if ((failed)); then
  echo "some runs failed; $out not written" >&2
  exit 1
fi

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
mpi_version=$(mpirun --version 2>/dev/null) || true
mpi_version=${mpi_version%%$'\n'*}

/usr/bin/python3 - "$raw" "$out" "$repeats" "$np" <<PY
import glob, statistics, sys
raw, out, repeats, np = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
times = {}  # (size, algo) -> [time_us]
for path in sorted(glob.glob(raw + "/core-*-run*.txt")):
    for line in open(path):
        f = line.split()
        if len(f) == 9 and not line.startswith("#"):
            times.setdefault((int(f[0]), f[4]), []).append(float(f[5]))
def cell(size, algo):
    t = times.get((size, algo))
    if not t:
        return "-", "-", None
    med = statistics.median(t)
    busbw = size / (med * 1e3) * 2 * (np - 1) / np
    return f"{med:.1f}", f"{busbw:.3f}", busbw
rows = []
for size in sorted({s for s, _ in times}):
    ring, mpi, gloo = cell(size, "ring"), cell(size, "mpi"), cell(size, "gloo")
    ratio = f"{ring[2] / mpi[2]:.2f}" if ring[2] and mpi[2] else "-"
    label = f"{size // 1048576} MiB" if size >= 1048576 else f"{size // 1024} KiB"
    rows.append(f"| {label} | {ring[0]} | {ring[1]} | {mpi[0]} | {mpi[1]} | {gloo[0]} | {gloo[1]} | {ratio} |")
with open(out, "w") as md:
    md.write("""# Core allreduce: rina ring vs Open MPI vs Gloo ($np ranks, one host)

float32 sum, out of place for rina and Open MPI (rina-allreduce-perf, the two
interleaved on the same buffers), in place for Gloo (its API). Every run's
results were checked (\`# Out of bounds values : 0 OK\`). Each cell is the
median over $repeats run(s) of the per-iteration time (the slowest rank's mean
over 20 iterations after 5 warmup); busbw = size / time * 2 (n - 1) / n.
The host is shared (see the load averages below): repeated runs vary by 30%
or more. rina's ring and Open MPI ran interleaved in the same processes, so
their ratio is the most trustworthy number here; Gloo ran separately.

- Date: $(date -u '+%Y-%m-%d %H:%M UTC')
- Machine: $(uname -srm), $cpu, $(nproc) cores, $mem
- Load average (1, 5, 15 min) before / after the runs: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)
- MPI: $mpi_version; Gloo: Debian libgloo-dev
- rina: commit $commit, build \`${build#$repo/}\`

Commands (each run $repeats time(s); raw outputs in perf/results/raw/):

\`\`\`
$(printf '%s\n' "${commands[@]}" | sed "s|$repo/||g")
\`\`\`

| size | rina ring time (us) | busbw (GB/s) | Open MPI time (us) | busbw (GB/s) | Gloo time (us) | busbw (GB/s) | ring / MPI busbw |
|---|---|---|---|---|---|---|---|
""")
    md.write("\n".join(rows) + "\n")
print(f"wrote {out}")
PY
