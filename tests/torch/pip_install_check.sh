#!/usr/bin/env bash
# `pip install ./python` in a fresh venv with torch 2.x: the venv gets the
# torch of the test's interpreter through a .pth file (no second download),
# pip builds the package from a copy of python/ and include/ with librina
# from the build folder (RINA_PREFIX), and a one-rank group of the installed
# package runs an all_reduce, its extension loading that librina.
set -euo pipefail
src=$1 build=$2 python=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "pip_install_check: FAIL: $*"; exit 1; }
"$python" -m venv "$tmp/venv" || fail "python -m venv"
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
fresh=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$site" > "$fresh/torch-of-the-test-interpreter.pth"
# --no-build-isolation (no PyPI needed) builds with the environment's
# setuptools: the test interpreter's (a venv's own may predate bdist_wheel).
"$tmp/venv/bin/pip" uninstall -q -y setuptools > /dev/null 2>&1 || true
mkdir "$tmp/src"
cp -r "$src/python" "$src/include" "$tmp/src/"
rm -rf "$tmp/src/python/build" "$tmp/src/python/"*.egg-info
start=$(date +%s)
RINA_PREFIX=$build "$tmp/venv/bin/pip" install --no-build-isolation --no-deps -q "$tmp/src/python" \
  > "$tmp/pip.log" 2>&1 || { grep -v "^ *$" "$tmp/pip.log" | tail -40; fail "pip install"; }
echo "pip install took $(($(date +%s) - start)) s"
cd "$tmp"
"$tmp/venv/bin/python" - "$fresh" "$build/lib" <<'PY'
import sys
site, libdir = sys.argv[1:3]
import datetime, torch, torch.distributed as dist
import rina_torch
if not rina_torch.__file__.startswith(site):
    sys.exit(f"pip_install_check: FAIL: imported {rina_torch.__file__}, not the installed package")
dist.init_process_group("rina", store=dist.HashStore(), rank=0, world_size=1,
                        timeout=datetime.timedelta(seconds=30))
t = torch.arange(6, dtype=torch.bfloat16)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(6, dtype=torch.bfloat16)), t
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "librina.so" in l})
if not libs or not all(l.startswith(libdir) for l in libs):
    sys.exit(f"pip_install_check: FAIL: librina loaded from {libs}, not from {libdir}")
dist.destroy_process_group()
print("pip_install_check: ok", torch.__version__, rina_torch.__file__, libs[0])
PY
