#!/usr/bin/python3
"""cpu_crowding.py [--busy RATIO]: how crowded this host's CPUs are now.

Spins one thread for 0.2 s of CPU time and prints "cpu_crowding=R", its
wall time over that CPU time: about 1.0 when a core is free, about
(n + 1) / cores while n other threads keep the cores busy (2 busy loops on
2 cores: 1.5). Exit 0 when R is above --busy (default 1.3): other processes
hold the cores, and a rate or a time measured now says as much about them
as about what is measured. Exit 1 otherwise.
"""
import argparse
import sys
import time

SPIN_CPU_S = 0.2


def crowding():
    wall0, cpu0 = time.monotonic(), time.process_time()
    x = 0
    while time.process_time() - cpu0 < SPIN_CPU_S:
        for _ in range(10000):
            x += 1
    return (time.monotonic() - wall0) / (time.process_time() - cpu0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--busy", type=float, default=1.3)
    args = parser.parse_args()
    ratio = crowding()
    print(f"cpu_crowding={ratio:.2f}")
    return 0 if ratio > args.busy else 1


if __name__ == "__main__":
    sys.exit(main())
