"""What the perf/lab drivers share: the repository root, their error type,
size arguments (16M), rina-netlab on a named lab, and the lab's counters
(switches, sockets, qdiscs) and rina-allreduce-perf's INA lines."""

import argparse
import json
import os
import re
import shlex
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Failure(Exception):
    pass


def parse_size(text):
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size '{text}'")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


# The lab's namespaces inherit this machine's TCP congestion control (bbr
# here, where Linux's own default is cubic); the drivers measure with cubic
# unless their --env names RINA_TCP_CONGESTION (empty: the namespace's).
DEFAULT_CONGESTION = "RINA_TCP_CONGESTION=cubic"


def with_default_congestion(env):
    """env (NAME=VALUE settings for the ranks) with DEFAULT_CONGESTION first
    unless it sets RINA_TCP_CONGESTION itself."""
    if any(e.startswith("RINA_TCP_CONGESTION=") for e in env):
        return list(env)
    return [DEFAULT_CONGESTION] + list(env)


def tcp_goodput(mtu):
    """TCP payload per byte of an Ethernet link's rate at this MTU: a segment
    carries MTU - 52 bytes (IPv4 20, TCP 20, timestamps 12) in a frame of MTU
    + 14 (Ethernet header; the shapers count no preamble or gap): 1448 / 1514
    = 0.956 at 1500, 8948 / 9014 = 0.993 at 9000, as measured on shaped veths
    (docs/testing.md)."""
    return (mtu - 52) / (mtu + 14)


def netlab(name, *args, timeout, stderr=False):
    """rina-netlab --name NAME ARGS: its stdout (with stderr=True: stdout and
    stderr); Failure with the command and the output's end if it fails."""
    cmd = [os.path.join(REPO, "tools/rina-netlab"), "--name", name, *args]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        raise Failure(f"{' '.join(shlex.quote(c) for c in cmd)}: exit {run.returncode}\n"
                      f"{run.stdout[-3000:]}{run.stderr[-3000:]}")
    return (run.stdout, run.stderr) if stderr else run.stdout


# ---- what the network did during a run: counters on every side of an INA lab

SWITCH_FIELDS = ("received", "contributions", "duplicate_pending", "duplicate_resent",
                 "socket_drops", "send_errors", "capacity_drops", "injected_drops")


def lab_state(name):
    with open(os.path.join("/run/rina-netlab", name, "state.json")) as f:
        return json.load(f)


def lab_counters(name, build):
    """The lab's counters now: every switch's data-plane STATS (SWITCH_FIELDS,
    and its CPU time), and in every namespace the kernel's UDP receive-buffer
    drops (/proc/net/snmp RcvbufErrors, InErrors) and the drops of every qdisc
    (tc -s: the HTB of each shaped link). Differences of two of these say what
    happened between them."""
    state = lab_state(name)
    out = {f"switch_{k}": 0 for k in SWITCH_FIELDS}
    out.update(switch_cpu_us=0, udp_rcvbuf_errors=0, udp_in_errors=0, qdisc_drops=0,
               qdisc_overlimits=0)
    ctl = os.path.join(build, "p4_agent/rina-switchctl")
    for sw in state.get("switches", []):
        run = subprocess.run(["ip", "netns", "exec", sw["ns"], ctl, sw["ctrl"], "STATS"],
                             capture_output=True, text=True, timeout=10)
        try:
            plane = json.loads(run.stdout)["dataplane"]
        except (ValueError, KeyError):
            continue
        for k in SWITCH_FIELDS:
            out[f"switch_{k}"] += plane.get(k, 0)
        out["switch_cpu_us"] += plane.get("cpu_user_us", 0) + plane.get("cpu_system_us", 0)
    for ns in state["namespaces"]:
        snmp = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
                              capture_output=True, text=True, timeout=10).stdout.splitlines()
        udp = [line.split()[1:] for line in snmp if line.startswith("Udp:")]
        if len(udp) == 2:
            fields = dict(zip(udp[0], udp[1]))
            out["udp_rcvbuf_errors"] += int(fields.get("RcvbufErrors", 0))
            out["udp_in_errors"] += int(fields.get("InErrors", 0))
        tc = subprocess.run(["tc", "-n", ns, "-s", "qdisc", "show"], capture_output=True,
                            text=True, timeout=10).stdout
        for m in re.finditer(r"dropped (\d+), overlimits (\d+)", tc):
            out["qdisc_drops"] += int(m.group(1))
            out["qdisc_overlimits"] += int(m.group(2))
    return out


def counters_delta(before, after):
    return {k: after[k] - before.get(k, 0) for k in after}


INA_SENDS = re.compile(r"# rina INA sends, all ranks: first (\d+) resent (\d+) \(fast (\d+), by "
                       r"timer (\d+)\) late answers (\d+) socket drops (\d+) window cuts (\d+)")
INA_CALLS = re.compile(r"# rina INA, all ranks: switch calls (\d+) retransmissions (\d+) host "
                       r"slices (\d+) fallbacks (\d+)")


def ina_sends(stdout):
    """rina-allreduce-perf's INA lines as a dict (the sends line is missing
    from older builds: then only calls, resends, host slices, fallbacks)."""
    out = {}
    m = INA_CALLS.search(stdout)
    if m:
        out.update(zip(("calls", "resent", "host_slices", "fallbacks"), map(int, m.groups())))
    m = INA_SENDS.search(stdout)
    if m:
        out.update(zip(("first", "resent", "fast", "by_timer", "late_answers", "socket_drops",
                        "window_cuts"), map(int, m.groups())))
    return out
