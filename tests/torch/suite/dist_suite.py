#!/usr/bin/env python3
"""PyTorch's own distributed test suite (torch/testing/_internal/distributed/
distributed_test.py, as Debian's python3-torch and PyPI's torch 2.x wheels ship
it) on one backend.

    BACKEND=rina WORLD_SIZE=3 PYTHONPATH=build/python \\
        /usr/bin/python3 tests/torch/suite/dist_suite.py [--select REGEX] [--list]
    BACKEND=rina WORLD_SIZE=4 PYTHONPATH=build/python-torch2 \\
        ~/.cache/rina/torch2-venv/bin/python tests/torch/suite/dist_suite.py --start fork

As torch's own test_distributed_spawn.py: every test spawns WORLD_SIZE ranks
that each call init_process_group(BACKEND) through a file store (--start
fork forks them from this process instead, as torch's old
test_distributed_fork.py did: no import of torch per rank and test). The
backend's name is added to the suite's feature sets ("ddp", "subgroup",
"plugin") before the suite is imported, since its decorators read them at
import. Without --select it runs the CPU tests: names without cuda, nccl,
gpu, multigpu, profiler, SyncBatchNorm or timeout. The last line counts the
results: "dist_suite: BACKEND=rina WORLD_SIZE=3: 181 tests, 150 passed, 0
failed, 31 skipped". Exit status 0 when nothing failed (and, with
--min-passed N, at least N passed). --failures FILE writes the names of the
failed tests, one per line.
"""
import argparse
import atexit
import json
import os
import re
import shutil
import sys
import tempfile

CPU_EXCLUDE = r"cuda|nccl|gpu|multigpu|profiler|SyncBatchNorm|timeout"

BACKEND = os.environ.setdefault("BACKEND", "rina")
os.environ.setdefault("WORLD_SIZE", "2")
if "TEMP_DIR" not in os.environ:
    # Inherited by the spawned ranks (they import this module again).
    os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="dist-suite-")
    if __name__ == "__main__":
        atexit.register(shutil.rmtree, os.environ["TEMP_DIR"], True)

if __name__ == "__main__":
    if "--as-gloo" in sys.argv[1:]:
        os.environ["DIST_SUITE_AS_GLOO"] = "1"  # the spawned ranks import this module too
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--select", help="run the tests whose names match this regex "
                        "(default: the CPU tests)")
    parser.add_argument("--exclude", default=CPU_EXCLUDE,
                        help="leave out the tests whose names match this regex "
                        "(default: %(default)s)")
    parser.add_argument("--list", action="store_true", help="print the tests chosen and stop")
    parser.add_argument("--failures", help="write the failed tests' names to this file")
    parser.add_argument("--min-passed", type=int, default=0,
                        help="fail unless at least this many tests passed (not skipped)")
    parser.add_argument("--results", help="write every test's outcome (and skip reason) to this "
                        "JSON file")
    parser.add_argument("--start", choices=["spawn", "fork"], default="spawn",
                        help="how each test's ranks start: spawn (as torch's own "
                        "test_distributed_spawn.py; each rank imports torch and the suite "
                        "anew) or fork (from this process, which already has: several "
                        "times faster)")
    parser.add_argument("--as-gloo", action="store_true",
                        help="let the suite's decorators see BACKEND=gloo (so tests gated to "
                        "Gloo by name run) while every call still goes to BACKEND: what rina "
                        "does with the tests gated by name; not a conformance run")
    ARGS = parser.parse_args()
    os.environ["DIST_SUITE_START"] = ARGS.start
    # torch's helpers parse sys.argv when imported.
    sys.argv = sys.argv[:1]

if BACKEND == "rina":
    import rina_torch  # noqa: F401  registers the backend

from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

AS_GLOO = os.environ.get("DIST_SUITE_AS_GLOO") == "1" and BACKEND != "gloo"
if AS_GLOO:
    os.environ["BACKEND"] = "gloo"  # what the suite reads when it is imported

for feature in ("ddp", "subgroup", "plugin"):
    if BACKEND not in ("gloo", "nccl", "ucc", "mpi"):
        DistTestCases.backend_feature[feature].add(BACKEND)

import torch.testing._internal.distributed.distributed_test as suite  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)

if AS_GLOO:
    os.environ["BACKEND"] = BACKEND
    suite.BACKEND = BACKEND  # the calls go to the backend under test


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        if os.environ.get("DIST_SUITE_START") == "fork":
            import torch.multiprocessing
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        else:
            self._spawn_processes()


def chosen_tests(loader, select, exclude):
    names = loader.getTestCaseNames(TestDistBackendWithSpawn)
    if select:
        return [n for n in names if re.search(select, n)]
    return [n for n in names if not re.search(exclude, n)]


def main():
    import unittest

    loader = unittest.TestLoader()
    names = chosen_tests(loader, ARGS.select, ARGS.exclude)
    if ARGS.list:
        print("\n".join(names))
        return 0
    tests = unittest.TestSuite(TestDistBackendWithSpawn(n) for n in names)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(tests)
    failed = [t.id().rsplit(".", 1)[-1] for t, _ in result.failures + result.errors]
    skipped = len(result.skipped)
    passed = result.testsRun - len(failed) - skipped
    if ARGS.failures:
        with open(ARGS.failures, "w") as f:
            f.write("".join(n + "\n" for n in sorted(failed)))
    if ARGS.results:
        outcome = {n: {"outcome": "passed"} for n in names}
        for t, _ in result.failures + result.errors:
            outcome[t.id().rsplit(".", 1)[-1]] = {"outcome": "failed"}
        for t, why in result.skipped:
            outcome[t.id().rsplit(".", 1)[-1]] = {"outcome": "skipped", "reason": why}
        with open(ARGS.results, "w") as f:
            json.dump({"backend": BACKEND, "world_size": int(os.environ["WORLD_SIZE"]),
                       "as_gloo": AS_GLOO, "tests": outcome}, f, indent=1, sort_keys=True)
    gated = " (decorators as for gloo)" if AS_GLOO else ""
    print(f"dist_suite: BACKEND={BACKEND}{gated} WORLD_SIZE={os.environ['WORLD_SIZE']}: "
          f"{result.testsRun} tests, {passed} passed, {len(failed)} failed, {skipped} skipped")
    if failed:
        print("dist_suite: failed: " + " ".join(sorted(failed)))
    if passed < ARGS.min_passed:
        print(f"dist_suite: only {passed} passed, expected at least {ARGS.min_passed}")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
