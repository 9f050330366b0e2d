#!/usr/bin/python3
"""check_node_json.py RINA_TOPO: `rina-topo --json` describes this node as
Python's os module and /sys see it: the CPUs this process may use are among
the node's, loopback is up with 127.0.0.1, and every interface in
/sys/class/net is listed."""
import json
import os
import subprocess
import sys

out = json.loads(subprocess.run([sys.argv[1], "--json"], capture_output=True, text=True,
                                timeout=60, check=True).stdout)
node = out["node"]
assert "topology" not in out, out
assert len(node["cpus"]) == os.cpu_count(), (node["cpus"], os.cpu_count())
assert set(os.sched_getaffinity(0)) <= set(node["cpus"]), node["cpus"]
assert 1 <= node["cores"] <= len(node["cpus"]), node
assert sorted(n["name"] for n in node["nics"]) == sorted(os.listdir("/sys/class/net")), node
lo = [n for n in node["nics"] if n["name"] == "lo"][0]
assert lo["up"] and lo["ipv4"] == "127.0.0.1", lo
print("node json ok:", node["source"], len(node["cpus"]), "cpus")
