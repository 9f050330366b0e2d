#!/usr/bin/env bash
# `cmake --install` puts rina_torch where the interpreter finds it: installs
# the build into a temporary prefix, imports the package from
# <prefix>/<RINA_PYTHON_INSTALL_DIR> (the same relative folder under
# /usr/local is on the interpreter's default sys.path), and runs a one-rank
# process group there, its extension loading the installed librina.
set -euo pipefail
build=$1 python=$2 pydir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
"$python" - "$tmp/prefix/$pydir" "/usr/local/$pydir" "$tmp/prefix" <<'PY'
import sys
site, usr_local, prefix = sys.argv[1:4]
if usr_local not in sys.path:
    sys.exit(f"install_check: FAIL: {usr_local} is not on {sys.executable}'s sys.path {sys.path}")
sys.path.insert(0, site)
import datetime, torch, torch.distributed as dist
import rina_torch
if not rina_torch.__file__.startswith(site):
    sys.exit(f"install_check: FAIL: imported {rina_torch.__file__}, not the installed package")
store = dist.HashStore()
dist.init_process_group("rina", store=store, rank=0, world_size=1,
                        timeout=datetime.timedelta(seconds=30))
t = torch.arange(6, dtype=torch.float32)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(6, dtype=torch.float32)), t
libs = [l.split()[-1] for l in open("/proc/self/maps") if "librina.so" in l]
if not libs or not all(l.startswith(prefix) for l in libs):
    sys.exit(f"install_check: FAIL: librina loaded from {sorted(set(libs))}, not under {prefix}")
dist.destroy_process_group()
print("install_check: ok", rina_torch.__file__, sorted(set(libs))[0])
PY
